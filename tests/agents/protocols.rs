//! The long-lived structured protocols the native executors will speak, checked against the
//! pinned CLIs: Claude Code's stream-json input with its control protocol, Codex's app-server
//! (JSON-RPC over stdio), Gemini CLI's Agent Client Protocol (`--acp`).

use super::claude::claude;
use super::harness::Sandbox;
use super::stdio::Session;
use super::{codex, containment, gemini};
use crate::fake_model::{FakeModel, Reply};
use oneshot::agent::{AgentEvent, ClaudeParser, LineParser, claude_input};
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// Claude 2.1.197 accepts `--input-format stream-json` with `--permission-prompt-tool stdio`:
/// it answers `initialize`, takes a user turn from stdin, asks us (`can_use_tool`) before running
/// Bash, honours our denial (the model sees it, the tool never runs), and ends the turn with a
/// normal `result`; closing stdin ends the process with exit 0.
/// Claude in stream-json both ways (`-p --input-format stream-json --output-format
/// stream-json --verbose`), then `extra`.
fn stream_json(c: &mut std::process::Command, extra: &[&str]) {
    c.args([
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
    ])
    .arg("--verbose")
    .args(extra);
}

#[test]
fn claude_stream_json_input_with_the_control_protocol() {
    let model = FakeModel::with([
        Reply::Bash("touch denied.txt".into()),
        Reply::Text("understood".into()),
    ]);
    let sb = Sandbox::new();
    let Some(mut c) = claude(&sb, &model) else {
        return;
    };
    stream_json(&mut c, &["--permission-prompt-tool", "stdio"]);
    let mut s = Session::spawn(c);
    s.send(&json!({"type": "control_request", "request_id": "init1",
                   "request": {"subtype": "initialize"}}));
    let init = s.wait_for(WAIT, |v| v["type"] == "control_response");
    assert_eq!(init["response"]["request_id"], "init1", "{init}");
    assert_eq!(init["response"]["subtype"], "success", "{init}");
    s.send(
        &json!({"type": "user", "message": {"role": "user", "content": "run the command zq6"},
                   "parent_tool_use_id": null, "session_id": "default"}),
    );
    let ask = s.wait_for(WAIT, |v| v["type"] == "control_request");
    assert_eq!(ask["request"]["subtype"], "can_use_tool", "{ask}");
    assert_eq!(ask["request"]["tool_name"], "Bash");
    assert_eq!(ask["request"]["input"]["command"], "touch denied.txt");
    s.send(
        &json!({"type": "control_response", "response": {"subtype": "success",
        "request_id": ask["request_id"],
        "response": {"behavior": "deny", "message": "denied by policy zq7"}}}),
    );
    let result = s.wait_for(WAIT, |v| v["type"] == "result");
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["result"], "understood");
    assert!(
        !sb.work().join("denied.txt").exists(),
        "the denied tool never ran"
    );
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].body_text().contains("denied by policy zq7"),
        "the model sees the denial"
    );
    assert_eq!(reqs[0].count("zq6"), 1, "the prompt reaches the model once");
    s.close_stdin();
    assert_eq!(s.wait_exit(WAIT), Some(0));
}

/// A JSON-RPC request line (Codex's app-server omits `"jsonrpc"`; ACP requires it, and Codex
/// accepts it).
fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn is_response(id: u64) -> impl Fn(&Value) -> bool {
    move |v: &Value| v["id"] == id && (v.get("result").is_some() || v.get("error").is_some())
}

