//! Whole oneshot sessions with the real agent CLIs as worker and auditor (`--worker claude`,
//! `--auditor codex`, …), each against its own fake model server.

use super::harness::{Run, Sandbox, find, run};
use super::with_oneshot::{
    LIMIT, aider_args, codex_overrides, last_reason, log_records, oneshot, role_args, session_dir,
    state, tool_then, walk, worker_timeline,
};
use crate::fake_model::{FakeModel, Reply};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

/// Runs oneshot with a Claude worker pointed at `model` and an auditor that accepts;
/// `more` adds the rest (policy, options, the task). `None` when Claude is not installed.
fn claude_worker(sb: &Sandbox, model: &FakeModel, more: impl FnOnce(&mut Command)) -> Option<Run> {
    with_claude(sb, model, |c| {
        c.args(["--worker", "claude", "--auditor-cmd", "echo VERDICT: done"]);
        more(c);
    })
}

/// Runs oneshot with Claude pointed at `model` (its environment and binary); `args` says what
/// plays which role and the task. `None` when Claude is not installed.
fn with_claude(sb: &Sandbox, model: &FakeModel, args: impl FnOnce(&mut Command)) -> Option<Run> {
    let claude = super::claude::claude(sb, model)?;
    let mut c = oneshot(sb, &[&claude]);
    args(&mut c);
    Some(run(c, LIMIT))
}

