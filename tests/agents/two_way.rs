//! Whole sessions with the agents oneshot converses with both ways: a Codex worker over
//! `codex app-server` (JSON-RPC) and Gemini over the Agent Client Protocol, each against its own
//! fake model server — the policy's `permit` answering their tool requests, the worker's own
//! thread continued, interrupts through the protocol — and Gemini and Aider workers judged by
//! a Codex auditor that rejects once.

use super::harness::{Sandbox, run};
use super::with_oneshot::{
    LIMIT, aider_args, codex_overrides, last_reason, log_records, log_text, oneshot, role_args,
    state, tool_then, worker_timeline,
};
use crate::fake_model::{FakeModel, Reply};
use serde_json::Value;
use std::process::Command;

/// A policy denying `rm -rf` to any shell tool (Codex names its tool `command_execution`,
/// Gemini `run_shell_command`), with the reason `zq61`.
const NO_RM: &str = r#"return {
  permit = function(tool, input, ctx)
    local line = input.command or input.title or ""
    if type(line) == "table" then line = table.concat(line, " ") end
    if line:find("rm -rf", 1, true) then
      return "deny", "no rm -rf here zq61"
    end
    return "allow"
  end,
}"#;

/// A sandbox whose workdir holds a `keep` directory, and the [`NO_RM`] policy file.
fn guarded() -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.work().join("keep")).unwrap();
    let policy = sb.tmp.path().join("guard.lua");
    std::fs::write(&policy, NO_RM).unwrap();
    (sb, policy)
}

/// A worker's two iterations through its shell tool: `rm -rf keep` (to be denied), line one and
/// the words `said`; then line two.
fn two_lines(said: &str) -> [Reply; 5] {
    [
        Reply::Bash("rm -rf keep".into()),
        Reply::Bash("echo one > notes.txt".into()),
        Reply::Text(said.into()),
        Reply::Bash("echo two >> notes.txt".into()),
        Reply::Text("added line two".into()),
    ]
}

