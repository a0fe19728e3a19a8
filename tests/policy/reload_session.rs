//! Hot reload during a real session: the policy file is edited while the worker runs.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A worker that announces itself and waits for the test's go signal.
fn waiting_worker(w: &World) -> (String, PathBuf, PathBuf) {
    let started = w.tmp.path().join("started");
    let go = w.tmp.path().join("go");
    let worker = w.script(
        "w.sh",
        &format!(
            "touch {s}; while [ ! -f {g} ]; do sleep 0.05; done; rm -f {g}; echo worked",
            s = started.display(),
            g = go.display()
        ),
    );
    (worker, started, go)
}

/// Writes like an editor does: a temp file renamed over the original.
fn save(path: &Path, content: &str) {
    let tmp = path.with_extension("swp");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn release(started: &Path, go: &Path) {
    let _ = std::fs::remove_file(started);
    std::fs::write(go, "").unwrap();
}

fn decisions<'a>(log: &'a [serde_json::Value], hook: &str) -> Vec<&'a serde_json::Value> {
    log.iter()
        .filter(|r| r["type"] == "decision" && r["hook"] == hook)
        .collect()
}

/// Runs a session whose worker waits until `edit` (called once the worker runs) has changed
/// things and the watcher has had time to see it; returns the exit code and the output.
fn session_with_edit(
    w: &World,
    policy: &Path,
    extra: &[&str],
    edit: impl FnOnce(),
) -> (Option<i32>, std::process::Output) {
    let (worker, started, go) = waiting_worker(w);
    let auditor = w.script("a.sh", "echo checking");
    let mut args = vec!["--policy", policy.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut child = w.spawn(&worker, &auditor, &args, "t");
    w.wait_for(&started, Duration::from_secs(10));
    edit();
    std::thread::sleep(Duration::from_millis(800));
    release(&started, &go);
    let status = wait_timeout(&mut child, Duration::from_secs(20));
    (status.code(), child.wait_with_output().unwrap())
}

const REJECT: &str =
    "return { verdict = function(o, ctx) return 'impossible', 'old policy' end }\n";
const ACCEPT: &str = "return { verdict = function(o, ctx) return 'done', 'new policy' end }\n";

#[test]
fn an_edit_during_the_worker_decides_the_next_verdict() {
    let w = World::new();
    let policy = w.file("policy.lua", REJECT);
    let (code, out) = session_with_edit(&w, &policy, &[], || save(&policy, ACCEPT));
    assert_eq!(code, Some(0), "{}", text(&out));
    let id = w.session_id();
    let log = w.log(&id);
    let verdict = decisions(&log, "verdict");
    assert_eq!(verdict.len(), 1);
    assert_eq!(verdict[0]["generation"], 2);
    assert_eq!(verdict[0]["result"]["reason"], "new policy");
    assert!(
        log.iter()
            .any(|r| r["type"] == "policy_reload" && r["generation"] == 2)
    );
    let state = w.state(&id);
    let last = w.last_history(&id);
    assert_eq!(last["generation"], 2);
    assert_eq!(state["policy"]["generation"], 2);
}

#[test]
fn a_broken_edit_is_never_activated_and_a_fix_is() {
    let w = World::new();
    let policy = w.file("policy.lua", REJECT);
    let (worker, started, go) = waiting_worker(&w);
    let auditor = w.script("a.sh", "echo checking");
    let mut child = w.spawn(
        &worker,
        &auditor,
        &["--policy", policy.to_str().unwrap()],
        "t",
    );
    w.wait_for(&started, Duration::from_secs(10));
    save(
        &policy,
        "return {\n  verdict = function(o, ctx)\n    return 'done'\n",
    );
    std::thread::sleep(Duration::from_millis(1500));
    let id = w.session_id();
    assert_eq!(w.trace(&id).last().unwrap(), "WORKER_EXECUTING");
    save(&policy, ACCEPT);
    std::thread::sleep(Duration::from_millis(800));
    release(&started, &go);
    let status = wait_timeout(&mut child, Duration::from_secs(20));
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(0), "{}", text(&out));
    let log = w.log(&id);
    let failed: Vec<_> = log
        .iter()
        .filter(|r| r["type"] == "policy_reload_failed")
        .collect();
    assert_eq!(failed.len(), 1, "{log:?}");
    assert!(
        failed[0]["message"]
            .as_str()
            .unwrap()
            .contains("policy.lua"),
        "{failed:?}"
    );
    // The fix is generation 2: a broken edit consumes no generation.
    assert_eq!(decisions(&log, "verdict")[0]["generation"], 2);
}