/// Codex app-server: `initialize` (answered with a result), `initialized`, `thread/start` in the
/// sandbox's workdir under `approval`, then `turn/start` with `text` as request 3 (its answer is
/// left to the caller). Returns the thread id.
fn codex_turn(s: &mut Session, sb: &Sandbox, approval: &str, text: &str) -> String {
    s.send(&rpc(
        1,
        "initialize",
        json!({"clientInfo": {"name": "oneshot-tests", "version": "0"}}),
    ));
    let init = s.wait_for(WAIT, is_response(1));
    assert!(init.get("result").is_some(), "{init}");
    s.send(&json!({"jsonrpc": "2.0", "method": "initialized"}));
    let cwd = sb.work().display().to_string();
    s.send(&rpc(
        2,
        "thread/start",
        json!({"cwd": cwd, "model": "gpt-5.5",
        "sandbox": "workspace-write", "approvalPolicy": approval}),
    ));
    let thread = s.wait_for(WAIT, is_response(2));
    let thread_id = thread["result"]["thread"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{thread}"))
        .to_string();
    s.send(&rpc(
        3,
        "turn/start",
        json!({"threadId": thread_id,
        "input": [{"type": "text", "text": text}]}),
    ));
    thread_id
}

/// ACP (Gemini `--acp`): `initialize` (protocol version 1 agreed), `session/new` in the
/// sandbox's workdir, then `session/prompt` with `text` as request 3 (its answer is left to the
/// caller). Returns the session id.
fn acp_prompt(s: &mut Session, sb: &Sandbox, text: &str) -> String {
    s.send(&rpc(
        1,
        "initialize",
        json!({"protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}}}),
    ));
    let init = s.wait_for(WAIT, is_response(1));
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let cwd = sb.work().display().to_string();
    s.send(&rpc(
        2,
        "session/new",
        json!({"cwd": cwd, "mcpServers": []}),
    ));
    let session = s.wait_for(WAIT, is_response(2));
    let sid = session["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{session}"))
        .to_string();
    s.send(&rpc(
        3,
        "session/prompt",
        json!({"sessionId": sid,
        "prompt": [{"type": "text", "text": text}]}),
    ));
    sid
}

/// Codex 0.169's `app-server` answers `initialize`, starts a thread and runs a turn against the
/// fake Responses API, streaming item and turn notifications.
#[test]
fn codex_app_server_runs_a_turn() {
    let model = FakeModel::with([Reply::Text("Hello over app-server.".into())]);
    let sb = Sandbox::new();
    let Some(mut c) = codex::codex(&sb, &model) else {
        return;
    };
    c.arg("app-server");
    let mut s = Session::spawn(c);
    let thread_id = codex_turn(&mut s, &sb, "never", "say hello zq8");
    let started = s.wait_for(WAIT, is_response(3));
    assert!(started.get("result").is_some(), "{started}");
    let done = s.wait_for(WAIT, |v| v["method"] == "turn/completed");
    assert_eq!(done["params"]["threadId"], thread_id.as_str(), "{done}");
    let text = s.transcript.join("\n");
    assert!(text.contains("Hello over app-server."), "{text}");
    assert_eq!(model.model_requests().len(), 1);
    assert_eq!(model.model_requests()[0].count("zq8"), 1);
}

/// Gemini CLI 0.61's `--acp` speaks the Agent Client Protocol: initialize, session/new,
/// session/prompt (answer streamed as `session/update` notifications, then a stop reason).
#[test]
fn gemini_acp_runs_a_prompt() {
    let model = FakeModel::with([Reply::Text("Hello over ACP.".into())]);
    let sb = Sandbox::new();
    let Some(mut c) = gemini::command(&sb, &model) else {
        return;
    };
    c.args(["-m", gemini::MODEL, "--acp"]);
    let mut s = Session::spawn(c);
    acp_prompt(&mut s, &sb, "say hello zq9");
    let done = s.wait_for(WAIT, is_response(3));
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let text = s.transcript.join("\n");
    assert!(
        text.contains("session/update") && text.contains("Hello over ACP."),
        "{text}"
    );
    assert_eq!(model.model_requests()[0].count("zq9"), 1);
}

/// One Claude process, two user turns: the second request carries the first turn's history, and
/// each turn ends with its own `result`.
#[test]
fn claude_stream_json_keeps_one_conversation_across_turns() {
    let model = FakeModel::with([Reply::Text("first".into()), Reply::Text("second".into())]);
    let sb = Sandbox::new();
    let Some(mut c) = claude(&sb, &model) else {
        return;
    };
    stream_json(&mut c, &[]);
    let mut s = Session::spawn(c);
    for (text, want) in [("turn one zq14", "first"), ("turn two zq15", "second")] {
        s.send(
            &json!({"type": "user", "message": {"role": "user", "content": text},
                       "parent_tool_use_id": null, "session_id": "default"}),
        );
        let result = s.wait_for(WAIT, |v| v["type"] == "result");
        assert_eq!(result["result"], want, "{result}");
    }
    let reqs = model.model_requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].count("zq14"), 1, "history sent once");
    assert_eq!(reqs[1].count("zq15"), 1);
    s.close_stdin();
    assert_eq!(s.wait_exit(WAIT), Some(0));
}

