//! Where a job's workspace goes, and what may be in its way: a file (or a FIFO, a dangling
//! link) where the workspace, its root or a directory inside it should be. Such a thing is not
//! oneshot's to remove, so it is reported naming the path and the job, with what to do.

use super::WorkspaceError;
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// What is at `path` when something other than a directory is (following symbolic links);
/// `None` for a directory, or for nothing at all.
pub(super) fn not_a_dir(path: &Path) -> Option<&'static str> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => None,
        Ok(m) => {
            let kind = m.file_type();
            Some(if kind.is_file() {
                "a file"
            } else if kind.is_fifo() {
                "a FIFO (named pipe)"
            } else if kind.is_socket() {
                "a socket"
            } else {
                "a device"
            })
        }
        Err(_) => fs::symlink_metadata(path)
            .ok()
            .map(|_| "a symbolic link to nothing"),
    }
}

/// The error when `path` is in the way of job `job`'s workspace (see [`not_a_dir`]).
pub(super) fn in_the_way(path: &Path, job: &str) -> Option<WorkspaceError> {
    not_a_dir(path).map(|found| WorkspaceError::NotADir {
        path: path.to_owned(),
        job: job.to_owned(),
        found,
    })
}

/// Makes the directory `dir` and its missing parents for job `job`: when something other than
/// a directory stands where one of them should be, the error names it.
pub(super) fn make_dirs(dir: &Path, job: &str) -> Result<(), WorkspaceError> {
    fs::create_dir_all(dir).map_err(|e| {
        // The outermost one in the way is what the user has to move (below it, nothing is).
        dir.ancestors()
            .filter_map(|a| in_the_way(a, job))
            .last()
            .unwrap_or_else(|| WorkspaceError::io("creating", dir, e))
    })
}

/// Makes `root` for job `job` and returns it absolute and canonical, so paths compare equal to
/// what git reports.
pub(super) fn make_root(root: &Path, job: &str) -> Result<PathBuf, WorkspaceError> {
    make_dirs(root, job)?;
    root.canonicalize()
        .map_err(|e| WorkspaceError::io("resolving", root, e))
}
