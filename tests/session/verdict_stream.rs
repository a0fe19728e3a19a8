//! The verdict is read from the auditor's stdout, its answer: a verdict on stderr never counts,
//! while stderr stays in the log, the state and the replay.

use crate::common;
use common::*;

/// An auditor that answers RETRY on stdout and DONE on stderr the first time, DONE on stdout
/// the second time.
fn two_faced_auditor(w: &World) -> String {
    let seen = w.tmp.path().join("audited-once");
    w.script(
        "a.sh",
        &format!(
            "if [ -e {s} ]; then echo 'VERDICT: DONE fixed now'; exit 0; fi\n\
             touch {s}\n\
             echo 'VERDICT: RETRY the tests still fail'\n\
             echo 'VERDICT: DONE from a noisy tool' >&2\n",
            s = seen.display()
        ),
    )
}

#[test]
fn a_done_on_stderr_does_not_outvote_a_retry_on_stdout() {
    let w = World::new();
    let worker = w.script("w.sh", "echo working");
    let out = w.run(&worker, &two_faced_auditor(&w), &[], "fix it");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(
        w.trace(&id),
        [
            "CREATED",
            "WORKER_EXECUTING",
            "AUDIT_PENDING",
            "AUDITOR_EXECUTING",
            "REITERATION_PENDING",
            "WORKER_EXECUTING",
            "AUDIT_PENDING",
            "AUDITOR_EXECUTING",
            "COMPLETED"
        ]
    );
    // The first verdict was read from stdout only.
    let first = w
        .log(&id)
        .into_iter()
        .find(|r| r["type"] == "decision" && r["hook"] == "verdict")
        .expect("a verdict decision");
    assert_eq!(first["result"]["verdict"], "retry", "{first}");
    let input = first["input"]["output"].to_string();
    assert!(
        !input.contains("noisy tool"),
        "stderr reached the verdict: {input}"
    );
}

#[test]
fn a_done_on_stdout_with_noise_on_stderr_completes() {
    let w = World::new();
    let worker = w.script("w.sh", "echo working");
    let auditor = w.script(
        "a.sh",
        "echo 'warning: VERDICT: RETRY is deprecated' >&2; echo 'VERDICT: DONE all good'; \
         echo 'VERDICT: IMPOSSIBLE (stderr noise)' >&2",
    );
    let out = w.run(&worker, &auditor, &[], "fix it");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(w.trace(&id).last().unwrap(), "COMPLETED");
    assert_eq!(w.trace(&id).len(), 5, "{:?}", w.trace(&id));
}

#[test]
fn stderr_stays_in_the_log_and_the_recording_replays() {
    let w = World::new();
    let worker = w.script("w.sh", "echo working; echo 'worker complains' >&2");
    let out = w.run(&worker, &two_faced_auditor(&w), &["-q"], "fix it");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();

    let log = w.cmd().args(["log", &id]).output().unwrap();
    assert_eq!(code(&log), 0, "{}", text(&log));
    let shown = String::from_utf8_lossy(&log.stdout);
    assert!(shown.contains("VERDICT: DONE from a noisy tool"), "{shown}");
    assert!(shown.contains("worker complains"), "{shown}");

    // The recorded exit keeps both streams, and the auditor's stdout beside them.
    let exited: Vec<serde_json::Value> = w
        .log(&id)
        .into_iter()
        .filter(|r| r["type"] == "process" && r["event"] == "exited" && r["role"] == "auditor")
        .collect();
    assert!(exited[0]["tail"].as_str().unwrap().contains("noisy tool"));
    assert_eq!(exited[0]["stdout"], "VERDICT: RETRY the tests still fail");
    assert!(exited[1].get("stdout").is_none(), "only stdout: no copy");
    // The worker's output (both streams) is what the auditor and salvage see.
    assert!(w.session(&id).worker_output.contains("worker complains"));

    // Replayed under an equivalent policy, the session takes the same path.
    let same = w.file("same.lua", "return {}");
    let r = w
        .cmd()
        .args(["policy", "replay", &id, "--json", "--policy"])
        .arg(&same)
        .output()
        .unwrap();
    assert_eq!(code(&r), 0, "{}", text(&r));
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["differences"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(v["simulated_path"], v["recorded_path"], "{v}");
    assert!(v["divergence"].is_null(), "{v}");
}
