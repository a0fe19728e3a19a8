//! Chaos: oneshot killed (`kill -9`) or signalled (SIGINT, SIGTERM, SIGHUP) at pseudo-random
//! moments from its first milliseconds on, with a worker that starts children in its group, in
//! a session of their own, double-forked and with an empty environment. After every kill: no child left running within
//! two seconds, no state file that does not read, no temp file left once the session is
//! resumed, and every session resumes to the end. After every signal: oneshot exits with a
//! status (0 or 130), never by the signal, and the session resumes to the end.

use crate::common;
use common::*;
use std::time::{Duration, Instant};

/// Points per kind: each costs about a second (they run side by side with the other tests).
const POINTS: u64 = 10;

/// A small deterministic generator, so a failing point can be replayed.
fn delays(seed: u64) -> impl Iterator<Item = Duration> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..POINTS).map(move |i| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // From 0 ms to 700 ms (the auditor, the end). The kill test counts from the spawn; the
        // signal test from oneshot's first instruction (see `wait_until_catching`).
        Duration::from_millis(if i == 0 { 0 } else { x % 700 })
    })
}

/// A world whose worker starts four children (recording their pids: in its group, in a session
/// of their own, double-forked, and with an empty environment) and works a little.
fn world() -> (World, String, String, std::path::PathBuf) {
    let w = World::new();
    let pids = w.tmp.path().join("pids");
    let worker = w.script(
        "w.sh",
        &format!(
            "sleep 300 & echo $! >> {p}\n\
             setsid sh -c 'echo $$ >> {p}; exec sleep 301' < /dev/null > /dev/null 2>&1 &\n\
             sh -c '(sleep 302 & echo $! >> {p}) &' < /dev/null > /dev/null 2>&1\n\
             env -i setsid sh -c 'echo $$ >> {p}; exec sleep 303' < /dev/null > /dev/null 2>&1 &\n\
             for i in 1 2 3 4 5; do echo step $i; sleep 0.05; done",
            p = pids.display()
        ),
    );
    let auditor = w.script("a.sh", &format!("sleep 0.1; {AUDIT_DONE}"));
    (w, worker, auditor, pids)
}

fn children(pids: &std::path::Path) -> Vec<i32> {
    std::fs::read_to_string(pids)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Resumes the session (if one was made) until it has ended; checks its files on the way.
fn finish(w: &World) {
    let ids = w.session_ids();
    let Some(id) = ids.first() else {
        return; // killed before the session existed
    };
    if !w.session_dir(id).join("oneshot.json").exists() {
        return; // killed between making its directory and writing its first state
    }
    let status = w.cmd().args(["status", id]).output().unwrap();
    assert_eq!(code(&status), 0, "the state file reads: {}", text(&status));
    if w.trace(id).last().is_some_and(|s| s == "COMPLETED") {
        return;
    }
    let out = w.cmd().args(["resume", id]).output().unwrap();
    assert_eq!(code(&out), 0, "resume: {}", text(&out));
    assert_eq!(w.trace(id).last().unwrap(), "COMPLETED");
    let dir = w.session_dir(id);
    let temps: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
        .collect();
    assert!(temps.is_empty(), "temp files left: {temps:?}");
}

#[cfg(target_os = "linux")]
#[test]
fn kill_9_at_any_moment_leaves_no_orphan_and_a_resumable_session() {
    for (point, delay) in delays(7).enumerate() {
        let (w, worker, auditor, pids) = world();
        let mut child = w.spawn(&worker, &auditor, &[], "t");
        std::thread::sleep(delay);
        signal(child.id(), libc::SIGKILL);
        let _ = wait_timeout(&mut child, Duration::from_secs(10));
        let start = Instant::now();
        let mut left = children(&pids);
        while !left.is_empty() && start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
            left = children(&pids)
                .into_iter()
                .filter(|&p| pid_alive(p))
                .collect();
        }
        for &p in &left {
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        assert!(
            left.is_empty(),
            "point {point} ({delay:?}): orphans {left:?}"
        );
        finish(&w);
    }
}

/// Waits until the process catches `sig`: the first line of oneshot's `main`. Before that the
/// program is still being loaded (longer on a cold cache: 5 ms after the spawn was too early on
/// a fresh machine) and no program can catch a signal, so "from the first instant" starts here.
#[cfg(target_os = "linux")]
fn wait_until_catching(pid: u32, sig: i32) {
    let bit = 1u64 << (sig - 1);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .unwrap_or(0);
        if caught & bit != 0 {
            return;
        }
        std::thread::yield_now();
    }
    panic!("oneshot (pid {pid}) never caught signal {sig}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_signal_at_any_moment_pauses_or_ends_the_session_cleanly() {
    let kinds = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    for (point, delay) in delays(11).enumerate() {
        let (w, worker, auditor, pids) = world();
        let mut child = w.spawn(&worker, &auditor, &[], "t");
        let sig = kinds[point % kinds.len()];
        wait_until_catching(child.id(), sig);
        std::thread::sleep(delay);
        signal(child.id(), sig);
        let status = wait_timeout(&mut child, Duration::from_secs(20));
        assert!(
            matches!(status.code(), Some(0 | 130)),
            "point {point} ({delay:?}, signal {sig}): {status:?}"
        );
        finish(&w);
        let left: Vec<i32> = children(&pids)
            .into_iter()
            .filter(|&p| pid_alive(p))
            .collect();
        assert!(left.is_empty(), "point {point}: left running {left:?}");
    }
}