/// The request (a line with both `id` and `method`) the agent sends us.
fn is_request(method: &'static str) -> impl Fn(&Value) -> bool {
    move |v: &Value| v["method"] == method && v.get("id").is_some()
}

/// Codex app-server asks before running a command under `approvalPolicy: "untrusted"`
/// (`item/commandExecution/requestApproval`); `decision: "decline"` keeps it from running and the
/// turn completes. This is the hook for oneshot's `permit`.
#[test]
fn codex_app_server_approval_request_can_be_declined() {
    let model = FakeModel::with([
        Reply::Bash("touch codex_denied.txt".into()),
        Reply::Text("ok".into()),
    ]);
    let sb = Sandbox::new();
    let Some(mut c) = codex::codex(&sb, &model) else {
        return;
    };
    c.arg("app-server");
    let mut s = Session::spawn(c);
    codex_turn(&mut s, &sb, "untrusted", "run it");
    let ask = s.wait_for(WAIT, is_request("item/commandExecution/requestApproval"));
    assert!(
        ask["params"].to_string().contains("codex_denied.txt"),
        "{ask}"
    );
    s.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "decline"}}));
    s.wait_for(WAIT, |v| v["method"] == "turn/completed");
    assert!(
        !sb.work().join("codex_denied.txt").exists(),
        "the declined command never ran"
    );
    assert_eq!(
        model.model_requests().len(),
        2,
        "the model got the refusal and answered"
    );
}

/// Gemini `--acp` without `--yolo` asks the client (`session/request_permission`, options with
/// `kind` allow_once / reject_once …) before running a shell command; choosing the reject option
/// keeps it from running and the prompt still ends normally.
#[test]
fn gemini_acp_permission_request_can_be_rejected() {
    let model = FakeModel::with([
        Reply::Bash("touch gemini_denied.txt".into()),
        Reply::Text("ok".into()),
    ]);
    let sb = Sandbox::new();
    let Some(mut c) = gemini::command(&sb, &model) else {
        return;
    };
    c.args(["-m", gemini::MODEL, "--acp"]);
    let mut s = Session::spawn(c);
    acp_prompt(&mut s, &sb, "run it");
    let ask = s.wait_for(WAIT, is_request("session/request_permission"));
    let options = ask["params"]["options"]
        .as_array()
        .unwrap_or_else(|| panic!("{ask}"));
    let reject = options
        .iter()
        .find(|o| o["kind"] == "reject_once")
        .unwrap_or_else(|| panic!("no reject_once option: {ask}"));
    s.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": reject["optionId"]}}}));
    let done = s.wait_for(WAIT, is_response(3));
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert_eq!(
        model.model_requests().len(),
        2,
        "the model got the refusal and answered"
    );
    assert!(
        !sb.work().join("gemini_denied.txt").exists(),
        "the rejected command never ran"
    );
}