#[test]
fn a_broken_edit_leaves_the_session_on_the_last_good_policy() {
    let w = World::new();
    let policy = w.file("policy.lua", ACCEPT);
    let (code, out) = session_with_edit(&w, &policy, &[], || {
        save(&policy, "return { verdict = 42 }")
    });
    assert_eq!(code, Some(0), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("policy.lua"),
        "the failed reload is shown: {err}"
    );
    let log = w.log(&w.session_id());
    assert_eq!(decisions(&log, "verdict")[0]["generation"], 1);
}

#[test]
fn a_policy_inside_the_workdir_edited_by_the_worker_is_not_activated() {
    let w = World::new();
    let policy = w.work().join("policy.lua");
    std::fs::write(&policy, REJECT).unwrap();
    // The worker tries to approve itself by rewriting the policy.
    let worker = w.script(
        "w.sh",
        &format!(
            "printf \"%s\" \"{}\" > policy.swp && mv policy.swp policy.lua; sleep 1; echo done",
            ACCEPT.trim()
        ),
    );
    let auditor = w.script("a.sh", "echo checking");
    let trust_file = w.private.path().join("trust.json");
    let out = w
        .cmd()
        .env("ONESHOT_TRUST_FILE", &trust_file)
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor])
        .args(["--policy", policy.to_str().unwrap(), "t"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "still the old policy: {}", text(&out));
    let log = w.log(&w.session_id());
    assert!(
        log.iter().any(|r| r["type"] == "policy_untrusted"),
        "the refused edit is recorded: {log:?}"
    );
    assert_eq!(decisions(&log, "verdict")[0]["generation"], 1);
}

#[test]
fn editing_a_required_module_reloads() {
    let w = World::new();
    let common = w.file("common.lua", "return { word = 'impossible' }\n");
    let policy = w.file(
        "policy.lua",
        "local common = require('common')\nreturn { verdict = function(o, ctx) return common.word end }\n",
    );
    let (code, out) = session_with_edit(&w, &policy, &[], || {
        save(&common, "return { word = 'done' }\n")
    });
    assert_eq!(code, Some(0), "{}", text(&out));
    let log = w.log(&w.session_id());
    assert_eq!(decisions(&log, "verdict")[0]["generation"], 2);
}

#[test]
fn raising_max_iterations_mid_session_lets_it_continue() {
    let w = World::new();
    let policy = w.file("policy.lua", "return { limits = { max_iterations = 1 } }\n");
    let (worker, started, go) = waiting_worker(&w);
    // Retry once, then accept.
    let auditor = w.script(
        "a.sh",
        "if [ \"$ONESHOT_ITERATION\" -ge 2 ]; then echo 'VERDICT: DONE'; else echo 'VERDICT: RETRY once more'; fi",
    );
    let mut child = w.spawn(
        &worker,
        &auditor,
        &["--policy", policy.to_str().unwrap()],
        "t",
    );
    w.wait_for(&started, Duration::from_secs(10));
    save(&policy, "return { limits = { max_iterations = 3 } }\n");
    std::thread::sleep(Duration::from_millis(800));
    release(&started, &go);
    // Iteration 2 waits for the go signal too.
    w.wait_for(&started, Duration::from_secs(10));
    release(&started, &go);
    let status = wait_timeout(&mut child, Duration::from_secs(20));
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(0), "{}", text(&out));
    let state = w.state(&w.session_id());
    assert_eq!(state["iteration_count"], 2);
    assert_eq!(state["max_iterations"], 3);
}