/// Runs `c` on the task of [`two_lines`]; the session completes in two iterations, both
/// lines written and `keep` still there. Returns the state file.
fn two_lines_written(sb: &Sandbox, mut c: Command) -> Value {
    c.arg("write notes.txt with two lines");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}\n{}", r.dump(), log_text(sb));
    assert_eq!(
        std::fs::read_to_string(sb.work().join("notes.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(
        sb.work().join("keep").is_dir(),
        "the denied command never ran"
    );
    let s = state(sb);
    assert_eq!(s["state"], "COMPLETED", "{s:#}");
    assert_eq!(s["iteration_count"], 2);
    // The verdict was read from the auditor's structured answer, which the hook saw.
    assert!(
        !r.stderr.contains("does not fit the verdict schema"),
        "{}",
        r.dump()
    );
    let verdicts: Vec<Value> = log_records(sb)
        .into_iter()
        .filter(|v| v["type"] == "decision" && v["hook"] == "verdict")
        .collect();
    assert_eq!(
        verdicts[0]["input"]["ctx"]["structured"]["open_criteria"][0], "line two",
        "{verdicts:#?}"
    );
    s
}

/// The permit decisions in the session's log, in order.
fn permits(sb: &Sandbox) -> Vec<Value> {
    log_records(sb)
        .into_iter()
        .filter(|v| v["type"] == "decision" && v["hook"] == "permit")
        .collect()
}

/// The auditor's two answers, in prose with the verdict in a fenced block across lines (only
/// the answer's structure, found and checked against the verdict schema, gives the verdict):
/// reject with a critique, then accept.
fn reject_then_accept(critique: &str) -> [Reply; 2] {
    let answer = |verdict: &str, reason: &str, open: &str| {
        Reply::Text(format!(
            "I read the work.\n```json\n{{\n  \"verdict\": \"{verdict}\",\n  \"reason\": \"{reason}\",\n  \"confidence\": 0.9,\n  \"open_criteria\": [{open}]\n}}\n```\n"
        ))
    };
    [
        answer("retry", critique, "\"line two\""),
        answer("done", "both lines are there", ""),
    ]
}

/// A Codex worker over `app-server`: its `rm -rf` is denied by the policy (the command never
/// runs), its writes are allowed; a Gemini auditor (ACP) rejects once; the second iteration
/// continues the worker's own thread, so Codex's request carries iteration one and the
/// critique. The thread id and its transcript path are journaled.
#[test]
fn codex_app_server_worker_with_a_gemini_auditor() {
    let (sb, policy) = guarded();
    let codex_model = FakeModel::with(two_lines("wrote line one zq62"));
    let gemini_model = FakeModel::with(reject_then_accept("add a second line zq63"));
    let (Some(codex), Some(gemini)) = (
        super::codex::codex(&sb, &codex_model),
        super::gemini::command(&sb, &gemini_model),
    ) else {
        return;
    };
    let mut c = oneshot(&sb, &[&codex, &gemini]);
    c.args(["--worker", "codex:gpt-5.5"])
        .args(role_args("worker", &codex_overrides(&codex)))
        .args(["--auditor", &format!("gemini:{}", super::gemini::MODEL)])
        .arg("--policy")
        .arg(&policy);
    let s = two_lines_written(&sb, c);
    let thread = s["agents"]["worker_session"].as_str().expect("journaled");
    let transcript = s["agents"]["worker_transcript"]
        .as_str()
        .expect("journaled");
    assert!(transcript.contains(thread), "{transcript}");
    assert!(std::path::Path::new(transcript).is_file(), "{transcript}");

    let p = permits(&sb);
    assert_eq!(p[0]["result"]["allow"], false, "{p:#?}");
    assert_eq!(p[0]["input"]["tool"], "command_execution");
    assert!(
        p[1..].iter().all(|d| d["result"]["allow"] == true),
        "{p:#?}"
    );
    let reqs = codex_model.model_requests();
    assert_eq!(reqs.len(), 5, "{}", log_text(&sb));
    // Iteration 2 continued the thread: iteration 1 and the critique are both in its request.
    let second = reqs[3].body_text();
    assert!(second.contains("wrote line one zq62"), "{second}");
    assert!(second.contains("zq63"), "{second}");
    // The timeline loses nothing: every assistant message of Codex's own rollout is in the
    // timeline assembled from what oneshot logged of its app-server stream.
    let rollout_ids: Vec<String> = std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "response_item" && v["payload"]["role"] == "assistant")
        .filter_map(|v| v["payload"]["id"].as_str().map(str::to_string))
        .collect();
    let timeline = worker_timeline(&sb, oneshot::agent::Protocol::CodexAppServer);
    assert!(rollout_ids.len() >= 2, "{rollout_ids:?}");
    for id in &rollout_ids {
        assert!(timeline.message(id).is_some(), "{id} is missing");
    }
    // The auditor read the worker's run as an account (its words, its commands), not the
    // protocol's JSON.
    let audit = gemini_model.model_requests()[0].body_text();
    assert!(audit.contains("wrote line one zq62"), "{audit}");
    assert!(audit.contains("$ command_execution"), "{audit}");
    assert!(!audit.contains("tokenUsage"), "{audit}");
}

/// A Gemini worker over ACP whose `rm -rf` the policy denies; a Codex auditor rejects once; the
/// second iteration's prompt carries the critique and the session completes.
#[test]
fn gemini_acp_worker_with_a_codex_auditor_rejecting_once() {
    let (sb, policy) = guarded();
    let gemini_model = FakeModel::with(two_lines("wrote line one"));
    let codex_model = FakeModel::with(reject_then_accept("add a second line zq64"));
    let (Some(gemini), Some(codex)) = (
        super::gemini::command(&sb, &gemini_model),
        super::codex::codex(&sb, &codex_model),
    ) else {
        return;
    };
    let mut c = oneshot(&sb, &[&gemini, &codex]);
    c.args(["--worker", &format!("gemini:{}", super::gemini::MODEL)])
        .args(["--auditor", "codex:gpt-5.5"])
        .args(role_args("auditor", &codex_overrides(&codex)))
        .arg("--policy")
        .arg(&policy);
    let s = two_lines_written(&sb, c);
    let p = permits(&sb);
    assert_eq!(p[0]["result"]["allow"], false, "{p:#?}");
    assert_eq!(p[0]["input"]["tool"], "run_shell_command");
    // Gemini's chat file, found by its session id and journaled.
    let transcript = s["agents"]["worker_transcript"]
        .as_str()
        .expect("journaled");
    let chat = std::fs::read_to_string(transcript).unwrap();
    assert!(chat.contains("added line two"), "{chat}");
    let reqs = gemini_model.model_requests();
    assert!(
        reqs[3].body_text().contains("zq64"),
        "the critique reached iteration 2"
    );
}