/// An `interrupt` control request while Claude's Bash tool runs stops the turn: Claude answers
/// the control request, and the turn ends with a `result` long before the tool would have.
#[test]
fn claude_control_interrupt_stops_a_running_tool() {
    let marker = format!("sleep 31.{}", std::process::id());
    let model = FakeModel::with([
        Reply::Bash(marker.clone()),
        Reply::Text("after interrupt".into()),
    ]);
    let sb = Sandbox::new();
    let Some(mut c) = claude(&sb, &model) else {
        return;
    };
    stream_json(&mut c, &["--allowedTools", "Bash"]);
    let mut s = Session::spawn(c);
    s.send(
        &json!({"type": "user", "message": {"role": "user", "content": "run it"},
                   "parent_tool_use_id": null, "session_id": "default"}),
    );
    s.wait_for(WAIT, |v| {
        v["type"] == "assistant" && v["message"]["content"][0]["type"] == "tool_use"
    });
    std::thread::sleep(Duration::from_millis(500));
    let start = std::time::Instant::now();
    s.send(&json!({"type": "control_request", "request_id": "int1",
                   "request": {"subtype": "interrupt"}}));
    let ack = s.wait_for(WAIT, |v| v["type"] == "control_response");
    let result = s.wait_for(WAIT, |v| v["type"] == "result");
    let took = start.elapsed();
    // Claude signals the tool; give it a moment to go. Whatever survives is killed by pid before
    // asserting, so a failure leaks nothing.
    let gone = std::time::Instant::now() + Duration::from_secs(3);
    while !containment::pids_with(&marker).is_empty() && std::time::Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = containment::pids_with(&marker);
    for pid in &left {
        containment::kill(*pid, false);
    }
    assert_eq!(ack["response"]["request_id"], "int1", "{ack}");
    assert_eq!(ack["response"]["subtype"], "success", "{ack}");
    assert_eq!(result["subtype"], "error_during_execution", "{result}");
    assert_eq!(result["terminal_reason"], "aborted_tools", "{result}");
    assert_eq!(result["is_error"], true);
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(
        model.model_requests().len(),
        1,
        "no model call after the interrupt"
    );
    assert!(left.is_empty(), "the interrupted tool was killed: {left:?}");
}

/// Waits up to 3 s for every process whose command line holds `marker` to go, kills the rest by
/// pid, and returns the pids that had to be killed.
fn reap(marker: &str) -> Vec<i32> {
    let gone = std::time::Instant::now() + Duration::from_secs(3);
    while !containment::pids_with(marker).is_empty() && std::time::Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = containment::pids_with(marker);
    for pid in &left {
        containment::kill(*pid, false);
    }
    left
}

/// `turn/interrupt` while a command runs: acknowledged, the turn completes `interrupted` at once
/// and no model call follows, but the command itself keeps running.
#[test]
fn codex_app_server_turn_interrupt_leaves_the_command_running() {
    let marker = format!("sleep 32.{}", std::process::id());
    let model = FakeModel::with([Reply::Bash(marker.clone()), Reply::Text("after".into())]);
    let sb = Sandbox::new();
    let Some(mut c) = codex::codex(&sb, &model) else {
        return;
    };
    c.arg("app-server");
    let mut s = Session::spawn(c);
    let thread_id = codex_turn(&mut s, &sb, "never", "run it");
    let turn = s.wait_for(WAIT, is_response(3));
    let turn_id = turn["result"]["turn"]["id"].clone();
    let started = s.wait_for(WAIT, |v| {
        v["method"] == "item/started" && v["params"]["item"]["type"] == "commandExecution"
    });
    std::thread::sleep(Duration::from_millis(500));
    let t0 = std::time::Instant::now();
    s.send(&rpc(
        4,
        "turn/interrupt",
        json!({"threadId": thread_id, "turnId": turn_id}),
    ));
    let ack = s.wait_for(WAIT, is_response(4));
    let done = s.wait_for(WAIT, |v| v["method"] == "turn/completed");
    let took = t0.elapsed();
    // The command runs in a session of its own (outside app-server's process group) and
    // outlives the interrupt: a canary for the day Codex starts killing it.
    let outside = containment::pids_with(&marker)
        .into_iter()
        .filter_map(containment::pgrp_and_session)
        .all(|(pgrp, _)| pgrp != s.pid());
    let left = reap(&marker);
    assert!(
        started["params"]["item"]["command"]
            .as_str()
            .unwrap()
            .contains(&marker)
    );
    assert!(ack.get("result").is_some(), "{ack}");
    assert_eq!(done["params"]["turn"]["status"], "interrupted", "{done}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(
        model.model_requests().len(),
        1,
        "no model call after the interrupt"
    );
    assert!(
        !left.is_empty(),
        "Codex now kills the interrupted command: update the docs"
    );
    assert!(
        outside,
        "the command ran outside app-server's process group"
    );
}

