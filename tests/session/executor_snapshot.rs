//! Workdir change detection and `recover()`.

use std::fs;
use std::path::Path;
use std::process::Command;

use globset::{Glob, GlobSet, GlobSetBuilder};
use oneshot::executor::{Snapshot, StopReason, Stopped, default_ignore, recover};

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn ignore_with(extra: &[&str]) -> GlobSet {
    let mut set = GlobSetBuilder::new();
    for g in [".oneshot/**", ".git/**"].iter().chain(extra) {
        set.add(Glob::new(g).unwrap());
    }
    set.build().unwrap()
}

/// Serialises and reads back, as the engine does through the session directory.
fn persisted(snapshot: &Snapshot) -> Snapshot {
    serde_json::from_str(&serde_json::to_string(snapshot).unwrap()).unwrap()
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(status.status.success(), "git {args:?}: {status:?}");
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["config", "user.name", "t"]);
    git(dir.path(), &["config", "user.email", "t@example.com"]);
    write(dir.path(), "clean.txt", "clean\n");
    write(dir.path(), "dirty.txt", "v1\n");
    write(dir.path(), "untouched-dirty.txt", "v1\n");
    write(dir.path(), "sub/inner.txt", "inner\n");
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "init"]);
    write(dir.path(), "dirty.txt", "v2\n");
    write(dir.path(), "untouched-dirty.txt", "v2\n");
    dir
}

#[test]
fn plain_directory_reports_new_modified_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", "a");
    write(d, "same.txt", "same");
    write(d, "gone.txt", "gone");
    write(d, "sub/b.txt", "b");
    let ignore = ignore_with(&["build/**"]);
    let snap = persisted(&Snapshot::take(d, &ignore).unwrap());
    assert_eq!(snap.source(), "snapshot");

    write(d, "a.txt", "a, edited");
    fs::remove_file(d.join("gone.txt")).unwrap();
    write(d, "sub/new.txt", "new");
    write(d, ".oneshot/state.json", "{}");
    write(d, ".git/HEAD", "not really git");
    write(d, "build/out.o", "obj");

    let (files, source) = snap.changed_files(d, &ignore).unwrap();
    assert_eq!(files, ["a.txt", "gone.txt", "sub/new.txt"]);
    assert_eq!(source, "snapshot");
}

#[test]
fn git_repo_detects_an_already_dirty_file_written_again() {
    let dir = repo();
    let d = dir.path();
    let ignore = default_ignore();
    let snap = persisted(&Snapshot::take(d, &ignore).unwrap());
    assert_eq!(snap.source(), "git");
    assert_eq!(
        snap.changed_files(d, &ignore).unwrap().0,
        Vec::<String>::new()
    );

    write(d, "dirty.txt", "v3, longer\n");
    write(d, "new/file.txt", "new\n");
    write(d, ".oneshot/log.json", "{}\n");
    let (files, source) = snap.changed_files(d, &ignore).unwrap();
    assert_eq!(files, ["dirty.txt", "new/file.txt"]);
    assert_eq!(source, "git");
}

#[test]
fn git_repo_sees_files_an_agent_committed() {
    let dir = repo();
    let d = dir.path();
    let ignore = default_ignore();
    let snap = Snapshot::take(d, &ignore).unwrap();
    write(d, "clean.txt", "committed change\n");
    git(d, &["commit", "-qam", "agent work"]);
    let (files, _) = snap.changed_files(d, &ignore).unwrap();
    // clean.txt via the new commit; the dirty files were committed, so their status changed.
    assert_eq!(files, ["clean.txt", "dirty.txt", "untouched-dirty.txt"]);
}

#[test]
fn git_subdirectory_workdir_reports_paths_relative_to_it() {
    let dir = repo();
    let sub = dir.path().join("sub");
    let ignore = default_ignore();
    let snap = Snapshot::take(&sub, &ignore).unwrap();
    write(&sub, "inner.txt", "changed\n");
    write(&sub, "added.txt", "added\n");
    write(dir.path(), "outside.txt", "not in the workdir\n");
    let (files, source) = snap.changed_files(&sub, &ignore).unwrap();
    assert_eq!(files, ["added.txt", "inner.txt"]);
    assert_eq!(source, "git");
}

#[test]
fn recover_fills_evidence_from_how_the_run_ended() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ignore = default_ignore();
    let snap = Snapshot::take(d, &ignore).unwrap();
    write(d, "result.txt", "partial work");

    let crashed = Stopped {
        reason: Some(StopReason::ExitCode),
        exit_code: Some(3),
        signal: None,
    };
    let ev = recover(crashed, "tail".into(), Some(&snap), d, &ignore);
    assert_eq!(ev.reason, Some(StopReason::ExitCode));
    assert_eq!((ev.exit_code, ev.signal), (Some(3), None));
    assert_eq!(ev.output_tail, "tail");
    assert_eq!(ev.changed_files, ["result.txt"]);
    assert_eq!(ev.changes_source, "snapshot");

    let timed_out = Stopped {
        reason: Some(StopReason::InactivityTimeout),
        exit_code: None,
        signal: Some(15),
    };
    let ev = recover(timed_out, String::new(), Some(&snap), d, &ignore);
    assert_eq!(ev.reason, Some(StopReason::InactivityTimeout));
    assert_eq!(ev.signal, Some(15));

    let died = Stopped {
        reason: Some(StopReason::OneshotDied),
        ..Stopped::default()
    };
    let ev = recover(died, String::new(), Some(&snap), d, &ignore);
    assert_eq!(ev.reason, Some(StopReason::OneshotDied));
    assert_eq!((ev.exit_code, ev.signal), (None, None));
    assert_eq!(ev.changed_files, ["result.txt"]);

    // Without a snapshot nothing is known about changes, and it says so.
    let ev = recover(Stopped::default(), String::new(), None, d, &ignore);
    assert!(ev.changed_files.is_empty());
    assert_eq!(ev.changes_source, "unavailable");
}
