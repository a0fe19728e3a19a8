//! A job's workspace: where its agents work, apart from the user's own checkout.
//!
//! A git source gets a worktree of its repository on a branch of its own (the one its spec
//! names, `oneshot/<slug>-<short id>`; `oneshot/<job-id>` for jobs made before that);
//! a plain directory gets a copy made into a private git repository, so that [`harvest`] and
//! [`diff`] work the same for both. [`cleanup`] removes a workspace only when its work cannot
//! be lost. Everything runs the real `git` synchronously: the job runner calls this from a
//! blocking context.
//!
//! Every operation is idempotent, because a runner that crashed halfway will call it again
//! during recovery.

mod cleanup;
mod error;
mod git;
mod land;
mod place;
mod plain;
mod provision;
mod pull_request;
mod remote;
mod remote_job;
#[cfg(test)]
mod tests;
mod uncommitted;

pub use cleanup::{Cleanup, cleanup, cleanup_job};
pub use error::WorkspaceError;
pub use land::{Landing, Rebase};
pub use provision::{provision, provision_job};
pub use remote::{check_remote, default_branch, holds_secret, shown_url};
pub use remote_job::{diff_anywhere, push_branch};
pub use uncommitted::{commit_uncommitted, forget_base, uncommitted};

use super::record::{JobSpec, Workspace};
use git::Git;
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// What a job's source is, as `job create` checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceKind {
    /// Inside a git work tree: the job gets a worktree of the repository.
    Git {
        /// The top of the work tree the source is in.
        root: PathBuf,
    },
    /// A plain directory: the job gets a copy.
    Plain,
}

/// What a harvest found and kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Harvested {
    /// The commit this harvest made, `None` when there was nothing new to commit.
    pub commit: Option<String>,
    /// Hex SHA-256 of the patch from the base to the job's head.
    pub diff_hash: String,
    /// Git's one-line summary (` 2 files changed, 10 insertions(+)`), empty when nothing changed.
    pub diff_stat: String,
    /// The files changed since the base, relative to the repository's top.
    pub files: Vec<String>,
    /// Whether nothing at all changed since the base.
    pub empty: bool,
}

/// Checks a source at `job create`: it exists, is a directory, and is either in a git work
/// tree or plain.
pub fn check_source(spec: &JobSpec) -> Result<SourceKind, WorkspaceError> {
    let path = &spec.source;
    if !path.exists() {
        return Err(WorkspaceError::SourceMissing { path: path.clone() });
    }
    if !path.is_dir() {
        return Err(WorkspaceError::SourceNotDir { path: path.clone() });
    }
    let git = Git::new(path);
    let cmd = git.cmd(&["rev-parse", "--is-inside-work-tree", "--show-toplevel"]);
    let out = cmd.spawn()?;
    if out.code != Some(0) {
        // Not being in a repository is the one failure that is an answer.
        if out.stderr.contains("not a git repository") {
            return Ok(SourceKind::Plain);
        }
        return Err(cmd.failed(&out));
    }
    let mut lines = out.stdout.lines();
    match (lines.next(), lines.next()) {
        (Some("true"), Some(root)) => Ok(SourceKind::Git {
            root: PathBuf::from(root),
        }),
        _ => Err(WorkspaceError::SourceInGitDir { path: path.clone() }),
    }
}

