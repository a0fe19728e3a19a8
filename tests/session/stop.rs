//! `oneshot stop ID` from another terminal: the session pauses gracefully, stays resumable,
//! and `stop` says where it paused; a session that is not running is an error saying so.

use crate::common;
use common::*;
use std::time::Duration;

fn stop(w: &World, args: &[&str]) -> std::process::Output {
    w.cmd().arg("stop").args(args).output().unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn stop_pauses_a_running_session_and_resume_finishes_it() {
    let w = World::new();
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "a long task");
    w.wait_for(&marker, Duration::from_secs(15));
    let id = w.session_id();

    let out = stop(&w, &[&id[..8]]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("session {id} paused in INTERRUPTED; continue it with oneshot resume {id}\n")
    );
    // The session itself ended as a pause does: exit 130, resumable.
    let status = wait_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(130));
    assert_eq!(w.state(&id)["state"], "INTERRUPTED");

    // Not running any more: stop says so and points at resume.
    let out = stop(&w, &[&id]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "oneshot: error: failed to stop session {id}: it is not running (paused in \
             INTERRUPTED); continue it with oneshot resume {id}\n"
        )
    );

    let out = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(w.state(&id)["state"], "COMPLETED");
    let out = stop(&w, &[&id]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "oneshot: error: failed to stop session {id}: it is not running (COMPLETED); there \
             is nothing to stop\n"
        )
    );
}

#[test]
fn stop_without_waiting_returns_at_once_and_the_session_still_pauses() {
    let w = World::new();
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "a long task");
    w.wait_for(&marker, Duration::from_secs(15));
    let id = w.session_id();
    let out = stop(&w, &[&id, "--no-wait"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("asked oneshot (pid {}) to pause session {id}\n", child.id())
    );
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(10)).code(),
        Some(130)
    );
}

#[test]
fn stop_on_a_crashed_session_says_stale_and_signals_nobody() {
    let w = World::new();
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "a long task");
    w.wait_for(&marker, Duration::from_secs(15));
    let id = w.session_id();
    signal(child.id(), SIGKILL);
    wait_timeout(&mut child, Duration::from_secs(10));
    let out = stop(&w, &[&id]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "oneshot: error: failed to stop session {id}: it is not running: the oneshot that \
             drove it is gone and left it in WORKER_EXECUTING (stale); continue it with oneshot \
             resume {id}\n"
        )
    );
}

#[test]
fn a_stop_that_takes_too_long_says_so_and_a_second_stop_kills_the_agent() {
    let w = World::new();
    let marker = w.tmp.path().join("started");
    // An agent that ignores SIGTERM: the pause waits out the grace period.
    let worker = w.script(
        "w.sh",
        &format!("touch {}; trap '' TERM; sleep 30", marker.display()),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "a stubborn task");
    w.wait_for(&marker, Duration::from_secs(15));
    let id = w.session_id();
    let out = stop(&w, &[&id, "--wait", "300ms"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "oneshot: error: failed to stop session {id}: oneshot (pid {}) was asked to pause but \
             still drives it after 300ms (its agent may be using its grace period to stop); wait \
             longer (--wait 2m), or run oneshot stop {id} again to kill the agent now, as a \
             second Ctrl-C would\n",
            child.id()
        )
    );
    let out = stop(&w, &[&id]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&format!("session {id} paused in ")),
        "{}",
        text(&out)
    );
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(10)).code(),
        Some(130)
    );
}
