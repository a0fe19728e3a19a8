//! Provisioning a job's workspace from a git source: a worktree on the job's branch (the one
//! its spec names, else `oneshot/<job-id>`), made or found again, robust against a crash halfway and against other
//! jobs provisioning on the same repository at the same time.

use super::git::Git;
use super::place::{in_the_way, make_dirs, make_root};
use super::plain;
use super::{JobSpec, SourceKind, Workspace, WorkspaceError, check_job_id, check_source};
use crate::job::record::Job;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How often a provision that lost a race for one of git's lock files is tried in all.
const ATTEMPTS: u32 = 8;

/// Makes the workspace of job `job_id` at `<root>/<job-id>` (the caller's `root` is the state
/// dir's `worktrees/`): a worktree of the source's repository on the job's branch
/// ([`JobSpec::branch_of`]) starting at the spec's base (default `HEAD`), or, for a plain
/// directory, a copy made into a private repository. Calling it again returns the same workspace: a worktree already there
/// is reused, and one that was deleted or pruned is added again for the existing branch.
pub fn provision(job_id: &str, spec: &JobSpec, root: &Path) -> Result<Workspace, WorkspaceError> {
    if let Some(url) = &spec.remote {
        // `root` is the state dir's `worktrees/`; the mirrors are beside it.
        let state_dir = root.parent().unwrap_or(root);
        return super::remote_job::provision(job_id, spec, url, state_dir, None);
    }
    check_job_id(job_id)?;
    let kind = check_source(spec)?;
    let root = make_root(root, job_id)?;
    match kind {
        SourceKind::Plain => plain::provision(job_id, spec, &root),
        SourceKind::Git { root: repo } => {
            let mut attempt = 0;
            loop {
                match provision_git(job_id, spec, &repo, &root) {
                    // Concurrent worktree adds on one repository contend for git's lock files
                    // and trip over each other's half-made admin dirs; the loser fails
                    // outright rather than waiting, so wait for it. Every
                    // attempt starts by looking at what the last one left, so a branch made
                    // before the failure is picked up, not made twice.
                    Err(e) if e.is_contention() && attempt + 1 < ATTEMPTS => {
                        attempt += 1;
                        std::thread::sleep(backoff(attempt));
                    }
                    result => return result,
                }
            }
        }
    }
}

/// Makes (or finds again) `job`'s workspace under `state_dir` (its `worktrees/`, and for a
/// job whose source is a git remote its `mirrors/`): [`provision`], with a remote-sourced job's
/// base taken from its workspace record when an earlier step (on any machine) recorded one, so
/// every machine works from the same base.
pub fn provision_job(job: &Job, state_dir: &Path) -> Result<Workspace, WorkspaceError> {
    match &job.spec.remote {
        Some(url) => super::remote_job::provision(
            &job.id,
            &job.spec,
            url,
            state_dir,
            job.workspace
                .as_ref()
                .and_then(|w| w.base_commit.as_deref()),
        ),
        None => provision(&job.id, &job.spec, &state_dir.join("worktrees")),
    }
}

/// A growing pause with some jitter, so that racing threads do not collide again in step.
pub(super) fn backoff(attempt: u32) -> Duration {
    let jitter = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() % 40)
        .unwrap_or(0);
    Duration::from_millis(20 * u64::from(attempt) + u64::from(jitter))
}

fn provision_git(
    job_id: &str,
    spec: &JobSpec,
    repo: &Path,
    root: &Path,
) -> Result<Workspace, WorkspaceError> {
    let git = Git::new(repo);
    // A source below the repository's top works in the same place inside the worktree.
    let prefix = Git::new(&spec.source).run(&["rev-parse", "--show-prefix"])?;
    let prefix = prefix.trim();
    let branch = spec.branch_of(job_id);
    let wt = root.join(job_id);
    let base_name = spec.base.as_deref().unwrap_or("HEAD");
    let base_sha = resolve(&git, base_name)?.ok_or_else(|| WorkspaceError::BadBase {
        base: base_name.to_owned(),
        repo: repo.to_owned(),
    })?;
    let base_commit = check_out(&git, job_id, &branch, &base_sha, &base_sha, &wt)?;
    let path = wt.join(prefix);
    // The subdirectory may exist only untracked in the source: give the agents the place.
    make_dirs(&path, job_id)?;
    Ok(Workspace {
        path,
        branch: Some(branch),
        base_commit: Some(base_commit),
        base_branch: base_branch(&git, spec.base.as_deref())?,
    })
}

