//! Puts the commit and its date into `oneshot --version` (`ONESHOT_VERSION`), so a bug report
//! names the build it came from.
//!
//! Outside a git checkout (a crate tarball, `cargo install` from a registry) or without git, the
//! version is the package's alone: the build never fails for want of git. The script reruns
//! only when HEAD moves (HEAD itself, the branch it points to, packed refs), not on every edit
//! of a source file.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    // Without this, cargo would rerun the script whenever any file of the package changes.
    println!("cargo:rerun-if-changed=build.rs");
    let version = env("CARGO_PKG_VERSION");
    let described = match commit() {
        Some((hash, date)) => format!("{version} ({hash} {date})"),
        None => version,
    };
    println!("cargo:rustc-env=ONESHOT_VERSION={described}");
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_default()
}

/// The short hash and commit date of HEAD, and the files whose change means HEAD moved.
fn commit() -> Option<(String, String)> {
    let dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let git_dir = git(&dir, &["rev-parse", "--git-dir"])?;
    let common_dir = git(&dir, &["rev-parse", "--git-common-dir"])?;
    let (git_dir, common_dir) = (dir.join(git_dir), dir.join(common_dir));
    watch(&git_dir.join("HEAD"));
    if let Some(branch) = git(&dir, &["symbolic-ref", "-q", "HEAD"]) {
        // A worktree keeps HEAD in its own git dir and the branches in the common one.
        watch(&common_dir.join(branch));
        watch(&common_dir.join("packed-refs"));
    }
    let hash = git(&dir, &["rev-parse", "--short", "HEAD"])?;
    let date = git(&dir, &["log", "-1", "--format=%cs", "HEAD"])?;
    Some((hash, date))
}

/// Reruns the script when `path` changes. Only existing files are named: cargo reruns the
/// script on every build for a path that does not exist.
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// One line of git's output, or `None` when git is missing, fails or says nothing.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}
