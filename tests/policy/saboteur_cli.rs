//! `oneshot saboteur`: each fault, injected into a real session through the real binary, is
//! handled the way the session machine says — and leaves nothing running.

use std::path::Path;
use std::process::{Command, Output};

fn oneshot(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .arg("--quiet")
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn saboteur(args: &str) -> String {
    format!("{} saboteur {args}", env!("CARGO_BIN_EXE_oneshot"))
}

/// The newest session's state and last reason.
fn outcome(dir: &Path) -> (String, String) {
    let out = oneshot(dir, &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let state = v["state"]
        .as_str()
        .or(v["session"]["state"].as_str())
        .unwrap_or_default()
        .to_string();
    (state, v.to_string())
}

fn running_with(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
        std::fs::read(p.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(marker))
            .unwrap_or(false)
    })
}

#[test]
fn a_nonsense_auditor_passes_every_schema_check_and_completes_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let out = oneshot(
        tmp.path(),
        &[
            "--worker-cmd",
            "true",
            "--auditor-cmd",
            &saboteur("nonsense --seed 7"),
            "write the report",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (state, all) = outcome(tmp.path());
    assert_eq!(state, "COMPLETED", "{all}");
    // The same seed, the same nonsense: reproducible faults.
    let a = Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .args(["saboteur", "nonsense", "--seed", "7"])
        .output()
        .unwrap();
    let b = Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .args(["saboteur", "nonsense", "--seed", "7"])
        .output()
        .unwrap();
    assert_eq!(a.stdout, b.stdout);
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["verdict"], "done");
}

#[test]
fn a_crashing_worker_fails_the_session_not_oneshot() {
    let tmp = tempfile::tempdir().unwrap();
    let out = oneshot(
        tmp.path(),
        &[
            "--max-iterations",
            "1",
            "--worker-cmd",
            &saboteur("crash"),
            "--auditor-cmd",
            "echo VERDICT: DONE",
            "fix it",
        ],
    );
    assert_ne!(out.status.code(), Some(0));
    let (state, all) = outcome(tmp.path());
    assert_eq!(state, "FAILED", "{all}");
    assert!(
        all.contains("signal") || all.contains("SIGSEGV") || all.contains("11"),
        "{all}"
    );
}

#[test]
fn a_hanging_worker_that_ignores_term_is_killed_and_nothing_survives() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = "--seed 424242";
    let out = oneshot(
        tmp.path(),
        &[
            "--max-iterations",
            "1",
            "--inactivity-timeout",
            "1s",
            "--worker-cmd",
            &saboteur(&format!("hang --ignore-term {marker}")),
            "--auditor-cmd",
            "echo VERDICT: DONE",
            "fix it",
        ],
    );
    assert_ne!(out.status.code(), Some(0));
    let (state, all) = outcome(tmp.path());
    assert_ne!(state, "COMPLETED", "{all}");
    assert!(all.contains("inactiv"), "{all}");
    assert!(
        !running_with(marker),
        "the hanging saboteur outlived its session"
    );
}

#[test]
fn a_flooding_worker_is_logged_and_the_session_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let out = oneshot(
        tmp.path(),
        &[
            "--worker-cmd",
            &saboteur("flood --bytes 20000000"),
            "--auditor-cmd",
            "echo VERDICT: DONE",
            "fix it",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(outcome(tmp.path()).0, "COMPLETED");
}

#[test]
fn a_garbage_auditor_gives_no_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let out = oneshot(
        tmp.path(),
        &[
            "--max-iterations",
            "1",
            "--worker-cmd",
            "true",
            "--auditor-cmd",
            &saboteur("garbage"),
            "fix it",
        ],
    );
    assert_ne!(out.status.code(), Some(0));
    let (state, all) = outcome(tmp.path());
    assert_ne!(state, "COMPLETED", "{all}");
}
