//! The state file is not the agent's to write: an agent that rewrites `oneshot.json` — another
//! policy, another workdir, another process to kill — and then kills oneshot cannot have its
//! version resumed.

use crate::common;
use common::*;
use std::time::Duration;

#[test]
fn a_rewritten_state_file_is_not_resumed() {
    let w = World::new();
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", "echo 'VERDICT: RETRY never good enough'");
    let strict = w.policy("return { limits = { max_iterations = 2 } }");
    let mut child = w.spawn(&worker, &auditor, &["--policy", &strict], "t");
    w.wait_for(&marker, Duration::from_secs(10));
    signal(child.id(), libc::SIGKILL);
    let _ = wait_timeout(&mut child, Duration::from_secs(10));
    let id = w.session_id();
    let state = w.session_dir(&id).join("oneshot.json");
    let original = std::fs::read_to_string(&state).unwrap();

    // The agent's edits, one at a time: a policy of its own (with the hash it claims), another
    // workdir, a process of its choosing to be "fenced".
    let lenient = w.file(
        "mine.lua",
        "return { verdict = function() return 'done' end }",
    );
    let mut forged_policy: serde_json::Value = serde_json::from_str(&original).unwrap();
    forged_policy["policy"]["path"] = lenient.display().to_string().into();
    let mut forged_workdir: serde_json::Value = serde_json::from_str(&original).unwrap();
    forged_workdir["workdir"] = "/".into();
    let mut forged_process: serde_json::Value = serde_json::from_str(&original).unwrap();
    forged_process["phase"]["process"] = serde_json::json!({ "pid": 1, "pgid": 1 });
    for forged in [forged_policy, forged_workdir, forged_process] {
        std::fs::write(&state, serde_json::to_vec_pretty(&forged).unwrap()).unwrap();
        let out = w.cmd().args(["resume", &id]).output().unwrap();
        assert_eq!(code(&out), 4, "{}", text(&out));
        assert!(
            text(&out).contains("changed outside oneshot"),
            "{}",
            text(&out)
        );
        assert_eq!(w.trace(&id).last().unwrap(), "WORKER_EXECUTING");
    }

    // The file oneshot wrote resumes (and the strict policy is the one that decides).
    std::fs::write(&state, &original).unwrap();
    let out = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert_eq!(
        w.trace(&id).last().unwrap(),
        "FAILED",
        "max_iterations of the real policy"
    );
}

/// By default the sessions live outside the workdir, in the user's state home, one directory
/// per project, found again from anywhere inside the project.
#[test]
fn sessions_live_outside_the_workdir_by_default() {
    let w = World::new();
    let home = w.tmp.path().join("home");
    std::fs::create_dir_all(w.work().join(".git")).unwrap();
    std::fs::create_dir_all(w.work().join("src")).unwrap();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let cmd = |dir: &std::path::Path| {
        let mut c = w.cmd();
        c.env_remove("ONESHOT_STATE_DIR")
            .env_remove("XDG_STATE_HOME")
            .env("HOME", &home)
            .current_dir(dir);
        c
    };
    let out = cmd(&w.work())
        .args(["--worker-cmd", "echo hi", "--auditor-cmd", &auditor, "t"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        !w.work().join(".oneshot").exists(),
        "nothing in the workdir"
    );
    let projects = home.join(".local/state/oneshot/projects");
    assert_eq!(std::fs::read_dir(&projects).unwrap().count(), 1);
    let listed = cmd(&w.work().join("src")).args(["list"]).output().unwrap();
    assert_eq!(code(&listed), 0, "{}", text(&listed));
    assert!(text(&listed).contains("COMPLETED"), "{}", text(&listed));
}
