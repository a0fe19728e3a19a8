//! Limits without Lua: `--max-iterations`, `--timeout` and `--inactivity-timeout` replace the
//! policy's for one session, are noted in its log, and survive a crash and a resume.

use crate::common;
use common::*;
use std::time::Duration;

/// An auditor that never accepts the work.
const AUDIT_RETRY: &str = "echo 'VERDICT: RETRY not yet'";

/// The log's notes, in order.
fn notes(w: &World, id: &str) -> Vec<String> {
    w.log(id)
        .iter()
        .filter(|r| r["type"] == "note" || r["kind"] == "note")
        .filter_map(|r| r["message"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn max_iterations_from_the_command_line_beats_the_policys() {
    let w = World::new();
    let worker = w.script("w.sh", "echo work >> out.txt");
    let auditor = w.script("a.sh", AUDIT_RETRY);
    // The policy allows five; the flag allows one.
    let policy = w.policy("return { limits = { max_iterations = 5 } }");
    let out = w.run(
        &worker,
        &auditor,
        &["--policy", &policy, "--max-iterations", "1"],
        "t",
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(w.reason_code(&id, "FAILED"), "max_iterations");
    let state = w.state(&id);
    assert_eq!(state["iteration_count"], 1);
    assert_eq!(state["max_iterations"], 1);
    assert_eq!(
        state["settings"]["limits"]["max_iterations"],
        serde_json::json!({"value": 1, "from": "--max-iterations"})
    );
    let notes = notes(&w, &id);
    assert!(
        notes.iter().any(|n| n
            == "limits overridden for this session: max_iterations = 1 (from --max-iterations)"),
        "{notes:?}"
    );
    // A replay decides with the same limits: the same policy changes nothing.
    let out = w
        .cmd()
        .args(["policy", "replay", &id, "--policy", &policy, "--exit-code"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
}

#[test]
fn inactivity_timeout_from_the_command_line_stops_a_silent_worker() {
    let w = World::new();
    let marker = w.tmp.path().join("ran");
    // Silent for 30 s the first time (after leaving a change), quick after that.
    let worker = w.script(
        "w.sh",
        &format!(
            "if [ -f {m} ]; then exit 0; fi; touch {m}; echo x > out.txt; sleep 30",
            m = marker.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let started = std::time::Instant::now();
    let out = w.run(&worker, &auditor, &["--inactivity-timeout", "1s"], "t");
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    let id = w.session_id();
    assert!(w.trace(&id).contains(&"RECOVERY_PENDING".to_string()));
    let evidence = w.evidence(&id);
    assert_eq!(
        evidence[0].reason,
        Some(oneshot::session::StopReason::InactivityTimeout)
    );
    assert_eq!(
        w.state(&id)["settings"]["limits"]["inactivity_timeout_ms"]["value"],
        1000
    );
}

#[test]
fn overrides_survive_a_crash_and_a_resume_from_elsewhere() {
    let w = World::new();
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_RETRY);
    let mut child = w.spawn(
        &worker,
        &auditor,
        &["--max-iterations", "1", "--timeout", "10m"],
        "t",
    );
    w.wait_for(&marker, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    signal(child.id(), SIGKILL);
    wait_timeout(&mut child, Duration::from_secs(10));
    let id = w.session_id();
    let limits = w.state(&id)["settings"]["limits"].clone();
    assert_eq!(limits["max_iterations"]["value"], 1);
    assert_eq!(limits["worker_timeout_ms"]["value"], 600_000);

    // The resumed worker finishes, the auditor wants more, and the budget of one is spent:
    // without the kept override the policy's five would start iteration 2.
    let out = w
        .cmd()
        .current_dir(w.tmp.path())
        .args(["resume", &id])
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert_eq!(w.reason_code(&id, "FAILED"), "max_iterations");
    assert_eq!(w.state(&id)["iteration_count"], 1);
    assert_eq!(w.state(&id)["settings"]["limits"], limits);
    // Each run says which limits are not the policy's.
    let noted = notes(&w, &id)
        .iter()
        .filter(|n| n.starts_with("limits overridden for this session: max_iterations = 1"))
        .count();
    assert_eq!(noted, 2);
}

#[test]
fn a_bad_limit_on_the_command_line_is_a_usage_error() {
    let w = World::new();
    let out = w
        .cmd()
        .args(["--worker-cmd", "true", "--auditor-cmd", "true"])
        .args(["--max-iterations", "0", "t"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    let out = w
        .cmd()
        .args(["--worker-cmd", "true", "--auditor-cmd", "true"])
        .args(["--timeout", "soon", "t"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(w.session_ids().is_empty());
}

#[test]
fn a_relative_policy_is_found_again_by_a_resume_from_another_directory() {
    let w = World::new();
    w.file("p.lua", "return { limits = { max_iterations = 3 } }");
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_DONE);
    // Started from the directory holding the policy, naming it relatively.
    let mut child = w
        .cmd()
        .current_dir(w.tmp.path())
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor])
        .args(["--workdir", "work", "--policy", "./p.lua", "t"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    w.wait_for(&marker, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    signal(child.id(), libc::SIGTERM);
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(15)).code(),
        Some(130)
    );
    let id = w.session_id();
    let recorded = w.state(&id)["policy"]["path"].as_str().unwrap().to_string();
    assert!(std::path::Path::new(&recorded).is_absolute(), "{recorded}");
    // Resumed from the workdir, where ./p.lua does not exist.
    let out = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(w.trace(&id).last().unwrap(), "COMPLETED");
}