/// An Aider worker judged by a Codex auditor that rejects once: two iterations, both edits.
#[test]
fn aider_worker_with_a_codex_auditor_rejecting_once() {
    let sb = Sandbox::new();
    let aider_model = FakeModel::with([
        Reply::Write {
            path: "notes.txt".into(),
            content: "one\n".into(),
        },
        Reply::Write {
            path: "notes.txt".into(),
            content: "one\ntwo\n".into(),
        },
    ]);
    let codex_model = FakeModel::with(reject_then_accept("add a second line zq65"));
    let (Some(aider), Some(codex)) = (
        super::aider::command(&sb, &aider_model),
        super::codex::codex(&sb, &codex_model),
    ) else {
        return;
    };
    let extra = aider_args();
    let mut c = oneshot(&sb, &[&aider, &codex]);
    c.args(["--worker", "aider"])
        .args(role_args("worker", &extra))
        .args(["--auditor", "codex:gpt-5.5"])
        .args(role_args("auditor", &codex_overrides(&codex)))
        .arg("write notes.txt with two lines");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(0), "{}\n{}", r.dump(), log_text(&sb));
    assert_eq!(
        std::fs::read_to_string(sb.work().join("notes.txt"))
            .unwrap()
            .trim_end(),
        "one\ntwo"
    );
    let s = state(&sb);
    assert_eq!(s["state"], "COMPLETED", "{s:#}");
    assert_eq!(s["iteration_count"], 2);
    assert!(aider_model.model_requests()[1].body_text().contains("zq65"));
}

/// A refused key for a Codex app-server worker ends the session at once, naming Codex.
#[test]
fn a_401_from_codex_app_server_fails_fast() {
    let sb = Sandbox::new();
    let model = FakeModel::start();
    model.set_fallback(Reply::Status(401));
    let Some(codex) = super::codex::codex(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&codex]);
    c.args(["--worker", "codex:gpt-5.5"])
        .args(role_args("worker", &codex_overrides(&codex)))
        .args(["--auditor-cmd", "echo VERDICT: done", "do it"]);
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let s = state(&sb);
    let last = last_reason(&s);
    assert_eq!(last["kind"], "agent_failed", "{last:#}");
    assert_eq!(last["agent"], "codex");
    assert_eq!(last["error"], "auth");
    assert_eq!(s["iteration_count"], 1, "not retried");
}

fn codex_cmd(sb: &Sandbox, model: &FakeModel) -> Option<Vec<Command>> {
    super::codex::codex(sb, model).map(|c| vec![c])
}

fn gemini_cmd(sb: &Sandbox, model: &FakeModel) -> Option<Vec<Command>> {
    super::gemini::command(sb, model).map(|c| vec![c])
}

