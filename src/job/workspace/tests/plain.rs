//! A plain directory: copied, committed as a baseline in a private repository, harvested and
//! diffed like a worktree, and removed only when discarded.

use super::{spec, *};
use std::os::unix::fs::PermissionsExt;

#[test]
fn a_plain_directory_is_copied_harvested_and_removed_only_when_discarded() {
    let src = tempfile::tempdir().expect("tempdir");
    let p = src.path();
    fs::write(p.join("a.txt"), "one\n").expect("write");
    fs::create_dir(p.join("bin")).expect("mkdir");
    fs::write(p.join("bin/run.sh"), "#!/bin/sh\n").expect("write");
    fs::set_permissions(p.join("bin/run.sh"), fs::Permissions::from_mode(0o755)).expect("chmod");
    std::os::unix::fs::symlink("a.txt", p.join("link")).expect("symlink");
    fs::create_dir(p.join(".oneshot")).expect("mkdir");
    fs::write(p.join(".oneshot/state"), "not copied\n").expect("write");
    let state = tempfile::tempdir().expect("tempdir");
    let s = spec(p);

    let ws = provision("job-p", &s, state.path()).expect("provision");
    assert_eq!(ws.branch, None);
    assert!(ws.path.ends_with("job-p"));
    assert_eq!(
        fs::read_to_string(ws.path.join("a.txt")).expect("read"),
        "one\n"
    );
    let mode = fs::metadata(ws.path.join("bin/run.sh"))
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(
        fs::read_link(ws.path.join("link")).expect("a symlink"),
        Path::new("a.txt")
    );
    assert!(!ws.path.join(".oneshot").exists());
    let base = ws.base_commit.clone().expect("baseline");
    assert_eq!(git(&ws.path, &["rev-parse", "HEAD"]), base);
    assert_eq!(
        git(&ws.path, &["status", "--porcelain"]),
        "",
        "everything is in the baseline"
    );
    assert!(!p.join(".git").exists(), "the source stays plain");
    assert_eq!(provision("job-p", &s, state.path()).expect("again"), ws);

    fs::write(ws.path.join("a.txt"), "one\ntwo\n").expect("write");
    let h = harvest(&ws, &message("plain work"), None).expect("harvest");
    assert!(h.commit.is_some() && !h.empty);
    assert_eq!(h.files, vec!["a.txt".to_owned()]);
    assert!(diff(&ws).expect("diff").contains("+two"));
    assert_eq!(
        provision("job-p", &s, state.path()).expect("after work"),
        ws
    );
    assert_eq!(fs::read_to_string(p.join("a.txt")).expect("read"), "one\n");

    let Cleanup::Kept { reason } = cleanup(&s, &ws, false).expect("cleanup") else {
        panic!("a plain copy removed without discard");
    };
    assert_eq!(
        reason,
        "plain directory: its work is only here; discard it explicitly"
    );
    assert!(ws.path.exists());
    assert_eq!(
        cleanup(&s, &ws, true).expect("discard"),
        Cleanup::Removed { note: None }
    );
    assert!(!ws.path.exists());
}

#[test]
fn a_crashed_copy_is_started_over() {
    let src = tempfile::tempdir().expect("tempdir");
    fs::write(src.path().join("a.txt"), "one\n").expect("write");
    let state = tempfile::tempdir().expect("tempdir");
    let staging = state.path().join(".job-c.partial");
    fs::create_dir(&staging).expect("mkdir");
    fs::write(staging.join("half"), "written\n").expect("write");
    let ws = provision("job-c", &spec(src.path()), state.path()).expect("provision");
    assert!(!staging.exists() && !ws.path.join("half").exists());
    assert!(
        harvest(&ws, &message("nothing"), None)
            .expect("harvest")
            .empty
    );
}

#[test]
fn a_workspace_root_inside_the_source_is_not_copied_into_itself() {
    let src = tempfile::tempdir().expect("tempdir");
    fs::write(src.path().join("a.txt"), "one\n").expect("write");
    let root = src.path().join("state/worktrees");
    let ws = provision("job-r", &spec(src.path()), &root).expect("provision");
    assert!(ws.path.join("a.txt").exists());
    assert!(!ws.path.join("state/worktrees").exists());
}

#[test]
fn what_stands_in_a_workspaces_way_is_named_and_left_alone() {
    let src = tempfile::tempdir().expect("tempdir");
    fs::write(src.path().join("a.txt"), "one\n").expect("write");
    let state = tempfile::tempdir().expect("tempdir");
    let s = spec(src.path());
    let root = state.path().join("worktrees");
    fs::create_dir(&root).expect("mkdir");
    let not_a_dir = |e: WorkspaceError, path: &Path, found: &str| match e {
        WorkspaceError::NotADir {
            path: p,
            job,
            found: f,
        } => {
            assert_eq!((p.as_path(), job.as_str(), f), (path, "job-w", found));
        }
        other => panic!("{other}"),
    };
    // A staging copy's place taken by a FIFO: not removed, not waited on.
    let staging = root.join(".job-w.partial");
    nix::unistd::mkfifo(&staging, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let e = provision("job-w", &s, &root).expect_err("in the way");
    not_a_dir(e, &staging, "a FIFO (named pipe)");
    fs::remove_file(&staging).expect("rm");
    // A link to nothing where the workspace goes.
    let dest = root.join("job-w");
    std::os::unix::fs::symlink(state.path().join("gone"), &dest).expect("symlink");
    let e = provision("job-w", &s, &root).expect_err("in the way");
    not_a_dir(e, &dest, "a symbolic link to nothing");
    fs::remove_file(&dest).expect("rm");
    // A file above the root: the outermost thing in the way is named.
    let blocked = state.path().join("file");
    fs::write(&blocked, "x").expect("write");
    let e = provision("job-w", &s, &blocked.join("deep/worktrees")).expect_err("in the way");
    not_a_dir(e, &blocked, "a file");
    assert_eq!(fs::read_to_string(&blocked).expect("read"), "x");
    // Out of the way, it provisions.
    provision("job-w", &s, &root).expect("provision");
}
