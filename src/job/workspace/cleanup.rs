//! Removing a job's workspace, only ever when its work cannot be lost.

use super::git::Git;
use super::plain::make_writable;
use super::provision::base_ref;
use super::{JobSpec, SourceKind, Workspace, WorkspaceError, check_source};
use std::path::Path;

/// What [`cleanup`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cleanup {
    /// The workspace directory is gone.
    Removed {
        /// What was kept anyway (a branch with commits found nowhere else) and how to get rid
        /// of it; `None` when nothing of the job is left.
        note: Option<String>,
    },
    /// Nothing was removed.
    Kept {
        /// Why: what would be lost, and what to do.
        reason: String,
    },
}

/// Removes the workspace when its work cannot be lost: the job's branch is reachable from
/// the source's `HEAD` or another branch, tag or remote ref (merged or pushed), or it has no
/// commit beyond the base, and nothing in the worktree is uncommitted. With `discard` the
/// workspace goes regardless, but a branch holding commits found nowhere else is still kept.
/// A plain directory's copy is the only place its work exists: it goes only with `discard`.
pub fn cleanup(spec: &JobSpec, ws: &Workspace, discard: bool) -> Result<Cleanup, WorkspaceError> {
    cleanup_job(spec, ws, discard, false)
}

/// [`cleanup`] of a job that may have landed (`job land`): a plain directory's copy whose
/// work was copied back into the source loses nothing either. (A landed git job's branch is
/// merged into its base, or pushed, which [`cleanup`] finds on its own.)
pub fn cleanup_job(
    spec: &JobSpec,
    ws: &Workspace,
    discard: bool,
    landed: bool,
) -> Result<Cleanup, WorkspaceError> {
    match &ws.branch {
        None => cleanup_plain(ws, discard || landed),
        Some(branch) => cleanup_git(spec, ws, branch, discard),
    }
}

fn cleanup_plain(ws: &Workspace, discard: bool) -> Result<Cleanup, WorkspaceError> {
    if !discard {
        return Ok(Cleanup::Kept {
            reason: "plain directory: its work is only here; discard it explicitly".to_owned(),
        });
    }
    if ws.path.exists() {
        make_writable(&ws.path);
        std::fs::remove_dir_all(&ws.path)
            .map_err(|e| WorkspaceError::io("removing", &ws.path, e))?;
    }
    Ok(Cleanup::Removed { note: None })
}