/// A Claude worker writes a file through its Write tool (allowed by the default `permit`); a
/// Codex auditor rejects once, then accepts. The second iteration continues Claude's own
/// conversation: its first request carries the first iteration and the critique.
#[test]
fn claude_worker_and_codex_auditor_loop_to_completion() {
    let sb = Sandbox::new();
    let file = sb.work().join("notes.txt");
    let claude_model = FakeModel::with([
        Reply::Write {
            path: file.display().to_string(),
            content: "line one\n".into(),
        },
        Reply::Text("wrote line one zq21".into()),
        Reply::Write {
            path: file.display().to_string(),
            content: "line one\nline two\n".into(),
        },
        Reply::Text("added line two".into()),
    ]);
    let codex_model = FakeModel::with([
        Reply::Text(r#"{"verdict": "retry", "reason": "add a second line zq22"}"#.into()),
        Reply::Text(r#"{"verdict": "done", "reason": "both lines are there"}"#.into()),
    ]);
    let (Some(claude), Some(codex)) = (
        super::claude::claude(&sb, &claude_model),
        super::codex::codex(&sb, &codex_model),
    ) else {
        return;
    };
    let mut c = oneshot(&sb, &[&claude, &codex]);
    c.args(["--worker", "claude", "--auditor", "codex:gpt-5.5"])
        .args(role_args("auditor", &codex_overrides(&codex)))
        .arg("write notes.txt with two lines");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    // Its answers name no confidence or open criteria: said, and the verdict read from them.
    assert!(
        r.stderr.contains("does not fit the verdict schema"),
        "{}",
        r.dump()
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "line one\nline two\n"
    );
    let s = state(&sb);
    assert_eq!(s["state"], "COMPLETED", "{s:#}");
    assert_eq!(s["iteration_count"], 2);
    let sid = s["agents"]["worker_session"].as_str().expect("journaled");
    assert_eq!(s["agents"]["worker"]["kind"], "claude");
    let reqs = claude_model.model_requests();
    assert_eq!(reqs.len(), 4, "{}", r.dump());
    // Iteration 1's messages, in the transcript iteration 2 continued, are not "missing" from
    // iteration 2's stream, nor added to its account.
    assert!(
        !r.stderr.contains("its output stream did not carry"),
        "{}",
        r.dump()
    );
    // Iteration 2 resumed the conversation: the first turn and the critique are both there.
    let second = reqs[2].body_text();
    assert!(second.contains("wrote line one zq21"), "{second}");
    assert!(second.contains("add a second line zq22"), "{second}");
    assert_eq!(
        reqs[0].count("write notes.txt with two lines"),
        1,
        "prompt sent once"
    );
    // The transcript Claude keeps is the session oneshot journaled.
    let projects = sb.home().join(".claude/projects");
    assert!(
        walk(&projects)
            .iter()
            .any(|p| p.ends_with(format!("{sid}.jsonl"))),
        "no transcript for {sid}"
    );
}

/// Refused credentials end the session at once, naming the agent and what to set.
#[test]
fn a_401_fails_fast_and_says_what_to_fix() {
    let sb = Sandbox::new();
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(401));
    let Some(r) = with_claude(&sb, &model, |c| {
        c.args(["--worker", "claude", "--auditor-cmd", "true", "do it"]);
    }) else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let s = state(&sb);
    assert_eq!(s["state"], "FAILED", "{s:#}");
    let last = last_reason(&s);
    assert_eq!(last["kind"], "agent_failed", "{last:#}");
    assert_eq!(last["agent"], "claude");
    assert_eq!(last["error"], "auth");
    assert!(
        r.stderr.contains("ANTHROPIC_API_KEY") || r.stdout.contains("ANTHROPIC_API_KEY"),
        "{}",
        r.dump()
    );
    assert_eq!(s["iteration_count"], 1, "not retried");
}

/// A Gemini worker runs its shell tool; the auditor command accepts.
#[test]
fn gemini_worker_runs_its_tool_in_a_session() {
    let sb = Sandbox::new();
    let model = FakeModel::with([
        Reply::Bash("echo from gemini > g.txt".into()),
        Reply::Text("made g.txt".into()),
    ]);
    let Some(gemini) = super::gemini::command(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&gemini]);
    c.args(["--worker", &format!("gemini:{}", super::gemini::MODEL)])
        .args(["--auditor-cmd", "echo VERDICT: done", "make g.txt"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(
        std::fs::read_to_string(sb.work().join("g.txt")).unwrap(),
        "from gemini\n"
    );
    assert_eq!(
        model.model_requests()[0].count("make g.txt"),
        1,
        "prompt sent once"
    );
    assert_eq!(state(&sb)["state"], "COMPLETED");
}

/// An Aider worker's whole-file edit lands; a refused key, which Aider reports with exit 0, is
/// still a failure.
#[test]
fn aider_worker_edits_and_its_401_is_read_from_its_words() {
    let sb = Sandbox::new();
    let file = sb.work().join("a.txt");
    let model = FakeModel::with([Reply::Write {
        path: "a.txt".into(),
        content: "from aider\n".into(),
    }]);
    let Some(aider) = super::aider::command(&sb, &model) else {
        return;
    };
    let extra = aider_args();
    let mut c = oneshot(&sb, &[&aider]);
    c.args(["--worker", "aider"])
        .args(role_args("worker", &extra))
        .args(["--auditor-cmd", "echo VERDICT: done", "write a.txt"])
        .arg("--max-iterations=1");
    let r: Run = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    // Aider's whole-file format ends the file with the fence's newline.
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().trim_end(),
        "from aider"
    );

    let sb = Sandbox::new();
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(401));
    let Some(aider) = super::aider::command(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&aider]);
    c.args(["--worker", "aider"])
        .args(role_args("worker", &extra))
        .args(["--auditor-cmd", "echo VERDICT: done", "write a.txt"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let s = state(&sb);
    assert_eq!(s["state"], "FAILED", "{s:#}");
    let _ = find;
}

/// The policy's `permit` hook answers Claude's tool requests: `rm -rf` is denied (the command
/// never runs, the model reads the reason), another Bash call is allowed; both decisions are in
/// the log.
#[test]
fn permit_denies_a_claude_bash_call_and_the_model_sees_why() {
    let sb = Sandbox::new();
    std::fs::write(sb.work().join("keep.txt"), "keep\n").unwrap();
    let policy = sb.tmp.path().join("guard.lua");
    std::fs::write(
        &policy,
        r#"return {
  permit = function(tool, input, ctx)
    if tool == "Bash" and input.command:find("rm -rf", 1, true) then
      return "deny", "no rm -rf here zq31"
    end
    return "allow"
  end,
}"#,
    )
    .unwrap();
    let model = FakeModel::with([
        Reply::Bash("rm -rf keep.txt".into()),
        Reply::Bash("echo allowed > ok.txt".into()),
        Reply::Text("done".into()),
    ]);
    let Some(r) = claude_worker(&sb, &model, |c| {
        c.arg("--policy").arg(&policy).arg("clean up");
    }) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert!(
        sb.work().join("keep.txt").exists(),
        "the denied command never ran"
    );
    assert_eq!(
        std::fs::read_to_string(sb.work().join("ok.txt")).unwrap(),
        "allowed\n"
    );
    let reqs = model.model_requests();
    assert!(
        reqs[1].body_text().contains("no rm -rf here zq31"),
        "the model sees the denial"
    );
    let permits: Vec<Value> = log_records(&sb)
        .into_iter()
        .filter(|v| v["type"] == "decision" && v["hook"] == "permit")
        .collect();
    assert_eq!(permits.len(), 2, "{permits:#?}");
    assert_eq!(permits[0]["result"]["allow"], false);
    assert_eq!(permits[0]["input"]["tool"], "Bash");
    assert_eq!(permits[1]["result"]["allow"], true);
}

