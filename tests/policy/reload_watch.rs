//! `PolicyWatcher` on real directories with the OS watcher: what counts as a change, what does
//! not, and when it is reported.

use oneshot::policy::{DEBOUNCE, PolicyWatcher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tempfile::TempDir;

fn file_in(dir: &TempDir, name: &str, content: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn save_by_rename(path: &Path, content: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Blocks on the async signal the engine would await in its `select!`.
fn await_change(watcher: &PolicyWatcher, within: Duration) -> bool {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async { tokio::time::timeout(within, watcher.changed()).await })
        .is_ok()
}

/// Waits long enough for any change to have been published, then takes it.
fn settle(watcher: &PolicyWatcher) -> Option<Vec<PathBuf>> {
    std::thread::sleep(DEBOUNCE * 3);
    watcher.take_changed()
}

#[test]
fn a_rename_save_is_reported_once_through_the_async_signal() {
    let dir = TempDir::new().unwrap();
    let policy = file_in(&dir, "policy.lua", "return {}");
    let watcher = PolicyWatcher::new(vec![policy.clone()], DEBOUNCE).unwrap();
    save_by_rename(&policy, "return { limits = {} }");
    assert!(await_change(&watcher, Duration::from_secs(2)));
    assert_eq!(watcher.take_changed(), Some(vec![policy]));
    assert_eq!(watcher.take_changed(), None);
}

#[test]
fn other_files_in_the_directory_are_ignored() {
    let dir = TempDir::new().unwrap();
    let policy = file_in(&dir, "policy.lua", "return {}");
    let watcher = PolicyWatcher::new(vec![policy], DEBOUNCE).unwrap();
    file_in(&dir, "notes.txt", "hello");
    save_by_rename(&dir.path().join("other.lua"), "return {}");
    assert_eq!(settle(&watcher), None);
}

#[test]
fn reading_a_watched_file_is_not_a_change() {
    // The reload itself opens and reads the files; that must not trigger another reload.
    let dir = TempDir::new().unwrap();
    let policy = file_in(&dir, "policy.lua", "return {}");
    let watcher = PolicyWatcher::new(vec![policy.clone()], DEBOUNCE).unwrap();
    for _ in 0..5 {
        std::fs::read(&policy).unwrap();
    }
    assert_eq!(settle(&watcher), None);
}

#[test]
fn a_delete_and_recreate_is_one_change() {
    let dir = TempDir::new().unwrap();
    let policy = file_in(&dir, "policy.lua", "return {}");
    let watcher = PolicyWatcher::new(vec![policy.clone()], DEBOUNCE).unwrap();
    std::fs::remove_file(&policy).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&policy, "return { redact = {} }").unwrap();
    assert_eq!(settle(&watcher), Some(vec![policy]));
    assert_eq!(watcher.take_changed(), None);
}

#[test]
fn the_change_waits_for_a_quiet_period() {
    let dir = TempDir::new().unwrap();
    let policy = file_in(&dir, "policy.lua", "return {}");
    let watcher = PolicyWatcher::new(vec![policy.clone()], DEBOUNCE).unwrap();
    std::fs::write(&policy, "return { }").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let last_write = Instant::now();
    std::fs::write(&policy, "return {  }").unwrap();
    assert!(await_change(&watcher, Duration::from_secs(2)));
    assert!(
        last_write.elapsed() >= DEBOUNCE,
        "reported {:?} after the last write, before the quiet period ended",
        last_write.elapsed()
    );
    assert_eq!(watcher.take_changed(), Some(vec![policy]));
}

#[test]
fn set_files_moves_the_watch_between_directories() {
    let first = TempDir::new().unwrap();
    let second = TempDir::new().unwrap();
    let a = file_in(&first, "policy.lua", "return {}");
    let b = file_in(&second, "common.lua", "return {}");
    let mut watcher = PolicyWatcher::new(vec![a.clone()], DEBOUNCE).unwrap();
    watcher.set_files(vec![b.clone()]).unwrap();
    assert_eq!(watcher.files(), std::slice::from_ref(&b));
    std::fs::write(&a, "return { }").unwrap();
    assert_eq!(
        settle(&watcher),
        None,
        "a dropped file is no longer watched"
    );
    save_by_rename(&b, "return { }");
    assert_eq!(settle(&watcher), Some(vec![b]));
}

#[test]
fn two_files_changed_together_are_one_batch() {
    let dir = TempDir::new().unwrap();
    let a = file_in(&dir, "a.lua", "return {}");
    let b = file_in(&dir, "b.lua", "return {}");
    let watcher = PolicyWatcher::new(vec![a.clone(), b.clone()], DEBOUNCE).unwrap();
    std::fs::write(&b, "return { }").unwrap();
    std::fs::write(&a, "return { }").unwrap();
    assert_eq!(settle(&watcher), Some(vec![a, b]));
}

#[test]
fn a_file_whose_directory_is_missing_is_an_error() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("gone/policy.lua");
    let err = PolicyWatcher::new(vec![missing], DEBOUNCE).err().unwrap();
    assert!(err.to_string().contains("gone"), "{err}");
}

