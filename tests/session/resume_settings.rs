//! A resume runs the session as it was started: hook budget, module path and reload mode are
//! kept in the state file, and the command line can still change them.

use crate::common;
use common::*;
use std::time::Duration;

#[test]
fn resume_keeps_the_sessions_policy_settings_unless_told_otherwise() {
    let w = World::new();
    // The policy needs a module from a directory only --policy-path names: a resume that
    // forgot it could not even load the policy.
    let lib = w.tmp.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(
        lib.join("verdicts.lua"),
        "return { read = function(out) if out:find('DONE') then return 'done' end return 'retry' end }",
    )
    .unwrap();
    let policy = w.policy(
        "local v = require('verdicts')\nreturn { verdict = function(output, ctx) return v.read(output) end }",
    );
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let lib_arg = lib.display().to_string();
    let mut child = w.spawn(
        &worker,
        &auditor,
        &[
            "--policy",
            &policy,
            "--policy-path",
            &lib_arg,
            "--hook-budget",
            "250ms",
            "--policy-reload",
            "off",
        ],
        "t",
    );
    w.wait_for(&marker, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    signal(child.id(), libc::SIGTERM);
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(15)).code(),
        Some(130)
    );
    let id = w.session_id();
    let settings = w.state(&id)["settings"].clone();
    assert_eq!(settings["hook_budget_ms"], 250);
    assert_eq!(settings["reload"], "off");
    assert_eq!(settings["module_paths"][0], lib_arg.as_str());

    // A plain resume, from another directory, finds the module and keeps every setting.
    let out = w
        .cmd()
        .current_dir(w.tmp.path())
        .args(["resume", &id])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(w.trace(&id).last().unwrap(), "COMPLETED");
    let kept = w.state(&id)["settings"].clone();
    assert_eq!(kept, settings);
}

#[test]
fn a_resume_can_change_the_settings_and_they_stick() {
    let w = World::new();
    let marker = w.tmp.path().join("started");
    let worker = w.script(
        "w.sh",
        &format!(
            "if [ -f {m} ]; then sleep 60; fi; touch {m}; sleep 60",
            m = marker.display()
        ),
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &["--hook-budget", "300ms"], "t");
    w.wait_for(&marker, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    signal(child.id(), libc::SIGTERM);
    wait_timeout(&mut child, Duration::from_secs(15));
    let id = w.session_id();
    assert_eq!(w.state(&id)["settings"]["hook_budget_ms"], 300);
    // Resumed with another budget: the state file says so at once (before any process runs).
    let mut resumed = w
        .cmd()
        .args([
            "resume",
            &id,
            "--hook-budget",
            "50ms",
            "--policy-reload",
            "trusted",
        ])
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || {
        w.state(&id)["settings"]["hook_budget_ms"] == 50
    }));
    assert_eq!(w.state(&id)["settings"]["reload"], "trusted");
    signal(resumed.id(), libc::SIGTERM);
    wait_timeout(&mut resumed, Duration::from_secs(15));
}