/// Ctrl-C while a Codex app-server command runs: `turn/interrupt` goes through the protocol
/// (the turn completes `interrupted`), the session pauses, and the command — which Codex
/// itself leaves running outside its process group — is gone.
#[test]
fn ctrl_c_during_a_codex_command_interrupts_the_turn_and_leaves_no_process() {
    let Some(sb) = tool_then(
        "codex:gpt-5.5",
        codex_cmd,
        |pid| super::containment::kill_with(pid as i32, libc::SIGINT),
        Some("INTERRUPTED"),
    ) else {
        return;
    };
    let log = log_text(&sb);
    assert!(log.contains(r#""status":"interrupted""#), "{log}");
}

/// Ctrl-C while a Gemini ACP shell command runs: `session/cancel` ends the prompt
/// (`stopReason: cancelled`), the session pauses, nothing is left running.
#[test]
fn ctrl_c_during_a_gemini_command_cancels_the_prompt_and_leaves_no_process() {
    let model = format!("gemini:{}", super::gemini::MODEL);
    let Some(sb) = tool_then(
        &model,
        gemini_cmd,
        |pid| super::containment::kill_with(pid as i32, libc::SIGINT),
        Some("INTERRUPTED"),
    ) else {
        return;
    };
    let log = log_text(&sb);
    assert!(log.contains(r#""stopReason":"cancelled""#), "{log}");
}

/// `kill -9` of oneshot while a Codex app-server command runs: nothing survives.
#[test]
fn kill_9_during_a_codex_command_leaves_no_process() {
    tool_then(
        "codex:gpt-5.5",
        codex_cmd,
        |pid| super::containment::kill_with(pid as i32, libc::SIGKILL),
        None,
    );
}

/// A run that goes past the budget while it runs is stopped: under `turns = 2`, Claude's third
/// answer stops it (through its protocol), the fourth command never runs, and the session
/// fails for the budget.
#[test]
fn a_run_past_its_budget_is_stopped_while_it_runs() {
    let sb = Sandbox::new();
    let policy = sb.tmp.path().join("budget.lua");
    std::fs::write(&policy, "return { limits = { budget = { turns = 2 } } }").unwrap();
    let model = FakeModel::with([
        Reply::Bash("echo 1 >> turns.txt".into()),
        Reply::Bash("echo 2 >> turns.txt".into()),
        Reply::Bash("sleep 2; echo 3 >> turns.txt".into()),
        Reply::Bash("touch never.txt".into()),
        Reply::Text("done".into()),
    ]);
    let Some(claude) = super::claude::claude(&sb, &model) else {
        return;
    };
    let mut c = oneshot(&sb, &[&claude]);
    c.args(["--worker", "claude", "--auditor-cmd", "echo VERDICT: done"])
        .arg("--policy")
        .arg(&policy)
        .arg("count");
    let r = run(c, LIMIT);
    assert_eq!(r.code(), Some(1), "{}", r.dump());
    let s = state(&sb);
    let last = last_reason(&s);
    assert_eq!(last["kind"], "budget_exceeded", "{last:#}");
    assert!(!sb.work().join("never.txt").exists(), "stopped before");
    assert!(model.model_requests().len() <= 3, "{}", r.dump());
    assert!(
        r.stderr.contains("spent the budget while it ran"),
        "{}",
        r.dump()
    );
}

/// Seed 000's zombie success with Codex and Gemini workers: the agent wrote the file, then its
/// model hung and oneshot stopped it for silence. Recovery reads the agent's own transcript
/// (Codex's rollout, Gemini's chat file, both journaled) and a salvage hook that trusts it
/// sends the work to the auditor, which accepts.
#[test]
fn a_zombie_success_is_salvaged_from_codex_and_gemini_transcripts() {
    const TRUST_TRANSCRIPT: &str = r#"return {
  salvage = function(ev, ctx)
    local t = ev.transcript
    if t and (#t.files > 0 or t.tool_results > 0) then
      return "success", "the transcript at " .. t.path .. " shows the work"
    end
    return "nothing"
  end,
}"#;
    for agent in ["codex", "gemini"] {
        let sb = Sandbox::new();
        let policy = sb.tmp.path().join("zombie.lua");
        std::fs::write(&policy, TRUST_TRANSCRIPT).unwrap();
        let model = FakeModel::with([
            Reply::Write {
                path: "z.txt".into(),
                content: "zombie work\n".into(),
            },
            Reply::Hang,
        ]);
        let (cmd, worker, extra) = match agent {
            "codex" => {
                let Some(c) = super::codex::codex(&sb, &model) else {
                    return;
                };
                let extra = role_args("worker", &codex_overrides(&c));
                (c, "codex:gpt-5.5".to_string(), extra)
            }
            _ => {
                let Some(c) = super::gemini::command(&sb, &model) else {
                    return;
                };
                (c, format!("gemini:{}", super::gemini::MODEL), Vec::new())
            }
        };
        let mut c = oneshot(&sb, &[&cmd]);
        c.args(["--worker", &worker])
            .args(extra)
            .args(["--auditor-cmd", "echo VERDICT: done", "--policy"])
            .arg(&policy)
            // Long enough for a CLI to start and write on a loaded machine; the hang after
            // the write waits it out once.
            .args(["--inactivity-timeout", "8s", "write z.txt"]);
        let r = run(c, LIMIT);
        assert_eq!(
            r.code(),
            Some(0),
            "{agent}: {}\n{}",
            r.dump(),
            log_text(&sb)
        );
        assert_eq!(
            std::fs::read_to_string(sb.work().join("z.txt"))
                .unwrap()
                .trim_end(),
            "zombie work"
        );
        let s = state(&sb);
        let history = s["history"].to_string();
        assert!(history.contains("inactivity_timeout"), "{agent}: {history}");
        let transcript = s["agents"]["worker_transcript"]
            .as_str()
            .expect("journaled");
        assert!(
            history.contains(&format!("the transcript at {transcript} shows the work")),
            "{agent}: {history}"
        );
    }
}