fn cleanup_git(
    spec: &JobSpec,
    ws: &Workspace,
    branch: &str,
    discard: bool,
) -> Result<Cleanup, WorkspaceError> {
    let (repo, depth) = if spec.remote.is_some() {
        // A remote's job: its worktree is one of this machine's mirror, found from it.
        let mirror = match ws.path.is_dir() {
            true => super::remote::Mirror::of(&ws.path)?,
            false => None,
        };
        let Some(mirror) = mirror else {
            return Err(WorkspaceError::Elsewhere {
                path: ws.path.clone(),
            });
        };
        (
            mirror.dir,
            super::remote::prefix_of(spec).components().count(),
        )
    } else {
        let SourceKind::Git { root: repo } = check_source(spec)? else {
            return Err(WorkspaceError::SourceNotRepo {
                path: spec.source.clone(),
            });
        };
        // The workspace path is the source's subdirectory inside the worktree; walk back up.
        let prefix = Git::new(&spec.source).run(&["rev-parse", "--show-prefix"])?;
        (repo, Path::new(prefix.trim()).components().count())
    };
    let git = Git::new(&repo);
    let wt = ws
        .path
        .ancestors()
        .nth(depth)
        .unwrap_or(&ws.path)
        .to_owned();
    let wt_exists = wt.exists();
    if wt_exists && !discard {
        let status = Git::new(&wt).run(&[
            "status",
            "--porcelain",
            "-z",
            "--no-renames",
            "--untracked-files=all",
        ])?;
        let files: Vec<&str> = status
            .split('\0')
            .filter(|f| f.len() > 3)
            .map(|f| &f[3..])
            .collect();
        if !files.is_empty() {
            return Ok(Cleanup::Kept {
                reason: format!(
                    "uncommitted changes in {}: {}; harvest them, or discard the workspace",
                    wt.display(),
                    name_some(&files)
                ),
            });
        }
    }
    let branch_ref = format!("refs/heads/{branch}");
    let head = git
        .cmd(&["rev-parse", "--verify", "--quiet", &branch_ref])
        .spawn()?;
    let head = (head.code == Some(0)).then(|| head.stdout.trim().to_owned());
    let unsaved = match &head {
        Some(head) => unsaved_commits(&git, head, &branch_ref, ws.base_commit.as_deref())?,
        None => 0,
    };
    if unsaved > 0 && !discard {
        return Ok(Cleanup::Kept {
            reason: format!(
                "branch {branch} has {unsaved} commit(s) not merged into HEAD or any other branch, tag or remote; merge or push it, or discard the workspace (the branch is kept even then)"
            ),
        });
    }
    if wt_exists {
        git.cmd(&["worktree", "remove", "--force"])
            .arg(&wt)
            .hint("remove the directory by hand, then run `git worktree prune` in the source")
            .run()?;
    } else {
        // Only a worktree whose directory is already gone leaves a registration to prune;
        // pruning needlessly could race another job's worktree being added.
        git.run(&["worktree", "prune"])?;
    }
    if unsaved > 0 {
        return Ok(Cleanup::Removed {
            note: Some(format!(
                "branch {branch} kept: its {unsaved} commit(s) exist nowhere else; delete it with `git branch -D {branch}` once they are not needed"
            )),
        });
    }
    if head.is_some() {
        git.cmd(&["branch", "-D", "--", branch]).run()?;
    }
    // The worktree's directory is named for the job (`<root>/<job-id>/<job-id>`); the branch
    // need not be, since branches are named for their task.
    if let Some(job_id) = wt.file_name().and_then(|n| n.to_str()) {
        git.cmd(&["update-ref", "-d", &base_ref(job_id)]).run()?;
    }
    Ok(Cleanup::Removed { note: None })
}

/// How many commits of the job's branch exist nowhere else: not in its base, the source's
/// `HEAD`, another branch, a tag or a remote ref.
fn unsaved_commits(
    git: &Git,
    head: &str,
    branch_ref: &str,
    base: Option<&str>,
) -> Result<usize, WorkspaceError> {
    let mut cmd = git.cmd(&["rev-list", "--count", head, "--not"]);
    if let Some(base) = base {
        cmd = cmd.arg(base);
    }
    // The source's HEAD counts unless it is the job's branch itself, or unborn (a remote's
    // mirror has no branch of its own checked out).
    let current = git.cmd(&["symbolic-ref", "-q", "HEAD"]).spawn()?;
    let born = git
        .cmd(&["rev-parse", "--verify", "--quiet", "HEAD"])
        .spawn()?
        .code
        == Some(0);
    if born && current.stdout.trim() != branch_ref {
        cmd = cmd.arg("HEAD");
    }
    // `--branches` matches its exclusions against names without `refs/heads/`.
    let branch = branch_ref.trim_start_matches("refs/heads/");
    let out = cmd
        .arg(format!("--exclude={branch}"))
        .arg("--branches")
        .arg("--tags")
        .arg("--remotes")
        .run()?;
    Ok(out.trim().parse().unwrap_or(usize::MAX))
}

/// The first few names of a list, and how many more there are.
fn name_some(files: &[&str]) -> String {
    const SHOWN: usize = 5;
    let mut s = files[..files.len().min(SHOWN)].join(", ");
    if files.len() > SHOWN {
        s.push_str(&format!(" and {} more", files.len() - SHOWN));
    }
    s
}
