//! What can go wrong while provisioning, harvesting or cleaning up a workspace. Every message
//! says what was attempted, where, what git said, and what to do about it.

use std::io;
use std::path::PathBuf;

/// Why a workspace operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The job's source directory is not there.
    #[error(
        "the job's source {path} does not exist: create it or give the job an existing directory"
    )]
    SourceMissing {
        /// The source as given in the job's spec.
        path: PathBuf,
    },
    /// The job's source exists but is a file, not a directory.
    #[error("the job's source {path} is not a directory: give the job a directory to work on")]
    SourceNotDir {
        /// The source as given in the job's spec.
        path: PathBuf,
    },
    /// The source is inside a `.git` directory or a bare repository: there is no work tree to
    /// give the job.
    #[error(
        "the job's source {path} is inside a git directory, not a work tree: give the job the repository's working directory"
    )]
    SourceInGitDir {
        /// The source as given in the job's spec.
        path: PathBuf,
    },
    /// The workspace is a worktree, but its source is no longer in a git repository.
    #[error(
        "the job's source {path} is no longer in a git repository, but its workspace is a worktree of one: remove the workspace by hand"
    )]
    SourceNotRepo {
        /// The source as given in the job's spec.
        path: PathBuf,
    },
    /// The job id cannot name a directory and a branch.
    #[error(
        "job id {id:?} cannot name a workspace: use letters, digits, '-', '_' or '.', not starting with '-' or '.'"
    )]
    BadJobId {
        /// The id as given.
        id: String,
    },
    /// `git` could not be started at all.
    #[error("could not run `git` ({source}): install git and make sure it is on PATH")]
    GitMissing {
        /// Why spawning failed.
        #[source]
        source: io::Error,
    },
    /// A git command ran and failed.
    #[error("`git {args}` failed in {dir} ({status}): {stderr}; {hint}")]
    Git {
        /// The command line after `git` (without the fixed `-c` options).
        args: String,
        /// The directory it ran in.
        dir: PathBuf,
        /// How it ended (`exit status: 128`).
        status: String,
        /// What git printed on stderr, trimmed.
        stderr: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// The spec's base revision does not name a commit in the source repository.
    #[error(
        "base {base:?} does not resolve to a commit in {repo}: give a branch, tag or commit that exists there (a repository without commits has no HEAD yet)"
    )]
    BadBase {
        /// The revision as given (`HEAD` when the spec has none).
        base: String,
        /// The repository it was looked up in.
        repo: PathBuf,
    },
    /// The job's branch exists but cannot be this job's workspace.
    #[error("branch {branch} exists but {why}: {fix}")]
    BranchConflict {
        /// The branch (`oneshot/<job-id>`).
        branch: String,
        /// What is wrong with it.
        why: String,
        /// What to do about it.
        fix: String,
    },
    /// The workspace directory exists but is not this job's workspace.
    #[error("{path} exists but is not this job's workspace ({why}): move it away or remove it")]
    PathOccupied {
        /// The directory.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// Something other than a directory stands where the job's workspace, the directory of
    /// workspaces, or a directory inside the workspace should be.
    #[error(
        "{path} is {found} where job {job}'s workspace needs a directory; nothing was removed: \
         remove it or move it away, then run `oneshot job resubmit {job}` and step the job \
         again (`oneshot job step {job}`)"
    )]
    NotADir {
        /// What is in the way.
        path: PathBuf,
        /// The job whose workspace it is in the way of.
        job: String,
        /// What it is: "a file", "a FIFO (named pipe)", …
        found: &'static str,
    },
    /// The worktree is not on the job's branch any more (the agent switched branches), so a
    /// harvest would commit somewhere else.
    #[error(
        "the workspace {path} is on {found}, not on the job's branch {branch}: check out {branch} there (`git switch {branch}`) and harvest again"
    )]
    OffBranch {
        /// The workspace.
        path: PathBuf,
        /// The job's branch.
        branch: String,
        /// What the worktree's HEAD is instead.
        found: String,
    },
    /// The workspace record lacks what the operation needs.
    #[error("the workspace {path} has no base commit recorded: provision it again")]
    NoBase {
        /// The workspace.
        path: PathBuf,
    },
    /// `job land` cannot tell which branch to land on.
    #[error(
        "the job's workspace {path} records no base branch (the source was on a detached HEAD, \
         or the workspace predates `job land`): land it by hand — `git rebase BRANCH` in the \
         workspace, then `git merge --ff-only {branch}` on BRANCH"
    )]
    NoBaseBranch {
        /// The workspace.
        path: PathBuf,
        /// The job's branch.
        branch: String,
    },
    /// The job's workspace has changes that are not committed, or a rebase in progress.
    #[error(
        "the job's workspace {path} is not ready to land: {why}; {fix}, then `oneshot job land` \
         again"
    )]
    NotReady {
        /// The workspace's work tree.
        path: PathBuf,
        /// What is in the way.
        why: String,
        /// What to do.
        fix: String,
    },
    /// The base branch is checked out in a work tree with uncommitted changes: fast-forwarding
    /// it there could clobber them.
    #[error(
        "{branch} is checked out in {path}, which has uncommitted changes ({files}): commit or \
         stash them there, then `oneshot job land` again; nothing was landed"
    )]
    BaseDirty {
        /// The work tree.
        path: PathBuf,
        /// The base branch.
        branch: String,
        /// Some of the changed files.
        files: String,
    },
    /// The job's remote does not answer (or lacks the branch asked for).
    #[error("the job's remote {url} cannot be used: {why}; {fix}")]
    RemoteUnreachable {
        /// The remote's URL or path, its password masked.
        url: String,
        /// What git said, or what is missing.
        why: String,
        /// What to do.
        fix: String,
    },
    /// A push to the job's remote was refused: a job branch moved there since this machine
    /// last fetched it (another runner pushed: this one's work is stale), or the base branch
    /// moved on (not a fast-forward). Nothing was pushed.
    #[error(
        "the job's remote {url} refused the push ({refused}): the branch moved there since this machine last fetched it — another runner pushed newer work, or the base branch moved on; nothing was pushed"
    )]
    PushRefused {
        /// The remote's URL or path, its password masked.
        url: String,
        /// Git's words for each refused ref.
        refused: String,
    },
    /// The job's work is on another machine and its source is no remote this one can fetch.
    #[error(
        "the job's workspace {path} is not on this machine: run this on the machine whose runner provisioned it (a job whose source is a git remote, `job create --remote`, is read from the remote where that suffices)"
    )]
    Elsewhere {
        /// The workspace, as recorded.
        path: PathBuf,
    },
    /// The job's branch is not on its remote (no harvest pushed it yet).
    #[error(
        "the job's branch {branch} is not on its remote {url} yet: no harvest has pushed it; step the job first"
    )]
    NotPushed {
        /// The job's branch.
        branch: String,
        /// The remote, its password masked.
        url: String,
    },
    /// A file operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done (`copying`, `creating`).
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl WorkspaceError {
    /// Whether this is git losing a race against a concurrent git command on the same
    /// repository: one of its lock files (`index.lock`, `config.lock`, a ref's lock) held, or
    /// another worktree's admin files (`.git/worktrees/<name>/`) caught half-written. Worth a
    /// retry, unlike every other failure.
    pub fn is_contention(&self) -> bool {
        match self {
            WorkspaceError::Git { stderr, .. } => {
                let s = stderr.to_ascii_lowercase();
                let lock = s.contains(".lock")
                    && (s.contains("file exists")
                        || s.contains("unable to create")
                        || s.contains("could not lock")
                        || s.contains("cannot lock")
                        || s.contains("unable to lock"));
                // Seen: `failed to read .git/worktrees/<other>/commondir`, and `could not open
                // .git/worktrees/<own>/locked` when a prune ran in between.
                let half_made = s.contains("worktrees/");
                lock || half_made
            }
            _ => false,
        }
    }

    pub(super) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        WorkspaceError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
