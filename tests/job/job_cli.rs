//! `oneshot job`: every verb from every resting state the CLI can reach, through the real
//! binary, a real git repository and command-line agents.

use serde_json::Value;
use std::process::Command;

use crate::job_env;
use job_env::{DONE, Env, GOOD_WORKER};

const RESTING: [&str; 7] = [
    "DRAFT",
    "PENDING",
    "SUSPENDED",
    "CANCELED",
    "APPROVAL_REQUIRED",
    "INTERVENTION_REQUIRED",
    "SUCCESS",
];

/// Seed 001's matrix for the verbs, written out here so the CLI is checked against the seed,
/// not against itself. `step` from PENDING runs a whole step: with a worker that writes and an
/// auditor that says done, the built-in policy asks a human.
fn expected(state: &str, verb: &str) -> Option<&'static str> {
    Some(match (state, verb) {
        ("DRAFT", "activate") => "PENDING",
        ("DRAFT" | "PENDING", "suspend") => "SUSPENDED",
        ("PENDING", "step") => "APPROVAL_REQUIRED",
        ("APPROVAL_REQUIRED", "approve") => "SUCCESS",
        ("APPROVAL_REQUIRED", "reject") => "PENDING",
        ("INTERVENTION_REQUIRED", "resubmit") => "PENDING",
        ("SUSPENDED", "resume") => "PENDING",
        (
            "DRAFT" | "PENDING" | "SUSPENDED" | "APPROVAL_REQUIRED" | "INTERVENTION_REQUIRED",
            "cancel",
        ) => "CANCELED",
        _ => return None,
    })
}

#[test]
fn every_verb_from_every_resting_state() {
    let env = Env::new();
    let verbs = [
        "activate", "approve", "reject", "resubmit", "suspend", "resume", "cancel", "step",
    ];
    for state in RESTING {
        for verb in verbs {
            let id = env.job_in(state);
            let mut args = vec!["job", verb, id.as_str()];
            if verb == "reject" {
                args.extend(["--feedback", "not good enough"]);
            }
            let out = env.oneshot(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stdout = String::from_utf8_lossy(&out.stdout);
            match expected(state, verb) {
                Some(to) => {
                    assert!(out.status.success(), "{verb} in {state}: {stderr}");
                    assert_eq!(env.state(&id), to, "{verb} in {state}");
                    if verb != "step" {
                        assert!(
                            stdout.contains(&format!("{id}: {state} → {to}")),
                            "{verb} in {state}: {stdout}"
                        );
                    }
                }
                None => {
                    assert_eq!(out.status.code(), Some(4), "{verb} in {state}: {stderr}");
                    let msg = format!("{id}: {verb} is not allowed in {state}; ");
                    assert!(stderr.contains(&msg), "{verb} in {state}: {stderr}");
                    assert_eq!(env.state(&id), state, "{verb} in {state} moved it");
                }
            }
        }
    }
    // Each refusal says what the state allows (the machine's words).
    let id = env.job_in("PENDING");
    let out = env.oneshot(&["job", "approve", &id]);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("approve is not allowed in PENDING; PENDING allows: step, suspend, cancel")
    );
}