/// A provider that fails with 500 (Claude gives up after its own retry) is retried by oneshot
/// after the policy's backoff; the next try succeeds and the session completes.
#[test]
fn a_500_is_retried_with_backoff_then_succeeds() {
    let sb = Sandbox::new();
    let policy = sb.tmp.path().join("retry.lua");
    std::fs::write(
        &policy,
        r#"return { limits = { retry = { attempts = 2, initial_delay = "300ms" } } }"#,
    )
    .unwrap();
    let model = FakeModel::with([
        Reply::Status(500),
        Reply::Status(500),
        Reply::Text("recovered zq41".into()),
    ]);
    let Some(r) = claude_worker(&sb, &model, |c| {
        c.arg("--policy").arg(&policy).arg("try hard");
    }) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let s = state(&sb);
    assert_eq!(s["state"], "COMPLETED", "{s:#}");
    assert_eq!(s["iteration_count"], 1, "a retry costs no iteration");
    assert_eq!(model.model_requests().len(), 3);
    assert!(
        r.stderr.contains("transient provider failure") || r.stdout.contains("transient"),
        "{}",
        r.dump()
    );
}

/// Starts a Claude worker whose Bash tool runs `sleep` with a marker, waits until the tool
/// runs, then lets `act` hit oneshot; no process of the marker may survive.
fn claude_tool_then(act: impl FnOnce(u32), expect_state: Option<&str>) {
    tool_then(
        "claude",
        |sb, model| super::claude::claude(sb, model).map(|c| vec![c]),
        act,
        expect_state,
    );
}

/// Ctrl-C while Claude's Bash tool runs: the interrupt goes through Claude's control protocol,
/// the session pauses, and the tool (in a process group of its own) is gone.
#[test]
fn ctrl_c_during_a_claude_tool_call_leaves_no_process() {
    claude_tool_then(
        |pid| super::containment::kill_with(pid as i32, libc::SIGINT),
        Some("INTERRUPTED"),
    );
}

/// `kill -9` of oneshot while Claude's Bash tool runs `sleep 300`: nothing survives.
#[test]
fn kill_9_of_oneshot_during_a_claude_tool_call_leaves_no_process() {
    claude_tool_then(
        |pid| super::containment::kill_with(pid as i32, libc::SIGKILL),
        None,
    );
}