/// Checks job `job_id`'s `branch` out at `wt` as a worktree of `git`'s repository: the branch
/// made at `start` (recording `base_sha`, where it started from, in the job's base ref) when
/// it does not exist yet; else found again — the worktree reused, or added again when it was
/// deleted or pruned. Returns the job's base commit: the recorded one for an existing branch.
pub(super) fn check_out(
    git: &Git,
    job_id: &str,
    branch: &str,
    base_sha: &str,
    start: &str,
    wt: &Path,
) -> Result<String, WorkspaceError> {
    let branch_ref = format!("refs/heads/{branch}");
    let base_ref = base_ref(job_id);
    Ok(match resolve(git, &branch_ref)? {
        None => {
            vacate(wt, job_id)?;
            // The base is recorded in a ref of its own before the branch exists, so a later
            // recovery knows where the branch started even after `HEAD` has moved on.
            git.cmd(&["update-ref", &base_ref, base_sha]).run()?;
            git.cmd(&["worktree", "add", "-q", "-b", branch])
                .arg(wt)
                .arg(start)
                .run()?;
            base_sha.to_owned()
        }
        Some(head) => {
            let base = recorded_base(git, branch, &base_ref, base_sha, &head)?;
            match worktree_of(git, &branch_ref)? {
                Some(path) if same_path(&path, wt) => {}
                Some(path) if path.exists() => {
                    return Err(WorkspaceError::BranchConflict {
                        branch: branch.to_owned(),
                        why: format!("is checked out in another worktree, {}", path.display()),
                        fix: format!(
                            "remove that worktree (`git worktree remove {}`) if it is stale, or give the job another id",
                            path.display()
                        ),
                    });
                }
                registered => {
                    // The branch outlived its worktree: forget a dead registration and check
                    // the branch out again where the job expects it. Prune only when there is
                    // one, because a prune can remove the admin dir of a worktree another
                    // thread is just adding.
                    if registered.is_some() {
                        git.run(&["worktree", "prune"])?;
                    }
                    vacate(wt, job_id)?;
                    git.cmd(&["worktree", "add", "-q"])
                        .arg(wt)
                        .arg(branch)
                        .run()?;
                }
            }
            base
        }
    })
}

/// The branch `job land` puts the work on: the spec's base when it names a local branch,
/// else the branch the source has checked out (the job started from its `HEAD`, or from a
/// commit of its uncommitted changes on top of it); `None` on a detached `HEAD`.
pub(super) fn base_branch(git: &Git, base: Option<&str>) -> Result<Option<String>, WorkspaceError> {
    if let Some(base) = base.filter(|b| *b != "HEAD") {
        let named = git
            .cmd(&["rev-parse", "--verify", "--quiet", "--end-of-options"])
            .arg(format!("refs/heads/{base}"))
            .spawn()?;
        if named.code == Some(0) {
            return Ok(Some(base.to_owned()));
        }
    }
    let head = git
        .cmd(&["symbolic-ref", "-q", "--short", "HEAD"])
        .spawn()?;
    Ok((head.code == Some(0)).then(|| head.stdout.trim().to_owned()))
}

/// The ref that remembers where job `job_id`'s branch started.
pub(super) fn base_ref(job_id: &str) -> String {
    format!("refs/oneshot/base/{job_id}")
}

/// Where an existing job branch started: the recorded base, else the requested one; either
/// way the branch must descend from it, or it is not this job's branch.
fn recorded_base(
    git: &Git,
    branch: &str,
    base_ref: &str,
    requested: &str,
    head: &str,
) -> Result<String, WorkspaceError> {
    let base = resolve(git, base_ref)?.unwrap_or_else(|| requested.to_owned());
    if git
        .cmd(&["merge-base", "--is-ancestor", &base, head])
        .yes()?
    {
        Ok(base)
    } else {
        Err(WorkspaceError::BranchConflict {
            branch: branch.to_owned(),
            why: format!("points elsewhere: {head} does not descend from the job's base {base}"),
            fix: format!(
                "delete the branch (`git branch -D {branch}`) if it is stale, or give the job another id"
            ),
        })
    }
}

/// The commit `rev` names, or `None` when it names none.
pub(super) fn resolve(git: &Git, rev: &str) -> Result<Option<String>, WorkspaceError> {
    let out = git
        .cmd(&["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{rev}^{{commit}}"))
        .spawn()?;
    Ok(match out.code {
        Some(0) => Some(out.stdout.trim().to_owned()),
        _ => None,
    })
}

/// The path of the worktree that has `branch_ref` checked out, if any does.
pub(super) fn worktree_of(git: &Git, branch_ref: &str) -> Result<Option<PathBuf>, WorkspaceError> {
    let list = git.run(&["worktree", "list", "--porcelain", "-z"])?;
    let mut path = None;
    for field in list.split('\0') {
        if let Some(p) = field.strip_prefix("worktree ") {
            path = Some(PathBuf::from(p));
        } else if field.strip_prefix("branch ") == Some(branch_ref) {
            return Ok(path);
        }
    }
    Ok(None)
}

fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Makes room for job `job`'s worktree at `wt`: nothing there, or an empty directory a failed
/// attempt left; anything else is not ours to remove.
fn vacate(wt: &Path, job: &str) -> Result<(), WorkspaceError> {
    if let Some(e) = in_the_way(wt, job) {
        return Err(e);
    }
    let Ok(mut entries) = std::fs::read_dir(wt) else {
        return Ok(());
    };
    if entries.next().is_some() {
        return Err(WorkspaceError::PathOccupied {
            path: wt.to_owned(),
            why: "a non-empty directory that is not a worktree on the job's branch".to_owned(),
        });
    }
    std::fs::remove_dir(wt).map_err(|e| WorkspaceError::io("removing", wt, e))
}
