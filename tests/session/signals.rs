//! Signals to oneshot itself: SIGTERM pauses like Ctrl-C, a second Ctrl-C kills at once, and
//! `log --follow` tails a running session.

use crate::common;
use common::*;
use std::time::{Duration, Instant};

#[test]
fn sigterm_pauses_like_ctrl_c_and_the_resume_flag_continues() {
    let w = World::new();
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "t");
    w.wait_for(&marker, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    signal(child.id(), libc::SIGTERM);
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(15)).code(),
        Some(130)
    );
    let id = w.session_id();
    assert_eq!(w.trace(&id).last().unwrap(), "INTERRUPTED");
    let out = w.cmd().args(["--resume", &id[..8]]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(w.trace(&id).last().unwrap(), "COMPLETED");
}

#[test]
fn a_second_ctrl_c_kills_a_worker_that_ignores_sigterm() {
    let w = World::new();
    let policy = w.policy("return { limits = { grace_period = 60 } }");
    let pidfile = w.tmp.path().join("pid");
    let worker = w.script(
        "w.sh",
        &format!(
            "trap '' TERM; echo $$ > {}; while true; do sleep 1; done",
            pidfile.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &["--policy", &policy], "t");
    w.wait_for(&pidfile, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    signal(child.id(), SIGINT);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the worker ignores TERM: still stopping"
    );
    let start = Instant::now();
    signal(child.id(), SIGINT);
    let status = wait_timeout(&mut child, Duration::from_secs(10));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(eventually(Duration::from_secs(3), || !group_alive(pid)));
    assert_eq!(w.trace(&w.session_id()).last().unwrap(), "INTERRUPTED");
}

#[test]
fn log_follow_tails_a_running_session_until_it_ends() {
    let w = World::new();
    let go = w.tmp.path().join("go");
    let worker = w.script(
        "w.sh",
        &format!(
            "echo first-line; while [ ! -f {} ]; do sleep 0.1; done; echo last-line",
            go.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut session = w.spawn(&worker, &auditor, &[], "t");
    assert!(eventually(Duration::from_secs(10), || w
        .session_ids()
        .len()
        == 1));
    let id = w.session_id();
    let mut follow = w
        .cmd()
        .args(["log", &id, "--follow"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        follow.try_wait().unwrap().is_none(),
        "follow waits for more"
    );
    std::fs::write(&go, "").unwrap();
    assert_eq!(
        wait_timeout(&mut session, Duration::from_secs(15)).code(),
        Some(0)
    );
    wait_timeout(&mut follow, Duration::from_secs(10));
    let out = follow.wait_with_output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("first-line") && s.contains("last-line"), "{s}");
    assert!(s.contains("-> COMPLETED"), "{s}");
}

/// `log --follow` learns that a session ended from the lock file's holder, without taking the
/// lock: following never makes a `resume` fail, and a follow of a session whose oneshot was
/// killed (kill -9) ends on its own.
#[test]
fn log_follow_never_takes_the_lock_and_ends_after_a_kill() {
    let w = World::new();
    let marker = w.tmp.path().join("started");
    let worker = w.script(
        "w.sh",
        &format!(
            "if [ -f {m} ]; then echo second-run; exit 0; fi; touch {m}; echo first-run; sleep 60",
            m = marker.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut session = w.spawn(&worker, &auditor, &[], "t");
    w.wait_for(&marker, Duration::from_secs(10));
    let id = w.session_id();
    let mut follow = w
        .cmd()
        .args(["log", &id, "--follow"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Output reaches the log file within a second (the flush timer); kill after it did.
    let log = w.session_dir(&id).join("oneshot-log.json");
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("first-run"))
    }));
    signal(session.id(), libc::SIGKILL);
    let _ = wait_timeout(&mut session, Duration::from_secs(10));
    // The follower sees the driver gone and stops by itself.
    wait_timeout(&mut follow, Duration::from_secs(10));
    let out = follow.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("first-run"));

    // While a follower polls every 200 ms, resumes are never refused.
    let mut follow = w
        .cmd()
        .args(["log", &id, "--follow"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let out = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(w.trace(&id).last().unwrap(), "COMPLETED");
    wait_timeout(&mut follow, Duration::from_secs(10));
}

/// Signals from the first instant: a Ctrl-C while the policy is still loading pauses the
/// session (exit 130, resumable) instead of killing oneshot; SIGHUP (a closed terminal) pauses
/// like SIGTERM; a Ctrl-C during a long hook is acted on when the hook returns.
#[test]
fn early_signals_sighup_and_signals_during_a_hook_pause_the_session() {
    // 1. During the policy's top level (400 ms of busy work).
    let w = World::new();
    let policy = w.policy("local t = os.clock()\nwhile os.clock() - t < 0.4 do end\nreturn {}");
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(
        "sleep 30",
        &auditor,
        &["--policy", &policy, "--hook-budget", "5s"],
        "t",
    );
    std::thread::sleep(Duration::from_millis(120));
    signal(child.id(), SIGINT);
    let status = wait_timeout(&mut child, Duration::from_secs(15));
    assert_eq!(
        status.code(),
        Some(130),
        "{status:?}: not killed by the signal"
    );
    assert_eq!(w.trace(&w.session_id()).last().unwrap(), "INTERRUPTED");

    // 2. SIGHUP while the worker runs.
    let w = World::new();
    let marker = w.tmp.path().join("started");
    let worker = w.script("w.sh", &format!("touch {}; sleep 30", marker.display()));
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "t");
    w.wait_for(&marker, Duration::from_secs(10));
    signal(child.id(), libc::SIGHUP);
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(15)).code(),
        Some(130)
    );
    assert_eq!(w.trace(&w.session_id()).last().unwrap(), "INTERRUPTED");

    // 3. During a long observer hook on the way to the auditor: the session pauses, it does
    //    not fail.
    let w = World::new();
    let marker = w.tmp.path().join("hook");
    let policy = w.policy(
        r#"return { on_transition = function(from, to, ctx)
             if to == "AUDIT_PENDING" then
               local t = os.clock()
               while os.clock() - t < 0.6 do end
             end
           end }"#,
    );
    let worker = w.script("w.sh", &format!("touch {}; echo done", marker.display()));
    let auditor = w.script("a.sh", "sleep 30");
    let mut child = w.spawn(
        &worker,
        &auditor,
        &["--policy", &policy, "--hook-budget", "5s"],
        "t",
    );
    w.wait_for(&marker, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    signal(child.id(), SIGINT);
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(15)).code(),
        Some(130)
    );
    let id = w.session_id();
    assert_eq!(
        w.trace(&id).last().unwrap(),
        "INTERRUPTED",
        "{:?}",
        w.trace(&id)
    );
}

