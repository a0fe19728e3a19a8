//! Dead, silent, interrupted and orphaned workers: RECOVERY_PENDING, salvage, resume.

use crate::common;
use common::*;
use std::time::Duration;

#[test]
fn crash_with_salvage_success_goes_to_audit() {
    let w = World::new();
    let policy = w.policy(r#"return { salvage = function(ev, ctx)
             if ev.exit_code == 3 and #ev.changed_files == 1 then return "success", "zombie success" end
             return "nothing"
           end }"#,
    );
    let worker = w.script("w.sh", "echo result > out.txt; exit 3");
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = w.run(&worker, &auditor, &["--policy", &policy], "t");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(
        w.trace(&id),
        [
            "CREATED",
            "WORKER_EXECUTING",
            "RECOVERY_PENDING",
            "AUDIT_PENDING",
            "AUDITOR_EXECUTING",
            "COMPLETED"
        ]
    );
    assert_eq!(w.reason_code(&id, "RECOVERY_PENDING"), "exit_code");
    assert_eq!(
        w.reason_text(&id, "AUDIT_PENDING"),
        "salvage success: zombie success"
    );
    let ev = w.evidence(&id);
    assert_eq!(ev[0].changed_files, ["out.txt"]);
    assert_eq!(
        w.state(&id)["changed_files"],
        serde_json::json!(["out.txt"])
    );
}