#[test]
fn policy_reload_off_keeps_the_first_policy() {
    let w = World::new();
    let policy = w.file("policy.lua", REJECT);
    let (code, out) = session_with_edit(&w, &policy, &["--policy-reload", "off"], || {
        save(&policy, ACCEPT)
    });
    assert_eq!(code, Some(3), "{}", text(&out));
}

#[test]
fn resume_refuses_a_policy_the_worker_rewrote_until_it_is_trusted() {
    let w = World::new();
    let policy = w.work().join("policy.lua");
    std::fs::write(&policy, REJECT).unwrap();
    let trust_file = w.private.path().join("trust.json");
    let marker = w.tmp.path().join("started");
    // First run: rewrite the policy to approve itself, then hang until interrupted.
    let worker = w.script(
        "w.sh",
        &format!(
            "if [ -f {m} ]; then echo again; exit 0; fi; touch {m}; \
             printf \"%s\" \"{accept}\" > policy.swp && mv policy.swp policy.lua; sleep 60",
            m = marker.display(),
            accept = ACCEPT.trim()
        ),
    );
    let auditor = w.script("a.sh", "echo checking");
    let mut child = w
        .cmd()
        .env("ONESHOT_TRUST_FILE", &trust_file)
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor])
        .args(["--policy", policy.to_str().unwrap(), "t"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    w.wait_for(&marker, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(500));
    signal(child.id(), SIGINT);
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(15)).code(),
        Some(130)
    );
    let id = w.session_id();
    let resume = || {
        w.cmd()
            .env("ONESHOT_TRUST_FILE", &trust_file)
            .args(["resume", &id])
            .output()
            .unwrap()
    };
    let refused = resume();
    assert_eq!(code(&refused), 4, "{}", text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("oneshot policy trust"), "{err}");
    assert_eq!(
        w.trace(&id).last().unwrap(),
        "INTERRUPTED",
        "refusal changes nothing"
    );

    let trusted = w
        .cmd()
        .env("ONESHOT_TRUST_FILE", &trust_file)
        .args(["policy", "trust"])
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(code(&trusted), 0, "{}", text(&trusted));
    let out = resume();
    assert_eq!(
        code(&out),
        0,
        "now the trusted edit decides: {}",
        text(&out)
    );
    let state = w.state(&id);
    assert_eq!(state["policy"]["generation"], 2);
}

/// The gap: the policy file lives outside the workdir, but a module it loads from the
/// workdir is rewritten by the worker. A resume must not load that module untrusted.
#[test]
fn resume_refuses_a_module_the_worker_rewrote_until_it_is_trusted() {
    let w = World::new();
    let lib = w.work().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    let module = lib.join("verdicts.lua");
    std::fs::write(&module, "return { word = 'impossible' }\n").unwrap();
    let policy = w.file(
        "policy.lua",
        "local v = require('verdicts')\nreturn { verdict = function() return v.word, 'module' end }\n",
    );
    let trust_file = w.private.path().join("trust.json");
    let marker = w.tmp.path().join("started");
    let worker = w.script(
        "w.sh",
        &format!(
            "if [ -f {m} ]; then exit 0; fi; touch {m}; \
             echo \"return {{ word = 'done' }}\" > lib/verdicts.lua; sleep 60",
            m = marker.display()
        ),
    );
    let auditor = w.script("a.sh", "echo checking");
    let lib_arg = lib.display().to_string();
    let mut child = w
        .cmd()
        .env("ONESHOT_TRUST_FILE", &trust_file)
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor])
        .args([
            "--policy",
            policy.to_str().unwrap(),
            "--policy-path",
            &lib_arg,
        ])
        .args(["--policy-reload", "off", "t"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    w.wait_for(&marker, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id(), SIGINT);
    assert_eq!(
        wait_timeout(&mut child, Duration::from_secs(15)).code(),
        Some(130)
    );
    let id = w.session_id();
    let out = w
        .cmd()
        .env("ONESHOT_TRUST_FILE", &trust_file)
        .args(["resume", &id])
        .output()
        .unwrap();
    assert_eq!(code(&out), 4, "{}", text(&out));
    assert!(text(&out).contains("verdicts.lua"), "{}", text(&out));
    assert_eq!(w.trace(&id).last().unwrap(), "INTERRUPTED");
}
