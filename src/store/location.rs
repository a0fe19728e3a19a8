//! Where sessions are stored by default: outside any workdir, so an agent — which can write in
//! its workdir — cannot reach its own state. One directory per project and user:
//! `$XDG_STATE_HOME/oneshot/projects/<name>-<hash>` (else `~/.local/state/…`), where the project
//! is [`crate::paths::project_root`] (the nearest directory above holding `oneshot.toml`, else
//! `.git`, else the directory itself), `<name>` its last component and `<hash>` the first 12
//! hex digits of the SHA-256 of its canonical path. Without a home directory: `.oneshot` in the
//! current directory.

use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The default state directory for a command run in `cwd`; `None` when there is no home
/// directory to put it in.
pub fn default_state_dir(cwd: &Path, var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let base = crate::paths::user_dir(&var, "XDG_STATE_HOME", ".local/state")?;
    let root = crate::paths::project_root(cwd);
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    let hash: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    Some(
        base.join("oneshot")
            .join("projects")
            .join(format!("{name}-{hash}")),
    )
}

/// Keeps a state directory that lies inside a git work tree out of git: writes a `.gitignore`
/// holding `*` at its top, so an agent's `git add -A` never commits sessions, logs or keys.
/// Nothing is written outside a repository. Best effort: a failure only warns, since the
/// session itself can still run.
pub(crate) fn ignore_in_repo(root: &Path) {
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    if crate::paths::git_root(&canonical).is_none() {
        return;
    }
    let file = root.join(".gitignore");
    if file.exists() {
        return;
    }
    if let Err(e) = std::fs::write(&file, "# oneshot's state: never commit it\n*\n") {
        tracing::warn!(
            "failed to write {}: {e}; the state directory is inside a git repository, so \
             `git add -A` there may commit it",
            file.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_directory_per_project_outside_it() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("my repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        let home = |k: &str| (k == "HOME").then(|| OsString::from("/home/u"));
        let top = default_state_dir(&repo, home).unwrap();
        // Anywhere inside the project: the same directory, under the user's state home.
        assert_eq!(
            default_state_dir(&repo.join("src/deep"), home).unwrap(),
            top
        );
        assert!(top.starts_with("/home/u/.local/state/oneshot/projects"));
        let leaf = top.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            leaf.starts_with("my_repo-") && leaf.len() == "my_repo-".len() + 12,
            "{leaf}"
        );
        // Another project, another directory; XDG_STATE_HOME wins when absolute.
        let other = tmp.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        assert_ne!(default_state_dir(&other, home).unwrap(), top);
        let xdg = |k: &str| match k {
            "XDG_STATE_HOME" => Some(OsString::from("/xdg")),
            "HOME" => Some(OsString::from("/home/u")),
            _ => None,
        };
        assert!(
            default_state_dir(&repo, xdg)
                .unwrap()
                .starts_with("/xdg/oneshot/projects")
        );
        assert_eq!(default_state_dir(&repo, |_| None), None);
    }

    #[test]
    fn state_inside_a_repository_is_ignored_by_git() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("state");
        std::fs::create_dir_all(&outside).unwrap();
        ignore_in_repo(&outside);
        assert!(!outside.join(".gitignore").exists());
        let inside = tmp.path().join("repo/.oneshot");
        std::fs::create_dir_all(tmp.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(&inside).unwrap();
        ignore_in_repo(&inside);
        let text = std::fs::read_to_string(inside.join(".gitignore")).unwrap();
        assert!(text.lines().any(|l| l == "*"), "{text}");
    }
}