/// Issue 20: a Ctrl-C during a long hook (a 5 s budget, the hook busy for 3 s) cuts the hook
/// short at once — not when its budget runs out — and the session pauses in INTERRUPTED rather
/// than failing; the resume asks the same hook again over the auditor's answer it already has,
/// so the auditor does not run twice.
#[test]
fn a_ctrl_c_during_a_long_hook_pauses_at_once_and_the_resume_asks_it_again() {
    let w = World::new();
    let policy = w.policy(
        r#"return { verdict = function(output, ctx)
             local t = os.clock()
             while os.clock() - t < 3 do end
             return { verdict = "done", reason = "slow but sure" }
           end }"#,
    );
    let audits = w.tmp.path().join("audits");
    let auditor = w.script(
        "a.sh",
        &format!("echo audit >> {}; {AUDIT_DONE}", audits.display()),
    );
    let mut child = w.spawn(
        "echo worked",
        &auditor,
        &["--policy", &policy, "--hook-budget", "5s"],
        "t",
    );
    w.wait_for(&audits, Duration::from_secs(10));
    // The verdict hook starts as the auditor ends; be well inside it.
    std::thread::sleep(Duration::from_millis(700));
    let sent = Instant::now();
    signal(child.id(), SIGINT);
    let status = wait_timeout(&mut child, Duration::from_secs(15));
    let took = sent.elapsed();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(
        took < Duration::from_millis(1500),
        "the hook was not cut short: oneshot took {took:?} to stop"
    );
    let id = w.session_id();
    assert_eq!(
        w.trace(&id).last().unwrap(),
        "INTERRUPTED",
        "{:?}",
        w.trace(&id)
    );
    let state = w.state(&id);
    let last = state["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["reason"]["kind"], "hook_interrupted", "{last}");
    assert_eq!(last["reason"]["hook"], "verdict", "{last}");
    let status = text(&w.cmd().args(["status", &id]).output().unwrap());
    assert!(status.contains("a resume asks it again"), "{status}");

    let out = w
        .cmd()
        .args(["resume", &id, "--hook-budget", "5s"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let trace = w.trace(&id);
    assert_eq!(
        trace[trace.len() - 2..],
        ["AUDITOR_EXECUTING", "COMPLETED"],
        "{trace:?}"
    );
    assert!(text(&out).contains("slow but sure"), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&audits).unwrap().lines().count(),
        1,
        "the auditor ran again"
    );
}