/// ACP `session/cancel` (a notification) while a shell command runs: the prompt ends with
/// `stopReason: "cancelled"` and the command is killed.
#[test]
fn gemini_acp_cancel_stops_a_running_command() {
    let marker = format!("sleep 33.{}", std::process::id());
    let model = FakeModel::with([Reply::Bash(marker.clone()), Reply::Text("after".into())]);
    let sb = Sandbox::new();
    let Some(mut c) = gemini::command(&sb, &model) else {
        return;
    };
    c.args(["-m", gemini::MODEL, "--acp", "--yolo"]);
    let mut s = Session::spawn(c);
    let sid = acp_prompt(&mut s, &sb, "run it");
    let started = s.wait_for(WAIT, |v| {
        v["method"] == "session/update" && v["params"]["update"]["sessionUpdate"] == "tool_call"
    });
    std::thread::sleep(Duration::from_millis(800));
    let t0 = std::time::Instant::now();
    s.send(&json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}));
    let done = s.wait_for(WAIT, is_response(3));
    let took = t0.elapsed();
    let left = reap(&marker);
    assert_eq!(
        started["params"]["update"]["title"],
        marker.as_str(),
        "{started}"
    );
    assert_eq!(done["result"]["stopReason"], "cancelled", "{done}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(
        model.model_requests().len(),
        1,
        "no model call after the cancel"
    );
    assert!(
        left.is_empty(),
        "the cancelled command was killed: {left:?}"
    );
}

/// Waits for a line `want` takes, allowing every tool Claude asks about on the way.
fn claude_until(s: &mut Session, want: impl Fn(&Value) -> bool) -> Value {
    loop {
        let v = s.wait_for(WAIT, |v| {
            want(v) || (v["type"] == "control_request" && v["request"]["subtype"] == "can_use_tool")
        });
        if want(&v) {
            return v;
        }
        let input = &v["request"]["input"];
        s.send_line(&claude_input::permission(
            v["request_id"].as_str().unwrap_or_default(),
            true,
            None,
            input,
        ));
    }
}

/// What oneshot's Claude parser makes of everything Claude wrote so far.
fn claude_events(s: &Session) -> Vec<AgentEvent> {
    let mut p = ClaudeParser::default();
    let mut events = Vec::new();
    for line in &s.transcript {
        p.feed_str(line, &mut events);
    }
    events
}

/// Claude with oneshot's flags (stream-json both ways, permissions asked on stdio, user
/// lines replayed), past the handshake, `prompt` sent.
fn claude_running(model: &FakeModel, sb: &Sandbox, prompt: &str) -> Option<Session> {
    let mut c = claude(sb, model)?;
    stream_json(
        &mut c,
        &[
            "--permission-prompt-tool",
            "stdio",
            "--replay-user-messages",
        ],
    );
    let mut s = Session::spawn(c);
    s.send_line(&claude_input::initialize("init1"));
    s.wait_for(WAIT, |v| v["type"] == "control_response");
    s.send(
        &json!({"type": "user", "message": {"role": "user", "content": prompt},
                   "parent_tool_use_id": null, "session_id": "default"}),
    );
    Some(s)
}

