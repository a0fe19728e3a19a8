//! Where things are, for every module that asks: the project a directory belongs to (its
//! `oneshot.toml`, else its git work tree) and a per-user XDG directory. Config, the state
//! directory, the trust store and the confinement all find their places here, so none of them
//! asks another.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The project config file's name.
pub const PROJECT_FILE: &str = "oneshot.toml";

/// The nearest `oneshot.toml` in `start` or any directory above it, up to the filesystem root.
pub fn find_project_file(start: &Path) -> Option<PathBuf> {
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    start
        .ancestors()
        .map(|d| d.join(PROJECT_FILE))
        .find(|f| f.is_file())
}

/// The project `start` belongs to (canonical): the nearest directory holding `oneshot.toml`,
/// else the nearest holding `.git`, else `start` itself. Sessions of one project share a
/// state directory, so every command run anywhere inside it finds them.
pub fn project_root(start: &Path) -> PathBuf {
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    if let Some(file) = find_project_file(&start)
        && let Some(dir) = file.parent()
    {
        return dir.to_path_buf();
    }
    git_root(&start).unwrap_or(start)
}

/// The nearest directory at or above `dir` holding `.git` (a work tree's top, as far as the
/// files tell, without starting git). The one test of "inside a repository" for the project
/// root, the state directory's `.gitignore` and the snapshot's git probe.
pub(crate) fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// A per-user base directory, with the environment passed in (so it can be tested without
/// touching the process's): `$XDG_VAR` when absolute (the XDG spec ignores relative values),
/// else `$HOME/home_fallback`; `None` without either.
pub(crate) fn user_dir(
    var: &impl Fn(&str) -> Option<OsString>,
    xdg_var: &str,
    home_fallback: &str,
) -> Option<PathBuf> {
    let set = |key: &str| var(key).filter(|v| !v.is_empty()).map(PathBuf::from);
    set(xdg_var)
        .filter(|p| p.is_absolute())
        .or_else(|| set("HOME").map(|h| h.join(home_fallback)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_file_wins_and_marks_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        let repo = top.join("repo");
        let sub = repo.join("crates/a");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&sub).unwrap();
        // No file: the git root is the project.
        assert_eq!(find_project_file(&sub), None);
        assert_eq!(project_root(&sub), repo);
        // A file above the git root still marks the project (the search goes to the root).
        std::fs::write(top.join(PROJECT_FILE), "").unwrap();
        assert_eq!(find_project_file(&sub), Some(top.join(PROJECT_FILE)));
        assert_eq!(project_root(&sub), top);
        // The nearest file wins.
        std::fs::write(repo.join("crates").join(PROJECT_FILE), "").unwrap();
        assert_eq!(project_root(&sub), repo.join("crates"));
    }
}