/// Threads of this process whose name is `name`, or starts with it when `name` ends in `*`
/// (the kernel keeps 15 bytes). Exact by default: the policy watchdog's thread,
/// "policy-watchdog", runs in this process too once another test has loaded a policy.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| match name.strip_suffix('*') {
            Some(prefix) => comm.trim().starts_with(prefix),
            None => comm.trim() == name,
        })
        .count()
}

#[test]
fn many_watchers_of_one_file_share_one_watcher_and_each_hears_the_change() {
    let dir = TempDir::new().unwrap();
    let policy = file_in(&dir, "policy.lua", "return {}");
    // Far beyond Linux's default of 128 inotify instances per user: one each would fail.
    let watchers: Vec<PolicyWatcher> = (0..300)
        .map(|_| PolicyWatcher::new(vec![policy.clone()], DEBOUNCE).unwrap())
        .collect();
    save_by_rename(&policy, "return { limits = {} }");
    std::thread::sleep(DEBOUNCE * 3);
    for (i, w) in watchers.iter().enumerate() {
        assert_eq!(w.take_changed(), Some(vec![policy.clone()]), "watcher {i}");
    }
    assert_eq!(threads_named("policy-watch"), 1, "one debounce thread");
    assert_eq!(threads_named("notify-rs*"), 1, "one notify thread");
}

#[test]
fn dropping_one_watcher_leaves_the_others_on_the_same_directory_listening() {
    let dir = TempDir::new().unwrap();
    let policy = file_in(&dir, "policy.lua", "return {}");
    let first = PolicyWatcher::new(vec![policy.clone()], DEBOUNCE).unwrap();
    let second = PolicyWatcher::new(vec![policy.clone()], DEBOUNCE).unwrap();
    drop(first);
    save_by_rename(&policy, "return { redact = {} }");
    assert_eq!(settle(&second), Some(vec![policy.clone()]));
    // And the last one to go takes the watch with it: a new watcher starts afresh.
    drop(second);
    let third = PolicyWatcher::new(vec![policy.clone()], DEBOUNCE).unwrap();
    save_by_rename(&policy, "return { }");
    assert_eq!(settle(&third), Some(vec![policy]));
}

#[test]
fn each_watcher_keeps_its_own_quiet_period() {
    let dir = TempDir::new().unwrap();
    let policy = file_in(&dir, "policy.lua", "return {}");
    let quick = PolicyWatcher::new(vec![policy.clone()], Duration::from_millis(20)).unwrap();
    let slow = PolicyWatcher::new(vec![policy.clone()], Duration::from_millis(800)).unwrap();
    save_by_rename(&policy, "return { }");
    assert!(await_change(&quick, Duration::from_millis(600)));
    assert_eq!(slow.take_changed(), None, "the slow one is still waiting");
    assert!(await_change(&slow, Duration::from_secs(3)));
}
