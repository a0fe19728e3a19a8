//! Where config files are: the project's `oneshot.toml`, found by looking upward from the
//! workdir, and the user's `config.toml`.

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

/// The user's config file, with the environment passed in: `$XDG_CONFIG_HOME/oneshot/
/// config.toml` (when absolute), else `~/.config/oneshot/config.toml`; `None` without a home.
/// It need not exist.
pub fn user_file(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    crate::store::user_dir(&var, "XDG_CONFIG_HOME", ".config")
        .map(|d| d.join("oneshot").join("config.toml"))
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

    #[test]
    fn the_user_file_follows_xdg() {
        let xdg = |k: &str| match k {
            "XDG_CONFIG_HOME" => Some(OsString::from("/xdg")),
            "HOME" => Some(OsString::from("/home/u")),
            _ => None,
        };
        assert_eq!(
            user_file(xdg),
            Some(PathBuf::from("/xdg/oneshot/config.toml"))
        );
        let home = |k: &str| (k == "HOME").then(|| OsString::from("/home/u"));
        assert_eq!(
            user_file(home),
            Some(PathBuf::from("/home/u/.config/oneshot/config.toml"))
        );
        assert_eq!(user_file(|_| None), None);
    }
}
