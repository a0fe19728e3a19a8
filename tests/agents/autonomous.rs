//! A real Claude worker's turns through oneshot (../shared/agents/turns.md): a background task
//! outliving its `result` gets the turn it wakes the agent for, and the session waits for it;
//! `limits.background_wait` stops one that runs too long; `oneshot say` reaches the running
//! agent — merged into its turn at the next tool result, or preempting it with `--now`.

use super::harness::{Run, Sandbox, run};
use super::with_oneshot::{LIMIT, log_records, oneshot, session_dir, state};
use crate::fake_model::{FakeModel, Reply};
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

/// A Bash call the model makes to start `command` in the background.
fn background(command: &str) -> Reply {
    Reply::Call {
        name: "Bash".into(),
        args: json!({"command": command, "description": "background job", "run_in_background": true}),
    }
}

/// oneshot with a Claude worker against `model` and an auditor that accepts; `None` without
/// Claude.
fn session(sb: &Sandbox, model: &FakeModel, extra: &[&str], task: &str) -> Option<Command> {
    let claude = super::claude::claude(sb, model)?;
    let mut c = oneshot(sb, &[&claude]);
    c.args(["--worker", "claude", "--auditor-cmd", "echo VERDICT: done"])
        .args(extra)
        .arg(task);
    Some(c)
}

