//! Many jobs provisioning on one repository at once, and git's lock files held by someone
//! else: provision waits its turn rather than failing.

use super::{repo, spec, *};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn twenty_concurrent_provisions_on_one_repository_all_succeed() {
    let r = repo();
    let state = Arc::new(tempfile::tempdir().expect("tempdir"));
    let s = Arc::new(spec(r.path()));
    let threads: Vec<_> = (0..20)
        .map(|i| {
            let (state, s) = (Arc::clone(&state), Arc::clone(&s));
            std::thread::spawn(move || provision(&format!("job-{i:02}"), &s, state.path()))
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        let ws = t
            .join()
            .expect("thread")
            .unwrap_or_else(|e| panic!("job-{i:02}: {e}"));
        assert_eq!(
            fs::read_to_string(ws.path.join("a.txt")).expect("read"),
            "one\n"
        );
    }
    let list = git(r.path(), &["worktree", "list", "--porcelain"]);
    assert_eq!(
        list.matches("branch refs/heads/oneshot/job-").count(),
        20,
        "{list}"
    );
}

#[test]
fn a_held_ref_lock_is_waited_for() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let heads = r.path().join(".git/refs/heads/oneshot");
    fs::create_dir_all(&heads).expect("mkdir");
    let lock = heads.join("job-l.lock");
    fs::write(&lock, "").expect("lock");
    let releaser = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            fs::remove_file(lock).expect("unlock");
        })
    };
    let ws = provision("job-l", &spec(r.path()), state.path()).expect("provision after the lock");
    releaser.join().expect("thread");
    assert_eq!(
        git(r.path(), &["rev-parse", "oneshot/job-l"]),
        ws.base_commit.expect("base")
    );
}

#[test]
fn a_lock_never_released_fails_naming_it() {
    let r = repo();
    let state = tempfile::tempdir().expect("tempdir");
    let heads = r.path().join(".git/refs/heads/oneshot");
    fs::create_dir_all(&heads).expect("mkdir");
    fs::write(heads.join("job-n.lock"), "").expect("lock");
    let err = provision("job-n", &spec(r.path()), state.path()).unwrap_err();
    assert!(err.is_contention(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("worktree add") && msg.contains("job-n.lock"),
        "{msg}"
    );
}
