//! A git source's uncommitted changes, which a job branching from `HEAD` would leave out:
//! finding them (so `job create` can refuse to drop them silently) and, when asked, keeping
//! them in a commit of their own on top of `HEAD` that the job starts from — made without
//! touching the user's branch, index or working tree.

use super::git::Git;
use super::provision::base_ref;
use super::{WorkspaceError, check_job_id};
use std::path::{Path, PathBuf};

/// The files with uncommitted changes in the repository whose work tree holds `repo` (its
/// top, as [`super::SourceKind::Git`] names it): tracked edits, staged changes and untracked
/// files that are not ignored, relative to the top, in git's order. Empty when clean.
pub fn uncommitted(repo: &Path) -> Result<Vec<String>, WorkspaceError> {
    let status = with_user_excludes(Git::new(repo), repo).run(&[
        // `status` would otherwise refresh the user's index in passing: leave it alone.
        "--no-optional-locks",
        "status",
        "--porcelain",
        "-z",
        "--no-renames",
        "--untracked-files=all",
    ])?;
    Ok(status
        .split('\0')
        .filter(|f| f.len() > 3)
        .map(|f| f[3..].to_owned())
        .collect())
}

/// Commits the work tree of `repo` as it is — tracked edits, staged changes, untracked files
/// that are not ignored — on top of `HEAD` (or as a root commit when `HEAD` has none yet), and
/// keeps the commit under `refs/oneshot/base/<job_id>`, so nothing collects it before the
/// job's step branches from it; `job cleanup` deletes that ref with the workspace. The user's
/// branch, index and files stay as they were: the commit is built in a throwaway index.
/// Returns the commit's id.
pub fn commit_uncommitted(job_id: &str, repo: &Path) -> Result<String, WorkspaceError> {
    check_job_id(job_id)?;
    let git = Git::new(repo);
    let index = scratch_index(&git, repo, "oneshot-base-index")?;
    let scratch = with_user_excludes(Git::new(repo), repo).env("GIT_INDEX_FILE", &index);
    let head = git
        .cmd(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .spawn()?;
    let head = (head.code == Some(0)).then(|| head.stdout.trim().to_owned());
    let result = (|| {
        if let Some(head) = &head {
            scratch.run(&["read-tree", head])?;
        }
        scratch
            .cmd(&["add", "-A"])
            .hint("a file of the source could not be read; fix its permissions, or leave the changes out with --from-head")
            .run()?;
        let tree = scratch.run(&["write-tree"])?;
        let message = format!(
            "oneshot: the uncommitted changes in {} for {job_id}",
            repo.display()
        );
        let mut commit = git.cmd(&["commit-tree", tree.trim(), "-m", &message]);
        if let Some(head) = &head {
            commit = commit.arg("-p").arg(head);
        }
        let commit = commit.run()?.trim().to_owned();
        git.cmd(&["update-ref", &base_ref(job_id), &commit]).run()?;
        Ok(commit)
    })();
    // Best effort: a leftover scratch index is harmless and is overwritten next time.
    let _ = std::fs::remove_file(&index);
    result
}

/// Deletes `refs/oneshot/base/<job_id>` in `repo`, if it is there: for a job that ends
/// without a workspace (canceled before a step) whose base [`commit_uncommitted`] made.
pub fn forget_base(job_id: &str, repo: &Path) -> Result<(), WorkspaceError> {
    check_job_id(job_id)?;
    Git::new(repo)
        .cmd(&["update-ref", "-d", &base_ref(job_id)])
        .run()
        .map(drop)
}

/// A private index file path in the repository's git directory, unique to this process.
fn scratch_index(git: &Git, repo: &Path, name: &str) -> Result<PathBuf, WorkspaceError> {
    let path = git.run(&["rev-parse", "--git-path", name])?;
    let path = repo.join(path.trim());
    Ok(PathBuf::from(format!(
        "{}.{}",
        path.display(),
        std::process::id()
    )))
}

/// `git` with the user's own `core.excludesFile`: oneshot's git ignores the user's global
/// configuration, but which files count as changes must be what the user's `git status` says.
fn with_user_excludes(git: Git, repo: &Path) -> Git {
    let out = std::process::Command::new("git")
        .args(["config", "--path", "--get", "core.excludesFile"])
        .current_dir(repo)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let file = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            if file.is_empty() {
                git
            } else {
                git.prefix(["-c".to_owned(), format!("core.excludesFile={file}")])
            }
        }
        _ => git,
    }
}