/// Commits everything in the workspace (on the job's branch) and describes the change since
/// the base; for a job whose source is a git remote, then pushes the branch there
/// ([`push_branch`]). Harvesting again with nothing new commits nothing and gives the same
/// hash.
pub fn harvest(
    ws: &Workspace,
    message: &crate::redact::Redacted<String>,
    author: Option<&crate::job::record::Author>,
) -> Result<Harvested, WorkspaceError> {
    let message = message.get().as_str();
    let base = base_of(ws)?;
    let mut git = Git::new(&ws.path);
    // The person who asked for the work is its author; oneshot, which made the commit, is its
    // committer.
    if let Some(a) = author {
        git = git
            .env("GIT_AUTHOR_NAME", &a.name)
            .env("GIT_AUTHOR_EMAIL", &a.email);
    }
    if let Some(branch) = &ws.branch {
        // An agent that switched branches would have this harvest commit onto someone
        // else's branch; refuse rather than guess.
        let head = git.cmd(&["symbolic-ref", "-q", "HEAD"]).spawn()?;
        let found = head.stdout.trim();
        if found != format!("refs/heads/{branch}") {
            return Err(WorkspaceError::OffBranch {
                path: ws.path.clone(),
                branch: branch.clone(),
                found: if found.is_empty() {
                    "a detached HEAD".to_owned()
                } else {
                    found.trim_start_matches("refs/heads/").to_owned()
                },
            });
        }
    }
    git.cmd(&["add", "-A"])
        .hint("the workspace's index may be locked by a running git; wait for it or remove a stale .git/index.lock")
        .run()?;
    let staged = !git.cmd(&["diff", "--cached", "--quiet"]).yes()?;
    let commit = if staged {
        git.cmd(&["commit", "-q", "--no-verify", "-m", message])
            .run()?;
        Some(git.run(&["rev-parse", "HEAD"])?.trim().to_owned())
    } else {
        None
    };
    let patch = patch(&git, &[base, "HEAD"])?;
    let diff_stat = git
        .cmd(&["diff", "--shortstat", base, "HEAD"])
        .run()?
        .trim_end()
        .to_owned();
    let files = git
        .cmd(&["diff", "--name-only", "-z", "--no-renames", base, "HEAD"])
        .run()?
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .collect();
    // Pushed after the commit, and again by a harvest that finds nothing new: a push that
    // failed last time goes through now.
    push_branch(ws)?;
    Ok(Harvested {
        commit,
        diff_hash: hex_sha256(&patch),
        diff_stat,
        files,
        empty: patch.is_empty(),
    })
}

/// The full patch of the job's work: from the base to what is in the workspace now, committed
/// or not, new files included. Leaves the workspace's index untouched.
pub fn diff(ws: &Workspace) -> Result<String, WorkspaceError> {
    let base = base_of(ws)?;
    let git = Git::new(&ws.path);
    // A throwaway index holding the whole work tree lets one `diff --cached` show committed,
    // staged, unstaged and untracked changes alike without touching the agent's index.
    let index_path = git.run(&["rev-parse", "--git-path", "oneshot-diff-index"])?;
    let index = ws.path.join(index_path.trim());
    let index = PathBuf::from(format!("{}.{}", index.display(), std::process::id()));
    let scratch = Git::new(&ws.path).env("GIT_INDEX_FILE", &index);
    let result = (|| {
        scratch.run(&["read-tree", "HEAD"])?;
        scratch.run(&["add", "-A"])?;
        patch(&scratch, &["--cached", base])
    })();
    // Best effort: a leftover scratch index is harmless and is overwritten next time.
    let _ = std::fs::remove_file(&index);
    result
}

/// The patch text git gives for `revs`, in a form that does not depend on configuration.
fn patch(git: &Git, revs: &[&str]) -> Result<String, WorkspaceError> {
    let mut cmd = git.cmd(&[
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--binary",
        "--no-renames",
        "--src-prefix=a/",
        "--dst-prefix=b/",
    ]);
    for rev in revs {
        cmd = cmd.arg(rev);
    }
    cmd.run()
}

fn base_of(ws: &Workspace) -> Result<&str, WorkspaceError> {
    ws.base_commit
        .as_deref()
        .ok_or_else(|| WorkspaceError::NoBase {
            path: ws.path.clone(),
        })
}

fn hex_sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Job ids name a directory and a branch: keep them to characters that are safe in both.
fn check_job_id(id: &str) -> Result<(), WorkspaceError> {
    let ok = !id.is_empty()
        && !id.starts_with(['-', '.'])
        && !id.ends_with(".lock")
        && !id.contains("..")
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(WorkspaceError::BadJobId { id: id.to_owned() })
    }
}