/// A Claude auditor is asked for the verdict schema (`--json-schema`): it answers through its
/// StructuredOutput tool, and the verdict comes from `structured_output`. A Codex auditor gets
/// the same schema as its response format (`--output-schema`).
#[test]
fn agent_auditors_answer_in_the_verdict_schema() {
    let sb = Sandbox::new();
    let model = FakeModel::with([
        Reply::Json(serde_json::json!({
            "verdict": "retry", "reason": "needs a test zq51", "confidence": 0.9,
            "open_criteria": ["a test"]
        })),
        Reply::Json(serde_json::json!({
            "verdict": "done", "reason": "fine", "confidence": 0.8, "open_criteria": []
        })),
    ]);
    let Some(r) = with_claude(&sb, &model, |c| {
        c.args([
            "--worker-cmd",
            "sh -c 'echo work >> w.txt'",
            "--auditor",
            "claude",
        ])
        .arg("work");
    }) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let s = state(&sb);
    assert_eq!(s["state"], "COMPLETED", "{s:#}");
    assert_eq!(s["iteration_count"], 2);
    let reqs = model.model_requests();
    assert!(
        reqs[0].tool_names().iter().any(|t| t == "StructuredOutput"),
        "{:?}",
        reqs[0].tool_names()
    );
    let prompt2 = std::fs::read_to_string(sb.work().join("w.txt")).unwrap();
    assert_eq!(prompt2, "work\nwork\n");
    let history = s["history"].to_string();
    assert!(history.contains("needs a test zq51"), "{history}");

    let sb = Sandbox::new();
    let codex_model = FakeModel::with([Reply::Text(
        r#"{"verdict":"done","reason":"ok","confidence":1,"open_criteria":[]}"#.into(),
    )]);
    let Some(codex) = super::codex::codex(&sb, &codex_model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&codex]);
    c.args(["--worker-cmd", "true", "--auditor", "codex:gpt-5.5"])
        .args(role_args("auditor", &codex_overrides(&codex)))
        .arg("work");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let body = codex_model.model_requests()[0].body_text();
    assert!(
        body.contains("open_criteria"),
        "the schema reached the model: {body}"
    );
}

/// Claude's own usage report (turns in its `result`) counts against the policy's budget: a run
/// of two turns under a one-turn budget fails the session with `budget_exceeded`.
#[test]
fn a_budget_stops_a_session() {
    let sb = Sandbox::new();
    let policy = sb.tmp.path().join("budget.lua");
    std::fs::write(&policy, "return { limits = { budget = { turns = 1 } } }").unwrap();
    let model = FakeModel::with([Reply::Bash("echo hi".into()), Reply::Text("done".into())]);
    let Some(r) = claude_worker(&sb, &model, |c| {
        c.arg("--policy").arg(&policy).arg("say hi");
    }) else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let s = state(&sb);
    assert_eq!(s["state"], "FAILED", "{s:#}");
    let last = last_reason(&s);
    assert_eq!(last["kind"], "budget_exceeded", "{last:#}");
    assert_eq!(s["spent"]["turns"], 2);
}

/// A model that accepts the request and never answers: Claude printed its `init` and then
/// nothing, so oneshot's inactivity timeout stops it (the agent's own 5 s API timeout would come
/// later), recovery finds nothing to salvage, and nothing is left running.
#[test]
fn a_hung_stream_is_stopped_by_inactivity() {
    let sb = Sandbox::new();
    let model = FakeModel::with([Reply::Hang]);
    let started = std::time::Instant::now();
    let Some(r) = claude_worker(&sb, &model, |c| {
        c.args([
            "--inactivity-timeout",
            "2s",
            "--max-iterations",
            "1",
            "wait",
        ]);
    }) else {
        return;
    };
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let s = state(&sb);
    let reasons = s["history"].to_string();
    assert!(reasons.contains("inactivity_timeout"), "{reasons}");
    assert!(
        r.stderr
            .contains("printed nothing for the inactivity timeout"),
        "{}",
        r.dump()
    );
}

