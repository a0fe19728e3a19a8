//! `oneshot job replay`: a job's recorded judgements asked again of another policy through the
//! job core's rules, on a job run by the real binary.

use crate::job_env;
use job_env::{Env, GOOD_WORKER};
use serde_json::Value;

const SURE: &str =
    r#"echo '{"verdict": "done", "reason": "all green", "confidence": 0.97, "open_criteria": []}'"#;

fn policy(name: &str) -> String {
    format!("{}/policies/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn replay_says_where_another_policy_would_have_sent_the_job() {
    let env = Env::new();
    // Under the built-in policy a confident, low-risk result waits for a human.
    let id = env.create(GOOD_WORKER, SURE, &["--risk", "low", "--activate"]);
    env.ok(&["job", "run"]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");

    // Its own policy again: the same.
    let same = env.ok(&["job", "replay", &id, "--exit-code"]);
    assert!(
        same.contains("#1 step 1 approve: APPROVAL_REQUIRED"),
        "{same}"
    );
    assert!(
        same.contains("same: every decision goes where it went"),
        "{same}"
    );

    // Under auto-approve.lua it would have been approved, and the report says so once.
    let auto = policy("auto-approve.lua");
    let out = env.oneshot(&["job", "replay", &id, "--policy", &auto, "--exit-code"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("→ SUCCESS (confidence 0.97 on a low-risk job)  [DIFFERS]"),
        "{text}"
    );
    assert!(
        text.contains("differs: at decision 1 (step 1, approve) this policy sends the job to SUCCESS where it went to APPROVAL_REQUIRED"),
        "{text}"
    );
    let v: Value =
        serde_json::from_str(&env.ok(&["job", "replay", &id, "--policy", &auto, "--json"]))
            .unwrap();
    assert_eq!(v["verdict"], "differs");
    assert_eq!(v["decisions"][0]["hook"], "approve");
    assert_eq!(v["decisions"][0]["replayed"]["outcome"], "SUCCESS");
    assert_eq!(v["decisions"][0]["compared"], "differs");
    assert!(
        v["policy_hash"].as_str().is_some_and(|h| !h.is_empty()),
        "{v}"
    );
}

#[test]
fn rust_bounds_hold_in_a_replay_and_a_job_without_decisions_says_so() {
    let env = Env::new();
    // A failed session: the auditor says impossible. No policy may approve it, in a replay
    // either — auto-approve.lua or one that approves everything.
    let id = env.create(
        GOOD_WORKER,
        "echo VERDICT: IMPOSSIBLE",
        &["--risk", "low", "--activate"],
    );
    env.ok(&["job", "run"]);
    assert_eq!(env.state(&id), "INTERVENTION_REQUIRED");
    let yes = env.dir.path().join("yes.lua");
    std::fs::write(
        &yes,
        "return { approve = function(result, job) return 'approve' end }\n",
    )
    .unwrap();
    let out = env.ok(&["job", "replay", &id, "--policy", yes.to_str().unwrap()]);
    assert!(out.contains("INTERVENTION_REQUIRED"), "{out}");
    assert!(!out.contains("→ SUCCESS"), "{out}");

    // A job never stepped has nothing to replay.
    let draft = env.create(GOOD_WORKER, SURE, &[]);
    let out = env.ok(&["job", "replay", &draft]);
    assert!(out.contains("has no decisions to replay"), "{out}");
    // A policy that does not load is a usage error naming it.
    let bad = env.dir.path().join("bad.lua");
    std::fs::write(&bad, "return {").unwrap();
    let out = env.oneshot(&["job", "replay", &id, "--policy", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad.lua"),
        "{out:?}"
    );
}
