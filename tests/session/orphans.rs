//! No process outlives oneshot, however oneshot dies: after `kill -9`, its reaper (and its guard)
//! kill what the agent started — in the agent's group, outside it, and with its environment
//! cleared — within two seconds.

use crate::common;
use common::*;
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
#[test]
fn nothing_the_agent_started_outlives_a_kill_9_of_oneshot() {
    let w = World::new();
    let pids = w.tmp.path().join("pids");
    let ready = w.tmp.path().join("ready");
    // A child in the agent's group, one in a session of its own, one double-forked, one in a
    // session of its own with an empty environment (no mark to find it by).
    let worker = w.script(
        "w.sh",
        &format!(
            "sleep 300 & echo $! >> {p}\n\
             setsid sh -c 'echo $$ >> {p}; exec sleep 301' < /dev/null > /dev/null 2>&1 &\n\
             sh -c '(sleep 302 & echo $! >> {p}) &' < /dev/null > /dev/null 2>&1\n\
             env -i setsid sh -c 'echo $$ >> {p}; exec sleep 303' < /dev/null > /dev/null 2>&1 &\n\
             sleep 0.3; touch {r}; sleep 300",
            p = pids.display(),
            r = ready.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "t");
    w.wait_for(&ready, Duration::from_secs(10));
    let pids: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 4, "{pids:?}");
    assert!(pids.iter().all(|&p| pid_alive(p)));
    signal(child.id(), libc::SIGKILL);
    let _ = wait_timeout(&mut child, Duration::from_secs(10));
    let start = Instant::now();
    while pids.iter().any(|&p| pid_alive(p)) && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<i32> = pids.into_iter().filter(|&p| pid_alive(p)).collect();
    for &p in &left {
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "outlived oneshot: {left:?}");
}
