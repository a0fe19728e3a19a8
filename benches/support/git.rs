//! Plain git for the benches that set up repositories: an identity of its own, no signing,
//! and a failure that stops the bench.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `git ARGS` in `dir`; panics, naming the command, when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=b@b",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}