#[test]
fn crash_with_changed_files_is_partial_by_default_and_runs_again() {
    let w = World::new();
    // First run: writes a file and crashes. Second run: finishes.
    let worker = w.script(
        "w.sh",
        "if [ -f half.txt ]; then echo whole > whole.txt; else echo half > half.txt; exit 1; fi",
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = w.run(&worker, &auditor, &[], "t");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(
        w.trace(&id)[..5],
        [
            "CREATED",
            "WORKER_EXECUTING",
            "RECOVERY_PENDING",
            "REITERATION_PENDING",
            "WORKER_EXECUTING"
        ]
    );
    assert_eq!(
        w.state(&id)["iteration_count"],
        2,
        "a crash costs an iteration"
    );
}

#[test]
fn crash_with_nothing_salvaged_fails() {
    let w = World::new();
    let worker = w.script("w.sh", "echo oops >&2; exit 2");
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = w.run(&worker, &auditor, &[], "t");
    assert_eq!(code(&out), 1, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(
        w.trace(&id),
        ["CREATED", "WORKER_EXECUTING", "RECOVERY_PENDING", "FAILED"]
    );
    let ev = &w.evidence(&id)[0];
    assert_eq!(ev.exit_code, Some(2));
    assert!(ev.output_tail.contains("oops"), "{ev:?}");
}

#[test]
fn silent_worker_is_killed_by_inactivity() {
    let w = World::new();
    let policy = w.policy("return { limits = { inactivity_timeout = 1, grace_period = 1 } }");
    let pidfile = w.tmp.path().join("pids");
    let worker = w.script(
        "w.sh",
        &format!(
            "echo started; sleep 60 & echo $$ $! > {}; wait",
            pidfile.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let start = std::time::Instant::now();
    let out = w.run(&worker, &auditor, &["--policy", &policy], "t");
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(w.reason_code(&id, "RECOVERY_PENDING"), "inactivity_timeout");
    let pids = std::fs::read_to_string(&pidfile).unwrap();
    for pid in pids.split_whitespace() {
        let pid: i32 = pid.parse().unwrap();
        assert!(
            eventually(Duration::from_secs(3), || !pid_alive(pid)),
            "pid {pid} survived"
        );
    }
}

#[test]
fn ctrl_c_during_the_worker_pauses_and_resume_completes() {
    let w = World::new();
    let marker = w.tmp.path().join("started");
    let pidfile = w.tmp.path().join("pid");
    // The first run hangs (until interrupted); any later run finishes at once.
    let worker = w.script(
        "w.sh",
        &format!(
            "if [ -f {m} ]; then echo second run; exit 0; fi; echo $$ > {p}; touch {m}; sleep 60",
            m = marker.display(),
            p = pidfile.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "t");
    w.wait_for(&pidfile, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    signal(child.id(), SIGINT);
    let status = wait_timeout(&mut child, Duration::from_secs(15));
    assert_eq!(status.code(), Some(130));
    let id = w.session_id();
    assert_eq!(w.trace(&id).last().unwrap(), "INTERRUPTED");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!group_alive(pid), "the worker's group must be gone");

    let out = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let trace = w.trace(&id);
    assert_eq!(
        trace[3..],
        [
            "RECOVERY_PENDING",
            "REITERATION_PENDING",
            "WORKER_EXECUTING",
            "AUDIT_PENDING",
            "AUDITOR_EXECUTING",
            "COMPLETED"
        ]
    );
    assert_eq!(
        w.state(&id)["iteration_count"],
        1,
        "a pause must not cost an iteration"
    );
}

#[test]
fn kill_9_of_oneshot_then_resume_fences_orphans_and_completes() {
    let w = World::new();
    let marker = w.tmp.path().join("started");
    let pidfile = w.tmp.path().join("pids");
    let worker = w.script(
        "w.sh",
        &format!(
            "if [ -f {m} ]; then echo second run; exit 0; fi; touch {m}; \
             sleep 300 & echo $$ $! > {p}; wait",
            m = marker.display(),
            p = pidfile.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "t");
    w.wait_for(&pidfile, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    signal(child.id(), SIGKILL);
    wait_timeout(&mut child, Duration::from_secs(5));
    let id = w.session_id();
    assert_eq!(w.trace(&id).last().unwrap(), "WORKER_EXECUTING");
    let pids: Vec<i32> = std::fs::read_to_string(&pidfile)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    // kill -9 can tear the last log line; simulate the worst case.
    let log_path = w.session_dir(&id).join("oneshot-log.json");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&log_path)
        .unwrap();
    std::io::Write::write_all(&mut f, br#"{"ts":1,"type":"activity","da"#).unwrap();
    drop(f);

    let out = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    for pid in &pids {
        assert!(
            eventually(Duration::from_secs(3), || !pid_alive(*pid)),
            "orphan {pid} survived the resume"
        );
    }
    let trace = w.trace(&id);
    assert_eq!(trace[2], "INTERRUPTED");
    assert_eq!(trace.last().unwrap(), "COMPLETED");
    let interrupted = &w.state(&id)["history"][2];
    assert_eq!(interrupted["reason"]["kind"], "oneshot_died");
    // The torn line is the only bad one; later appends started on a new line.
    let text = std::fs::read_to_string(&log_path).unwrap();
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
        .collect();
    assert_eq!(bad, [r#"{"ts":1,"type":"activity","da"#]);
}

#[test]
fn a_second_process_on_a_locked_session_is_refused() {
    let w = World::new();
    let pidfile = w.tmp.path().join("pid");
    let worker = w.script(
        "w.sh",
        &format!("echo $$ > {}; sleep 30", pidfile.display()),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "t");
    w.wait_for(&pidfile, Duration::from_secs(10));
    let id = w.session_id();
    let out = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&out), 4, "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("pid {}", child.id())), "{err}");
    signal(child.id(), SIGINT);
    wait_timeout(&mut child, Duration::from_secs(15));
}

#[test]
fn a_torn_log_line_is_tolerated() {
    let w = World::new();
    let worker = w.script("w.sh", "echo one");
    let auditor = w.script("a.sh", "echo 'VERDICT: RETRY again'");
    let policy = w.policy("return { limits = { max_iterations = 1 } }");
    let out = w.run(&worker, &auditor, &["--policy", &policy], "t");
    assert_eq!(code(&out), 1, "{}", text(&out));
    let id = w.session_id();
    let log_path = w.session_dir(&id).join("oneshot-log.json");
    let mut bytes = std::fs::read(&log_path).unwrap();
    bytes.extend_from_slice(br#"{"ts":1,"type":"activ"#);
    std::fs::write(&log_path, &bytes).unwrap();

    let log = w.cmd().args(["log", &id]).output().unwrap();
    assert_eq!(code(&log), 0, "{}", text(&log));
    let err = String::from_utf8_lossy(&log.stderr);
    assert!(err.contains("torn"), "{err}");
    assert!(String::from_utf8_lossy(&log.stdout).contains("one"));
}

#[test]
fn a_stop_is_journaled_before_it_happens_and_survives_a_crash() {
    let w = World::new();
    let policy = w.policy("return { limits = { inactivity_timeout = 1, grace_period = 30 } }");
    let marker = w.tmp.path().join("term");
    // Ignores nothing, but takes its time after SIGTERM: oneshot is still waiting out the
    // grace period when we kill it.
    let worker = w.script(
        "w.sh",
        &format!(
            "trap 'touch {}; sleep 20; exit 1' TERM; echo start; sleep 60 & wait",
            marker.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &["--policy", &policy], "t");
    w.wait_for(&marker, Duration::from_secs(15));
    let id = w.session_id();
    let state = w.state(&id);
    assert_eq!(state["state"], "WORKER_EXECUTING");
    assert_eq!(state["phase"]["stopping"], "inactivity_timeout");
    signal(child.id(), SIGKILL);
    wait_timeout(&mut child, Duration::from_secs(5));

    let out = w.cmd().args(["resume", &id]).output().unwrap();
    // The stop finishes as the inactivity timeout it was: RECOVERY_PENDING, nothing salvaged.
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert_eq!(w.reason_code(&id, "RECOVERY_PENDING"), "inactivity_timeout");
    assert!(!w.trace(&id).contains(&"INTERRUPTED".to_string()));
}