#[test]
fn reject_needs_feedback_and_the_next_prompt_carries_it() {
    let env = Env::new();
    let dump = env.dir.path().join("prompt.txt");
    let worker = format!(
        "sh -c 'cat \"$ONESHOT_PROMPT_FILE\" > {}; echo hi > f.txt'",
        dump.display()
    );
    let id = env.create(&worker, DONE, &["--activate"]);
    env.ok(&["job", "step", &id]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    assert!(
        !std::fs::read_to_string(&dump)
            .unwrap()
            .contains("CRITIQUE:")
    );

    let out = env.oneshot(&["job", "reject", &id]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--feedback"));
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");

    env.ok(&["job", "reject", &id, "--feedback", "also write bye"]);
    assert_eq!(env.state(&id), "PENDING");
    env.ok(&["job", "step"]);
    let prompt = std::fs::read_to_string(&dump).unwrap();
    for part in [
        "PREVIOUS ATTEMPT:",
        "CRITIQUE: also write bye",
        "INSTRUCTION:",
    ] {
        assert!(prompt.contains(part), "{part} missing from\n{prompt}");
    }
    assert!(prompt.contains("1 file changed"), "{prompt}");

    // The audit trail: each human decision, with its actor, in order.
    let audit: Vec<Value> = env
        .ok(&["job", "audit", &id, "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let actions: Vec<&str> = audit
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["create", "activate", "reject"]);
    assert!(audit.iter().all(|a| a["actor"] == "tester"));
    assert_eq!(audit[2]["metadata"]["feedback"], "also write bye");
    assert_eq!(audit[2]["metadata"]["from"], "APPROVAL_REQUIRED");
    assert!(audit[2]["metadata"]["diff_hash"].is_string());
}

#[test]
fn step_says_why_nothing_ran() {
    let env = Env::new();
    let out = env.oneshot(&["job", "step"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("none is claimable"));
    let id = env.create(GOOD_WORKER, DONE, &[]);
    let out = env.oneshot(&["job", "step", &id]);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("step is not allowed in DRAFT; DRAFT allows: activate, suspend, cancel")
    );
}

#[test]
fn run_steps_every_pending_job_and_list_show_diff_read_them() {
    let env = Env::new();
    let a = env.create(GOOD_WORKER, DONE, &["--activate", "--risk", "low"]);
    let b = env.create(GOOD_WORKER, "echo VERDICT: IMPOSSIBLE", &["--activate"]);
    let out = env.ok(&["job", "run", "--parallel", "2"]);
    assert!(
        out.contains(&format!("{a}  PENDING → PROVISIONING")),
        "{out}"
    );
    assert!(out.contains("2 steps ran"), "{out}");
    assert_eq!(env.state(&a), "APPROVAL_REQUIRED");
    assert_eq!(env.state(&b), "INTERVENTION_REQUIRED");

    let list = env.ok(&["job", "list", "--state", "approval_required"]);
    let listed = |id: &str| list.lines().any(|l| l.starts_with(id));
    assert!(listed(&a) && !listed(&b), "{list}");
    // Both wrote f.txt: flagged, whatever the filter shows.
    assert!(list.contains(&format!("⚠ overlaps {b}")), "{list}");
    assert!(
        list.contains("low") && list.contains("write hi to f.txt"),
        "{list}"
    );

    let show = env.ok(&["job", "show", &a]);
    for part in [
        "APPROVAL_REQUIRED",
        "History:",
        "Artifacts:",
        "v1  step 1",
        "by tester",
    ] {
        assert!(show.contains(part), "{part} missing from\n{show}");
    }
    let diff = env.ok(&["job", "diff", &a]);
    assert!(
        diff.contains("+++ b/f.txt") && diff.contains("+hi"),
        "{diff}"
    );
    // Nothing else is left to step.
    let out = env.ok(&["job", "run"]);
    assert!(out.contains("no job to step"), "{out}");
}

#[test]
fn create_refuses_what_a_step_could_not_use() {
    let env = Env::new();
    let bad = |args: &[&str], says: &str| {
        let mut all = vec!["job", "create"];
        all.extend_from_slice(args);
        all.push("task");
        let out = env.oneshot(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    };
    let cmds = ["--worker-cmd", "true", "--auditor-cmd", "true"];
    bad(
        &[&cmds[..], &["--source", "/nonexistent/dir"]].concat(),
        "--source",
    );
    let policy = env.dir.path().join("broken.lua");
    std::fs::write(&policy, "this is not lua (").unwrap();
    let p = policy.to_str().unwrap();
    bad(&[&cmds[..], &["--policy", p]].concat(), "--policy");
    bad(
        &["--worker", "nosuchagent", "--auditor-cmd", "true"],
        "--worker",
    );
    bad(&[&cmds[..], &["--input", "novalue"]].concat(), "KEY=VALUE");
    bad(
        &[&cmds[..], &["--base", "no-such-rev"]].concat(),
        "--base no-such-rev",
    );
    assert!(env.ok(&["job", "list"]).trim().is_empty());
    // A good base, and the task from stdin.
    let mut c = Command::new(env!("CARGO_BIN_EXE_oneshot"));
    c.arg("--state-dir").arg(env.state_dir());
    c.args(["job", "create", "--base", "HEAD", "--input", "ticket=APP-1"]);
    c.args([&cmds[..], &["-"]].concat()).current_dir(env.repo());
    let mut child = c
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin\nmore")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let id = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let job = env.show(&id);
    assert_eq!(job["job"]["spec"]["task"], "from stdin\nmore");
    assert_eq!(job["job"]["spec"]["base"], "HEAD");
    assert_eq!(job["job"]["spec"]["inputs"]["ticket"], "APP-1");
    assert_eq!(job["job"]["spec"]["worker"], "cmd:true");
    assert_eq!(job["job"]["state"], "DRAFT");
}

#[test]
fn an_unknown_id_is_a_usage_error() {
    let env = Env::new();
    let out = env.oneshot(&["job", "approve", "job-ffffffff"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("job-ffffffff"));
}

#[test]
fn help_teaches() {
    let env = Env::new();
    let help = env.ok(&["job", "--help"]);
    for part in [
        "create",
        "approve",
        "reject",
        "APPROVAL_REQUIRED",
        "Exit codes",
    ] {
        assert!(help.contains(part), "{part} missing from\n{help}");
    }
    let reject = env.ok(&["job", "reject", "--help"]);
    assert!(reject.contains("Examples:") && reject.contains("--feedback"));
}

#[test]
fn cancel_takes_a_job_from_its_runner_mid_step() {
    let env = Env::new();
    let id = env.create("sleep 30", DONE, &["--activate"]);
    let mut runner = Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .arg("--state-dir")
        .arg(env.state_dir())
        .args(["job", "step", &id, "--lease", "3s"])
        .current_dir(env.repo())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while env.state(&id) != "EXECUTING" {
        if start.elapsed().as_secs() > 20 {
            let _ = runner.kill();
            panic!("never reached EXECUTING");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Mid-step, only cancel is a human's; another runner is told who holds the job.
    let out = env.oneshot(&["job", "suspend", &id]);
    assert_eq!(out.status.code(), Some(4));
    let out = env.oneshot(&["job", "step", &id]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds its lease until"), "{err}");
    env.ok(&["job", "cancel", &id]);
    assert_eq!(env.state(&id), "CANCELED");
    // The runner's next heartbeat fails: it stops its session long before the worker's 30s.
    let out = runner.wait_with_output().unwrap();
    assert!(start.elapsed().as_secs() < 20);
    // It says what happened — a human canceled the job from EXECUTING — not the state its own
    // core reached unsaved (a killed session reads as a transient failure: RECOVERING).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{id}  now CANCELED: canceled by tester while it was EXECUTING"
        )),
        "{err}"
    );
    assert!(!err.contains("RECOVERING"), "{err}");
    assert_eq!(env.state(&id), "CANCELED");
}

#[test]
fn twenty_jobs_run_four_at_a_time_each_in_its_own_worktree() {
    let env = Env::new();
    let ids: Vec<String> = (0..20)
        .map(|_| env.create(GOOD_WORKER, DONE, &["--activate"]))
        .collect();
    env.ok(&["job", "run", "--parallel", "4"]);
    let mut worktrees = std::collections::BTreeSet::new();
    for id in &ids {
        let v = env.show(id);
        assert_eq!(v["job"]["state"], "APPROVAL_REQUIRED", "{id}: {v}");
        let ws = v["job"]["workspace"]["path"].as_str().unwrap().to_string();
        assert!(worktrees.insert(ws), "each job in its own worktree");
        // On the branch `create` named for the task: `oneshot/<slug>-<short id>`.
        let branch = &v["job"]["workspace"]["branch"];
        assert_eq!(*branch, v["job"]["spec"]["branch"], "{v}");
        assert_eq!(
            *branch,
            format!("oneshot/write-hi-to-f-txt-{}", &id["job-".len()..])
        );
    }
}

#[test]
fn two_runner_processes_on_one_store_never_run_the_same_step() {
    let env = Env::new();
    let ids: Vec<String> = (0..10)
        .map(|_| env.create("sh -c 'sleep 0.2; echo hi > f.txt'", DONE, &["--activate"]))
        .collect();
    let state = env.state_dir();
    let runners: Vec<_> = (0..2)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_oneshot"))
                .arg("--state-dir")
                .arg(&state)
                .args(["job", "run", "--parallel", "2"])
                .current_dir(env.repo())
                .output_async()
        })
        .collect();
    for r in runners {
        let out = r.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut by = std::collections::BTreeSet::new();
    for id in &ids {
        let v = env.show(id);
        assert_eq!(v["job"]["state"], "APPROVAL_REQUIRED", "{id}: {v}");
        let steps: Vec<&Value> = v["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["trigger"] == "step")
            .collect();
        assert_eq!(steps.len(), 1, "{id} stepped once: {v}");
        by.insert(steps[0]["by"].as_str().unwrap().to_string());
    }
    assert!(!by.is_empty());
}

#[test]
fn the_audit_trail_is_complete_after_a_scripted_human_session() {
    let env = Env::new();
    // One job approved after a reject, one suspended, resumed and canceled, one fixed and
    // resubmitted.
    let a = env.create(GOOD_WORKER, DONE, &[]);
    env.ok(&["job", "activate", &a]);
    env.ok(&["job", "step", &a]);
    env.ok(&["job", "reject", &a, "--feedback", "say hello instead"]);
    env.ok(&["job", "step", &a]);
    env.ok(&["job", "approve", &a]);
    let b = env.create(GOOD_WORKER, DONE, &[]);
    env.ok(&["job", "suspend", &b]);
    env.ok(&["job", "resume", &b]);
    env.ok(&["job", "cancel", &b]);
    let c = env.create(GOOD_WORKER, "echo VERDICT: IMPOSSIBLE", &["--activate"]);
    env.stuck(&c);
    env.ok(&["job", "resubmit", &c]);
    env.ok(&["job", "cancel", &c]);
    let trail: Vec<Value> = env
        .ok(&["job", "audit", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |id: &str| -> Vec<(String, String, String)> {
        trail
            .iter()
            .filter(|e| e["entity_id"] == id)
            .map(|e| {
                let m = &e["metadata"];
                (
                    e["action"].as_str().unwrap().to_string(),
                    m["from"].as_str().unwrap_or("-").to_string(),
                    m["to"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let t = |a: &str, f: &str, to: &str| (a.to_string(), f.to_string(), to.to_string());
    assert_eq!(
        of(&a),
        [
            t("create", "-", "DRAFT"),
            t("activate", "DRAFT", "PENDING"),
            t("reject", "APPROVAL_REQUIRED", "PENDING"),
            t("approve", "APPROVAL_REQUIRED", "SUCCESS"),
        ]
    );
    assert_eq!(
        of(&b),
        [
            t("create", "-", "DRAFT"),
            t("suspend", "DRAFT", "SUSPENDED"),
            t("resume", "SUSPENDED", "PENDING"),
            t("cancel", "PENDING", "CANCELED"),
        ]
    );
    assert_eq!(
        of(&c),
        [
            t("create", "-", "DRAFT"),
            t("activate", "DRAFT", "PENDING"),
            t("resubmit", "INTERVENTION_REQUIRED", "PENDING"),
            t("cancel", "PENDING", "CANCELED"),
        ]
    );
    // Every entry: an actor, a time, the entity; decisions about a result name its diff.
    let seqs: Vec<u64> = trail.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    for e in &trail {
        assert_eq!(e["actor"], "tester");
        assert_eq!(e["entity_type"], "job");
        assert!(e["at_ms"].as_u64().unwrap() > 0);
        if ["approve", "reject"].contains(&e["action"].as_str().unwrap()) {
            assert!(e["metadata"]["diff_hash"].is_string(), "{e}");
            assert!(e["metadata"]["policy_hash"].is_string(), "{e}");
        }
    }
    let reject = trail.iter().find(|e| e["action"] == "reject").unwrap();
    assert_eq!(reject["metadata"]["feedback"], "say hello instead");
}

/// Starts a command with its output captured, without waiting for it.
trait OutputAsync {
    fn output_async(&mut self) -> std::process::Child;
}

impl OutputAsync for Command {
    fn output_async(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

#[test]
fn cleanup_removes_a_workspace_only_when_its_work_is_safe() {
    let env = Env::new();
    let id = env.job_in("SUCCESS");
    // Made now, before the merge below, so its own commit is found nowhere else.
    let pending = env.job_in("APPROVAL_REQUIRED");
    let ws = env.show(&id)["job"]["workspace"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    // Unmerged: kept, and said why — once "failed to", and the flag that discards it named.
    let out = env.oneshot(&["job", "cleanup", &id]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!("oneshot: error: failed to clean up {id}: kept ")),
        "{err}"
    );
    assert!(
        err.contains(&format!("run `oneshot job cleanup {id} --discard`")),
        "{err}"
    );
    assert!(std::path::Path::new(&ws).is_dir());
    // Merged into the source: removed.
    let merged = Command::new("git")
        .args(["-c", "user.email=t@t", "-c", "user.name=t", "merge", "-q"])
        .arg(env.branch(&id))
        .current_dir(env.repo())
        .status()
        .unwrap();
    assert!(merged.success());
    env.ok(&["job", "cleanup", &id]);
    assert!(!std::path::Path::new(&ws).exists());
    // Only a finished job's workspace goes.
    let out = env.oneshot(&["job", "cleanup", &pending]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "oneshot: error: failed to clean up {pending}: it is APPROVAL_REQUIRED; only a \
             SUCCESS or CANCELED"
        )),
        "{err}"
    );
    // Discarded: the worktree goes, the unmerged branch stays.
    env.ok(&["job", "cancel", &pending]);
    env.ok(&["job", "cleanup", &pending, "--discard"]);
    let branches = Command::new("git")
        .args(["branch", "--list", &env.branch(&pending)])
        .current_dir(env.repo())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&branches.stdout).trim().is_empty());
    // Each removal is in the audit trail, with who did it and what went; the refusals
    // changed nothing and are not.
    let cleanups = |job: &str| -> Vec<serde_json::Value> {
        env.ok(&["job", "audit", job, "--json"])
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|e| e["action"] == "cleanup")
            .collect()
    };
    let merged = cleanups(&id);
    assert_eq!(merged.len(), 1, "{merged:?}");
    assert_eq!(merged[0]["actor"], "tester");
    let m = &merged[0]["metadata"];
    assert_eq!(m["discard"], false, "{m}");
    assert_eq!(m["path"], ws.as_str(), "{m}");
    assert_eq!(m["branch"], env.branch(&id), "{m}");
    assert!(m.get("kept").is_none(), "{m}");
    let discarded = cleanups(&pending);
    assert_eq!(discarded.len(), 1, "{discarded:?}");
    let m = &discarded[0]["metadata"];
    assert_eq!(m["discard"], true, "{m}");
    assert_eq!(m["state"], "CANCELED", "{m}");
    assert!(m["kept"].as_str().unwrap().contains("branch"), "{m}");
}

#[test]
fn the_auto_approve_policy_approves_only_a_confident_low_risk_result() {
    let env = Env::new();
    let policy = format!("{}/policies/auto-approve.lua", env!("CARGO_MANIFEST_DIR"));
    let sure = r#"echo '{"verdict": "done", "reason": "all green", "confidence": 0.97, "open_criteria": []}'"#;
    let low = env.create(
        GOOD_WORKER,
        sure,
        &["--policy", &policy, "--risk", "low", "--activate"],
    );
    let high = env.create(
        GOOD_WORKER,
        sure,
        &["--policy", &policy, "--risk", "high", "--activate"],
    );
    env.ok(&["job", "run"]);
    let v = env.show(&low);
    assert_eq!(v["job"]["state"], "SUCCESS", "{v}");
    assert!(
        v["job"]["reason"]
            .as_str()
            .unwrap()
            .contains("confidence 0.97 on a low-risk job")
    );
    let v = env.show(&high);
    assert_eq!(v["job"]["state"], "APPROVAL_REQUIRED", "{v}");
    assert!(v["job"]["reason"].as_str().unwrap().contains("risk high"));
}

#[test]
fn max_loops_lets_the_nth_step_reach_a_human_and_stops_the_one_past_it() {
    let env = Env::new();
    let id = env.create(GOOD_WORKER, DONE, &["--max-loops", "1", "--activate"]);
    // The first (and only) step of `--max-loops 1` ends as the policy says: a human may
    // approve it.
    env.ok(&["job", "step", &id]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    // A reject asks for another loop; that step is past the bound.
    env.ok(&["job", "reject", &id, "--feedback", "again"]);
    env.stuck(&id);
    let v = env.show(&id);
    assert_eq!(v["job"]["state"], "INTERVENTION_REQUIRED", "{v}");
    let reason = v["job"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "max loops passed: 2 steps since creation or the last resubmit \
             (limits.max_loops = 1); "
        ),
        "{reason}"
    );
    // A resubmit starts the count over: the next step reaches a human again.
    env.ok(&["job", "resubmit", &id]);
    env.ok(&["job", "step", &id]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
}

#[test]
fn show_prints_a_long_reason_whole_wrapped() {
    let env = Env::new();
    // A panel auditor that dissents at length: its reason is the job's reason.
    let words: Vec<String> = (0..60).map(|n| format!("finding{n}")).collect();
    let dissent = format!("{} and that is the END", words.join(" "));
    let script = env.dir.path().join("dissent.sh");
    std::fs::write(
        &script,
        format!(
            "echo '{{\"verdict\": \"retry\", \"reason\": \"{dissent}\", \
             \"confidence\": 0.9, \"open_criteria\": []}}'\n"
        ),
    )
    .unwrap();
    let panel = format!("cmd:sh {}", script.display());
    let id = env.create(GOOD_WORKER, DONE, &["--panel", &panel, "--activate"]);
    env.stuck(&id);
    let v = env.show(&id);
    assert_eq!(v["job"]["state"], "INTERVENTION_REQUIRED", "{v}");
    let reason = v["job"]["reason"].as_str().unwrap().to_string();
    assert!(reason.len() > 300 && reason.contains(&dissent), "{reason}");

    let shown = env.ok(&["job", "show", &id]);
    // Every line of the reason fits 100 columns (stdout is a pipe)…
    for line in shown.lines().filter(|l| l.contains("finding")) {
        assert!(line.chars().count() <= 100, "too wide: {line:?}\n{shown}");
    }
    // …and the reason is all there, in the header and in the history's last move.
    let flat = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("reason: {reason}")),
        "{reason}\nnot whole in\n{shown}"
    );
    assert!(flat.contains(&format!("({reason})")), "{shown}");
    assert!(!shown.contains('…'), "{shown}");
}