fn turns(records: &[Value]) -> Vec<(String, String)> {
    records
        .iter()
        .filter(|r| r["type"] == "turn")
        .map(|r| {
            (
                r["event"].as_str().unwrap().to_string(),
                r["owner"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn statuses(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["type"] == "message")
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_background_task_outliving_its_result_gets_its_own_turn_and_the_session_waits() {
    let sb = Sandbox::new();
    // Longer than Claude's 5 s grace after its input ends: closed at the first result, the
    // task would be killed and its turn never taken.
    let model = FakeModel::with([
        background("sleep 7; echo BGDONE > bg-marker.txt"),
        Reply::Text("started it in the background".into()),
        Reply::Text("the background job finished: all good".into()),
    ]);
    let Some(c) = session(&sb, &model, &[], "run the job in the background") else {
        return;
    };
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(
        sb.work().join("bg-marker.txt").is_file(),
        "the background task ran to its end"
    );
    let requests = model.model_requests();
    assert_eq!(requests.len(), 3, "the autonomous turn asked the model");
    assert!(
        requests[2].body_text().contains("task-notification"),
        "{}",
        requests[2].body_text()
    );
    let records = log_records(&sb);
    assert_eq!(
        turns(&records),
        [
            ("began".into(), "foreground".into()),
            ("ended".into(), "foreground".into()),
            ("began".into(), "autonomous".into()),
            ("ended".into(), "autonomous".into()),
        ]
    );
    // The agent's own turn is part of the run's account the auditor and `show` read.
    let show = oneshot(&sb, &[])
        .args(["show", "--iteration", "1"])
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(
        show.contains("the background job finished: all good"),
        "{show}"
    );
    assert!(show.contains("its own turn"), "{show}");
}

#[test]
fn background_wait_stops_a_task_that_runs_too_long() {
    let sb = Sandbox::new();
    let policy = sb.tmp.path().join("p.lua");
    std::fs::write(&policy, r#"return { limits = { background_wait = "2s" } }"#).unwrap();
    let model = FakeModel::with([
        background("sleep 40; echo LATE > late-marker.txt"),
        Reply::Text("started a long one".into()),
    ]);
    let Some(c) = session(
        &sb,
        &model,
        &["--policy", policy.to_str().unwrap()],
        "start the long job",
    ) else {
        return;
    };
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(
        r.elapsed < Duration::from_secs(35),
        "the task was stopped, not waited for: {:?}",
        r.elapsed
    );
    assert!(!sb.work().join("late-marker.txt").exists());
    let records = log_records(&sb);
    assert!(
        records.iter().any(|r| r["type"] == "note"
            && r["message"]
                .as_str()
                .unwrap()
                .contains("background tasks still ran after 2s (limits.background_wait)")),
        "{records:#?}"
    );
    assert_eq!(
        model.model_requests().len(),
        2,
        "no turn for a stopped task"
    );
}

/// Runs `c` on a thread; its result when it ends.
fn spawn(c: Command) -> std::thread::JoinHandle<Run> {
    std::thread::spawn(move || run(c, LIMIT))
}

/// `oneshot say` to the sandbox's one session.
fn say(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    let id = state_id(sb);
    let out = oneshot(sb, &[])
        .env("ONESHOT_ACTOR", "ann")
        .args(["say", &id])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    out
}

fn state_id(sb: &Sandbox) -> String {
    session_dir(sb)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_message_reaches_a_running_claude_at_its_next_tool_result() {
    let sb = Sandbox::new();
    let model = FakeModel::with([
        Reply::Bash("sleep 6; echo slept".into()),
        Reply::Text("done, with tabs".into()),
    ]);
    let Some(c) = session(&sb, &model, &[], "format the file") else {
        return;
    };
    let handle = spawn(c);
    assert!(model.wait_for_model_requests(1, Duration::from_secs(60)));
    // The Bash tool runs now: the message joins the turn at its result.
    let out = say(&sb, &["use tabs, not spaces", "--wait", "30s"]);
    let said = String::from_utf8_lossy(&out.stdout);
    let r = handle.join().unwrap();
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let requests = model.model_requests();
    assert!(
        requests[1].body_text().contains("use tabs, not spaces"),
        "the model saw it in the same conversation: {}",
        requests[1].body_text()
    );
    assert!(said.contains("the worker took message"), "{said}");
    let records = log_records(&sb);
    assert_eq!(statuses(&records), ["received", "sent", "taken"]);
    assert_eq!(state(&sb)["messages"][0]["status"], "taken");
}

#[test]
fn now_preempts_a_turn_waiting_on_the_model() {
    let sb = Sandbox::new();
    let model = FakeModel::with([Reply::Hang, Reply::Text("switched to the new plan".into())]);
    let Some(c) = session(&sb, &model, &[], "do the old plan") else {
        return;
    };
    let handle = spawn(c);
    assert!(model.wait_for_model_requests(1, Duration::from_secs(60)));
    say(
        &sb,
        &["--now", "drop that; do the new plan", "--wait", "30s"],
    );
    let r = handle.join().unwrap();
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let requests = model.model_requests();
    assert!(requests.len() >= 2);
    assert!(
        requests
            .last()
            .unwrap()
            .body_text()
            .contains("drop that; do the new plan")
    );
    let records = log_records(&sb);
    assert!(statuses(&records).contains(&"taken".to_string()));
    assert!(
        records
            .iter()
            .any(|r| r["type"] == "turn" && r["event"] == "ended" && r["interrupted"] == true),
        "the preempted turn ended interrupted"
    );
}

/// A worker whose first iteration ends with an autonomous turn, continued in a second
/// iteration: the first iteration's messages (its own turn's among them), which the transcript
/// holds, are not "missing" from the second's stream nor added to its account.
#[test]
fn a_continued_conversation_after_an_autonomous_turn_reconciles_only_its_own_run() {
    let sb = Sandbox::new();
    let model = FakeModel::with([
        background("sleep 6; echo BGDONE > bg-marker.txt"),
        Reply::Text("started it in the background".into()),
        Reply::Text("the background job finished zq-iter1".into()),
        Reply::Text("the second iteration is done zq-iter2".into()),
    ]);
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    // Rejects once, then accepts.
    let auditor = "sh -c 'if [ -e .audited ]; then echo \"VERDICT: DONE\"; \
                   else touch .audited; echo \"VERDICT: RETRY once more\"; fi'";
    let mut c = oneshot(&sb, &[&claude]);
    c.args(["--worker", "claude", "--auditor-cmd", auditor])
        .arg("run the job in the background, then once more");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(model.model_requests().len(), 4, "{}", r.dump());
    assert!(
        !r.stderr.contains("its output stream did not carry"),
        "{}",
        r.dump()
    );
    // The second run's account (its exit's tail, what the auditor and `ctx.worker_output`
    // read) is its own; its prompt, which carries the first attempt, is not looked at.
    let exits: Vec<Value> = log_records(&sb)
        .into_iter()
        .filter(|r| r["type"] == "process" && r["event"] == "exited" && r["role"] == "worker")
        .collect();
    assert_eq!(exits.len(), 2, "{exits:#?}");
    let second = exits[1]["tail"].as_str().unwrap_or_default();
    assert!(second.contains("zq-iter2"), "{second}");
    assert!(!second.contains("zq-iter1"), "{second}");
}
