//! Provisioning from a plain directory: a copy of the tree made into a private git
//! repository whose first commit is the baseline, so a harvest and a diff work exactly as they
//! do on a worktree.

use super::git::Git;
use super::place::in_the_way;
use super::{JobSpec, Workspace, WorkspaceError};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Copies the source to `<root>/<job-id>` and commits it there as the baseline; an existing
/// copy is reused as it is.
pub(super) fn provision(
    job_id: &str,
    spec: &JobSpec,
    root: &Path,
) -> Result<Workspace, WorkspaceError> {
    let dest = root.join(job_id);
    if let Some(e) = in_the_way(&dest, job_id) {
        return Err(e);
    }
    if dest.exists() {
        return reuse(&dest);
    }
    // The copy is built aside and renamed into place only once committed, so a directory at
    // `dest` is always a finished one, and a crash leaves only a staging dir to start over.
    let staging = root.join(format!(".{job_id}.partial"));
    if let Some(e) = in_the_way(&staging, job_id) {
        return Err(e);
    }
    if staging.exists() {
        make_writable(&staging);
        fs::remove_dir_all(&staging).map_err(|e| WorkspaceError::io("removing", &staging, e))?;
    }
    let source = spec
        .source
        .canonicalize()
        .map_err(|e| WorkspaceError::io("resolving", &spec.source, e))?;
    copy_tree(&source, &staging, root)?;
    // The copy's top must stay writable whatever the source's mode: git writes `.git` there.
    let mode = fs::metadata(&staging)
        .map_err(|e| WorkspaceError::io("reading", &staging, e))?
        .permissions()
        .mode();
    fs::set_permissions(&staging, fs::Permissions::from_mode(mode | 0o700))
        .map_err(|e| WorkspaceError::io("setting permissions of", &staging, e))?;
    let git = Git::new(&staging);
    git.run(&["init", "-q", "--initial-branch=main"])?;
    git.run(&["add", "-A"])?;
    let message = format!("oneshot: baseline copy of {}", source.display());
    git.run(&[
        "commit",
        "-q",
        "--allow-empty",
        "--no-verify",
        "-m",
        &message,
    ])?;
    fs::rename(&staging, &dest).map_err(|e| WorkspaceError::io("renaming", &staging, e))?;
    reuse(&dest)
}

/// The workspace a finished copy at `dest` is: its own repository, based on its first commit.
fn reuse(dest: &Path) -> Result<Workspace, WorkspaceError> {
    let git = Git::new(dest);
    let top = git.cmd(&["rev-parse", "--show-toplevel"]).spawn()?;
    let ours = top.code == Some(0)
        && Path::new(top.stdout.trim()).canonicalize().ok() == dest.canonicalize().ok();
    if !ours {
        return Err(WorkspaceError::PathOccupied {
            path: dest.to_owned(),
            why: "not a git repository of its own".to_owned(),
        });
    }
    // The baseline is the root commit: the copy's history starts there, whatever the agents
    // committed since.
    let roots = git.run(&["rev-list", "--max-parents=0", "HEAD"])?;
    let base = roots.lines().last().unwrap_or_default().trim().to_owned();
    Ok(Workspace {
        path: dest.to_owned(),
        branch: None,
        base_commit: Some(base),
        base_branch: None,
    })
}

/// Copies the tree at `from` to a new directory `to`, keeping symlinks as symlinks and file
/// modes, skipping `.oneshot` directories (oneshot's own state) and `skip` (the workspace
/// root, should it lie inside the source: copying it into itself would never end).
fn copy_tree(from: &Path, to: &Path, skip: &Path) -> Result<(), WorkspaceError> {
    fs::create_dir(to).map_err(|e| WorkspaceError::io("creating", to, e))?;
    let entries = fs::read_dir(from).map_err(|e| WorkspaceError::io("reading", from, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| WorkspaceError::io("reading", from, e))?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|e| WorkspaceError::io("reading", &src, e))?;
        if kind.is_symlink() {
            let target = fs::read_link(&src).map_err(|e| WorkspaceError::io("reading", &src, e))?;
            std::os::unix::fs::symlink(&target, &dst)
                .map_err(|e| WorkspaceError::io("creating symlink", &dst, e))?;
        } else if kind.is_dir() {
            if entry.file_name() == ".oneshot" || src == skip {
                continue;
            }
            copy_tree(&src, &dst, skip)?;
        } else if kind.is_file() {
            // `fs::copy` carries the permission bits along.
            fs::copy(&src, &dst).map_err(|e| WorkspaceError::io("copying", &src, e))?;
        }
        // Sockets, fifos and devices have no content to copy and git cannot track them.
    }
    // Set last, so that a read-only directory could still be filled.
    let perms = fs::metadata(from)
        .map_err(|e| WorkspaceError::io("reading", from, e))?
        .permissions();
    fs::set_permissions(to, perms).map_err(|e| WorkspaceError::io("setting permissions of", to, e))
}

/// Gives the owner write access to every directory below `dir`, so that a copy holding
/// read-only directories can be removed. Best effort: removal reports what still fails.
pub(super) fn make_writable(dir: &Path) {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = fs::set_permissions(
        dir,
        fs::Permissions::from_mode(meta.permissions().mode() | 0o700),
    );
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            make_writable(&entry.path());
        }
    }
}