/// The timeline loses nothing: every assistant message in Claude's own on-disk transcript
/// appears, by its id, in the timeline assembled from what oneshot logged of Claude's stream.
#[test]
fn every_transcript_message_is_in_the_timeline() {
    let sb = Sandbox::new();
    let model = FakeModel::with([
        Reply::Bash("echo one".into()),
        Reply::Bash("echo two".into()),
        Reply::Text("all done zq61".into()),
    ]);
    let Some(r) = claude_worker(&sb, &model, |c| {
        c.arg("go");
    }) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());

    let timeline = worker_timeline(&sb, oneshot::agent::Protocol::Claude);
    let sid = state(&sb)["agents"]["worker_session"]
        .as_str()
        .unwrap()
        .to_string();
    let transcript = walk(&sb.home().join(".claude/projects"))
        .into_iter()
        .find(|p| p.ends_with(format!("{sid}.jsonl")))
        .expect("the transcript");
    let ids: Vec<String> = std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "assistant")
        .filter_map(|v| v["message"]["id"].as_str().map(str::to_string))
        .collect();
    assert!(ids.len() >= 3, "{ids:?}");
    for id in &ids {
        assert!(
            timeline.message(id).is_some(),
            "{id} is missing from the timeline"
        );
    }
    assert_eq!(timeline.final_text(), Some("all done zq61"));
}

/// Seed 000's zombie success: Claude wrote the file, then its model hung and oneshot stopped
/// it for silence. Recovery reads Claude's own transcript — the file its Write tool wrote — and
/// a salvage hook that trusts it sends the work to the auditor, which accepts.
#[test]
fn a_zombie_success_is_salvaged_from_the_transcript() {
    let sb = Sandbox::new();
    let file = sb.work().join("z.txt");
    let policy = sb.tmp.path().join("zombie.lua");
    std::fs::write(
        &policy,
        r#"return {
  salvage = function(ev, ctx)
    if ev.transcript and #ev.transcript.files > 0 then
      return "success", "the transcript shows " .. ev.transcript.files[1]
    end
    return "nothing"
  end,
}"#,
    )
    .unwrap();
    let model = FakeModel::with([
        Reply::Write {
            path: file.display().to_string(),
            content: "zombie work\n".into(),
        },
        Reply::Hang,
    ]);
    let Some(r) = claude_worker(&sb, &model, |c| {
        // Long enough for the CLI to start and write on a loaded machine; the hang after the
        // write waits it out once. Claude's own API timeout (5 s in these tests) must not end
        // the hang first: it would answer, and there would be nothing to salvage.
        c.env("API_TIMEOUT_MS", "60000")
            .arg("--policy")
            .arg(&policy)
            .args(["--inactivity-timeout", "6s", "write z.txt"]);
    }) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "zombie work\n");
    let s = state(&sb);
    let history = s["history"].to_string();
    assert!(history.contains("the transcript shows"), "{history}");
    assert!(history.contains("inactivity_timeout"), "{history}");
}

/// A secret in an agent auditor's answer is redacted before the session keeps it: the state
/// file and the log hold the reason without the key.
#[test]
fn a_secret_in_an_agents_answer_never_reaches_disk() {
    let sb = Sandbox::new();
    let key = "sk-ant-api03-Zq9xVb7LmN3pQr5sTu8wXy2zAb4cDe6fGh0iJk1lMn";
    let verdict = |v: &str, reason: String| {
        Reply::Json(serde_json::json!({
            "verdict": v, "reason": reason, "confidence": 1, "open_criteria": []
        }))
    };
    let model = FakeModel::with([
        verdict("retry", format!("the code logs {key}")),
        verdict("done", "ok".into()),
    ]);
    let Some(r) = with_claude(&sb, &model, |c| {
        c.args(["--worker-cmd", "true", "--auditor", "claude", "check"]);
    }) else {
        return;
    };
    assert_eq!(r.code(), Some(0), "{}", r.dump());
    let dir = session_dir(&sb);
    for file in ["oneshot.json", "oneshot-log.json"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(!text.contains(key), "{file} holds the key");
        assert!(
            text.contains("the code logs sk-ant-"),
            "{file}: the reason is kept: {text}"
        );
    }
}
