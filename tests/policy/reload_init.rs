//! The first hot-reload edit of a project `oneshot init` made: its policy sits in the workdir,
//! so the session says at its start that an edit needs `oneshot policy trust`; the starter tests
//! test behaviour, so raising a limit passes them; and a test file saved while a reload is
//! refused re-runs the reload.

use crate::common;
use common::*;
use std::path::Path;
use std::time::Duration;

/// Writes like an editor does: a temp file renamed over the original.
fn save(path: &Path, content: &str) {
    let tmp = path.with_extension("swp");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn records(w: &World, id: &str, kind: &str) -> Vec<serde_json::Value> {
    w.log(id)
        .into_iter()
        .filter(|r| r["type"] == kind)
        .collect()
}

/// `oneshot policy trust FILE` with the test's trust store.
fn trust(w: &World, store: &Path, file: &Path) {
    let out = w
        .cmd()
        .env("ONESHOT_TRUST_FILE", store)
        .args(["policy", "trust"])
        .arg(file)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
}

/// Waits until the session's log holds `n` records of `kind`.
fn wait_records(w: &World, id: &str, kind: &str, n: usize) {
    assert!(
        eventually(Duration::from_secs(10), || records(w, id, kind).len() >= n),
        "waited for {n} `{kind}` record(s): {:?}",
        w.log(id)
    );
}

#[test]
fn an_init_project_is_edited_trusted_and_reloaded_mid_session() {
    let w = World::new();
    let init = w
        .cmd()
        .args(["init", "--dir"])
        .arg(w.work())
        .output()
        .unwrap();
    assert_eq!(code(&init), 0, "{}", text(&init));
    let go = w.tmp.path().join("go");
    let started = w.tmp.path().join("started");
    let worker = w.script(
        "w.sh",
        &format!(
            "touch {s}; while [ ! -f {g} ]; do sleep 0.05; done; echo worked",
            s = started.display(),
            g = go.display()
        ),
    );
    let auditor = w.script("a.sh", "echo 'VERDICT: DONE fine'");
    let store = w.private.path().join("trust.json");
    let mut child = w
        .cmd()
        .current_dir(w.work())
        .env("ONESHOT_TRUST_FILE", &store)
        .args([
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            &auditor,
            "the task",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    w.wait_for(&started, Duration::from_secs(20));
    let id = w.session_id();
    // Said at the start, once, with the command.
    let notes = records(&w, &id, "note");
    assert!(
        notes.iter().any(|n| n["message"]
            .as_str()
            .unwrap()
            .contains("only once you trust it — `oneshot policy trust")),
        "{notes:?}"
    );

    // 1. Raise the limit and trust the edit: the starter tests do not pin limits, so it loads.
    let policy = w.work().join("oneshot.lua");
    let text_of = std::fs::read_to_string(&policy).unwrap();
    save(
        &policy,
        &text_of.replace("max_iterations = 5", "max_iterations = 7"),
    );
    trust(&w, &store, &policy);
    wait_records(&w, &id, "policy_reload", 1);
    // The log is written first and state.json after it, so the state may lag the record.
    assert!(
        eventually(Duration::from_secs(10), || w.state(&id)["max_iterations"]
            == 7),
        "{}",
        w.state(&id)
    );

    // 2. An edit its tests refuse, then a fix of the test file alone: the reload re-runs.
    let edited = std::fs::read_to_string(&policy)
        .unwrap()
        .replace("\"none\", \"end the answer", "\"retry\", \"end the answer");
    save(&policy, &edited);
    trust(&w, &store, &policy);
    wait_records(&w, &id, "policy_reload_failed", 1);
    let tests = w.work().join("oneshot_test.lua");
    let fixed = std::fs::read_to_string(&tests).unwrap().replace(
        "input = { output = \"looks fine to me\" }, expect = \"none\"",
        "input = { output = \"looks fine to me\" }, expect = \"retry\"",
    );
    save(&tests, &fixed);
    // Saving the test file re-ran the refused reload.
    wait_records(&w, &id, "policy_reload", 2);
    std::fs::write(&go, "").unwrap();
    let status = wait_timeout(&mut child, Duration::from_secs(20));
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(0), "{}", text(&out));
    assert_eq!(w.state(&id)["policy"]["generation"], 3);
}