/// A message said while a tool runs is merged into the turn at the tool's result and replayed
/// with the uuid oneshot gave it, each message on its own line even when several merge; one
/// withdrawn before then (`cancel_async_message`) never reaches the model; one said while idle
/// starts a turn and is replayed the same way (../shared/agents/turns.md §2).
#[test]
fn claude_takes_in_messages_by_their_uuids_and_gives_back_a_withdrawn_one() {
    let model = FakeModel::with([
        Reply::Bash("sleep 3".into()),
        Reply::Text("after".into()),
        Reply::Text("again".into()),
    ]);
    let sb = Sandbox::new();
    let Some(mut s) = claude_running(&model, &sb, "run it") else {
        return;
    };
    claude_until(&mut s, |v| v["type"] == "assistant");
    std::thread::sleep(Duration::from_millis(500));
    let id = |c: char| format!("00000000-0000-4000-8000-00000000000{c}");
    s.send_line(&claude_input::said(&id('b'), "message zb1", false));
    s.send_line(&claude_input::said(&id('c'), "message zc1", false));
    s.send_line(&claude_input::said(&id('e'), "message ze1", false));
    s.send_line(&claude_input::cancel_message("withdraw-e", &id('e')));
    let withdrawn = s.wait_for(WAIT, |v| v["type"] == "control_response");
    assert_eq!(withdrawn["response"]["request_id"], "withdraw-e");
    assert_eq!(
        withdrawn["response"]["response"]["cancelled"], true,
        "{withdrawn}"
    );
    let first = claude_until(&mut s, |v| v["type"] == "result");
    assert_eq!(
        first["result"], "after",
        "the messages joined the running turn"
    );
    s.send_line(&claude_input::said(&id('d'), "message zd1", false));
    let second = claude_until(&mut s, |v| v["type"] == "result");
    assert_eq!(second["result"], "again");
    s.close_stdin();
    assert_eq!(s.wait_exit(WAIT), Some(0));

    let taken: Vec<String> = claude_events(&s)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::MessageTaken { message_id } => Some(message_id),
            _ => None,
        })
        .collect();
    for c in ['b', 'c', 'd'] {
        assert!(taken.contains(&id(c)), "{c} taken in: {taken:?}");
    }
    assert!(!taken.contains(&id('e')), "the withdrawn one: {taken:?}");
    let reqs = model.model_requests();
    assert!(
        reqs[1].body_text().contains("message zb1"),
        "merged at the tool result"
    );
    assert!(reqs[1].body_text().contains("message zc1"));
    assert!(reqs.iter().all(|r| !r.body_text().contains("message ze1")));
    assert!(reqs[2].body_text().contains("message zd1"));
}

/// A task run in the background outlives its turn's result; `stop_task` ends it (killed, its
/// notification `stopped`) and no turn of Claude's own follows (turns.md §1, s7).
#[test]
fn claude_background_task_is_seen_and_stopped() {
    let model = FakeModel::with([
        Reply::Call {
            name: "Bash".into(),
            args: json!({"command": "sleep 30", "description": "zbg wait", "run_in_background": true}),
        },
        Reply::Text("started it".into()),
    ]);
    let sb = Sandbox::new();
    let Some(mut s) = claude_running(&model, &sb, "start it") else {
        return;
    };
    claude_until(&mut s, |v| v["type"] == "result");
    let events = claude_events(&s);
    let Some(task) = events.iter().find_map(|e| match e {
        AgentEvent::TaskBackgrounded { task_id, .. } => Some(task_id.clone()),
        _ => None,
    }) else {
        panic!("no background task: {events:?}");
    };
    assert!(events.iter().any(|e| matches!(e, AgentEvent::TaskStarted { task_id, description: Some(d), .. } if *task_id == task && d == "zbg wait")));
    s.send_line(&claude_input::stop_task("stop-1", &task));
    let answer = s.wait_for(WAIT, |v| v["type"] == "control_response");
    assert_eq!(answer["response"]["subtype"], "success", "{answer}");
    let events = claude_events(&s);
    assert!(
        events.contains(&AgentEvent::TaskEnded {
            task_id: task.clone(),
            status: "killed".into()
        }),
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::Warning { .. } | AgentEvent::Error { .. }))
    );
    s.close_stdin();
    assert_eq!(s.wait_exit(WAIT), Some(0));
    assert_eq!(
        model.model_requests().len(),
        2,
        "no turn of its own followed"
    );
}
