//! The app-server conversation, fed lines captured from Codex 0.169 (trimmed of fields
//! nothing reads).

use super::*;
use crate::agent::{Delivery, Say};
use serde_json::json;

fn setup(resume: Option<&str>) -> DriverSetup {
    DriverSetup {
        role: Role::Worker,
        cwd: "/w".into(),
        model: Some("gpt-5.5".into()),
        resume: resume.map(str::to_string),
    }
}

/// Feeds `line`; returns its events and the replies as JSON.
fn feed(d: &mut CodexAppDriver, line: &str) -> (Vec<AgentEvent>, Vec<Value>) {
    let (mut events, mut out) = (Vec::new(), Vec::new());
    d.feed(line.as_bytes(), &mut events, &mut out);
    (
        events,
        out.iter()
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect(),
    )
}

fn opened(resume: Option<&str>) -> (CodexAppDriver, Value) {
    let mut d = CodexAppDriver::new(setup(resume));
    let mut out = Vec::new();
    d.open("fix the bug", &mut out);
    assert_eq!(out.len(), 1);
    let init: Value = serde_json::from_slice(&out[0]).unwrap();
    assert_eq!(init["method"], "initialize");
    let (events, replies) = feed(&mut d, r#"{"id":1,"result":{"userAgent":"x/0.169.0"}}"#);
    assert!(events.is_empty());
    assert_eq!(replies[0], json!({"method": "initialized"}));
    (d, replies[1].clone())
}

const THREAD: &str = r#"{"id":2,"result":{"thread":{"id":"th-1","cwd":"/w","cliVersion":"0.169.0","path":"/h/.codex/sessions/2026/11/23/rollout-th-1.jsonl"},"model":"gpt-5.5"}}"#;

#[test]
fn a_turn_runs_from_handshake_to_final_answer() {
    let (mut d, thread) = opened(None);
    assert_eq!(thread["method"], "thread/start");
    assert_eq!(
        thread["params"],
        json!({"cwd": "/w", "sandbox": "workspace-write", "approvalPolicy": "untrusted", "model": "gpt-5.5"})
    );
    let (events, replies) = feed(&mut d, THREAD);
    let AgentEvent::SessionStarted {
        session_id,
        transcript,
        ..
    } = &events[0]
    else {
        panic!("{events:?}");
    };
    assert_eq!(session_id, "th-1");
    assert_eq!(
        transcript.as_deref(),
        Some("/h/.codex/sessions/2026/11/23/rollout-th-1.jsonl")
    );
    assert_eq!(replies[0]["method"], "turn/start");
    assert_eq!(
        replies[0]["params"]["input"][0]["text"], "fix the bug",
        "the prompt, once"
    );
    assert!(d.interrupt().is_none(), "no turn to interrupt yet");
    feed(
        &mut d,
        r#"{"id":3,"result":{"turn":{"id":"tu-1","status":"inProgress"}}}"#,
    );

    let (events, _) = feed(
        &mut d,
        r#"{"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_1","command":"/bin/bash -lc 'echo hi > a.txt'","cwd":"/w","status":"inProgress"},"threadId":"th-1","turnId":"tu-1"}}"#,
    );
    assert!(
        matches!(&events[0], AgentEvent::ToolCall { id, name, .. } if id == "call_1" && name == "command_execution")
    );
    let (events, replies) = feed(
        &mut d,
        r#"{"method":"item/commandExecution/requestApproval","id":0,"params":{"threadId":"th-1","turnId":"tu-1","itemId":"call_1","command":"/bin/bash -lc 'echo hi > a.txt'","cwd":"/w"}}"#,
    );
    assert!(replies.is_empty(), "the policy answers, not the driver");
    let AgentEvent::PermissionRequest {
        request_id,
        tool,
        input,
        tool_call_id,
    } = &events[0]
    else {
        panic!("{events:?}");
    };
    assert_eq!(tool, "command_execution");
    assert_eq!(input["command"], "/bin/bash -lc 'echo hi > a.txt'");
    assert_eq!(tool_call_id.as_deref(), Some("call_1"));
    let answer: Value =
        serde_json::from_slice(&d.permit(request_id, true, None, input).unwrap()).unwrap();
    assert_eq!(answer, json!({"id": 0, "result": {"decision": "accept"}}));
    assert!(
        d.permit(request_id, true, None, input).is_none(),
        "answered once"
    );

    let (events, _) = feed(
        &mut d,
        r#"{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"call_1","status":"completed","aggregatedOutput":"","exitCode":0}}}"#,
    );
    assert!(matches!(
        &events[0],
        AgentEvent::ToolResult {
            is_error: false,
            ..
        }
    ));
    for usage in 0..2 {
        let (events, _) = feed(
            &mut d,
            &format!(
                r#"{{"method":"thread/tokenUsage/updated","params":{{"tokenUsage":{{"total":{{"inputTokens":{}}},"last":{{"inputTokens":100,"cachedInputTokens":10,"outputTokens":20}}}}}}}}"#,
                100 * (usage + 1)
            ),
        );
        let each = AgentEvent::Usage {
            input_tokens: Some(90),
            output_tokens: Some(20),
            cached_input_tokens: Some(10),
            cost_usd: None,
            turns: Some(1),
        };
        assert_eq!(events, [each], "each model call as it happens");
    }
    let (events, _) = feed(
        &mut d,
        r#"{"method":"item/agentMessage/delta","params":{"itemId":"msg_1","delta":"do"}}"#,
    );
    assert!(matches!(
        &events[0],
        AgentEvent::AssistantText { partial: true, .. }
    ));
    feed(
        &mut d,
        r#"{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"msg_1","text":"done"}}}"#,
    );
    let (quiet, _) = feed(
        &mut d,
        r#"{"method":"thread/status/changed","params":{"status":{"type":"idle"}}}"#,
    );
    assert!(quiet.is_empty());
    let (events, _) = feed(
        &mut d,
        r#"{"method":"turn/completed","params":{"threadId":"th-1","turn":{"id":"tu-1","status":"completed","error":null}}}"#,
    );
    assert!(
        matches!(&events[0], AgentEvent::Final { success: true, text: Some(t), .. } if t == "done")
    );
}

#[test]
fn an_unauthorized_key_fails_the_turn_once_and_retries_are_notices() {
    let (mut d, _) = opened(None);
    feed(&mut d, THREAD);
    let (events, _) = feed(
        &mut d,
        r#"{"method":"error","params":{"error":{"message":"Reconnecting... 1/1","codexErrorInfo":{"responseStreamDisconnected":{"httpStatusCode":500}},"additionalDetails":"high demand"},"willRetry":true}}"#,
    );
    assert!(
        matches!(
            &events[0],
            AgentEvent::RetryNotice {
                status: Some(500),
                kind: Some(ErrorKind::Server),
                ..
            }
        ),
        "{events:?}"
    );
    let (events, _) = feed(
        &mut d,
        r#"{"method":"error","params":{"error":{"message":"unexpected status 401 Unauthorized: fake 401","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":401}},"additionalDetails":null},"willRetry":false}}"#,
    );
    assert!(
        matches!(
            &events[0],
            AgentEvent::Error {
                kind: ErrorKind::Auth,
                status: Some(401),
                ..
            }
        ),
        "{events:?}"
    );
    let (events, _) = feed(
        &mut d,
        r#"{"method":"turn/completed","params":{"turn":{"id":"tu-1","status":"failed","error":{"message":"unexpected status 401 Unauthorized: fake 401","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":401}}}}}}"#,
    );
    assert_eq!(events.len(), 1, "the error was told already: {events:?}");
    assert!(matches!(
        &events[0],
        AgentEvent::Final { success: false, .. }
    ));
}

#[test]
fn a_lost_thread_starts_a_new_one() {
    let (mut d, thread) = opened(Some("th-0"));
    assert_eq!(thread["method"], "thread/resume");
    assert_eq!(thread["params"]["threadId"], "th-0");
    assert_eq!(
        thread["params"]["sandbox"], "workspace-write",
        "resume keeps the sandbox"
    );
    let id = thread["id"].as_u64().unwrap();
    let (events, replies) = feed(
        &mut d,
        &format!(r#"{{"id":{id},"error":{{"code":-32600,"message":"no rollout found"}}}}"#),
    );
    assert!(
        matches!(&events[0], AgentEvent::Warning { message } if message.contains("no rollout found"))
    );
    assert_eq!(replies[0]["method"], "thread/start");
}

#[test]
fn requests_it_cannot_serve_get_an_error_and_interrupts_name_the_turn() {
    let (mut d, _) = opened(None);
    feed(&mut d, THREAD);
    feed(&mut d, r#"{"id":3,"result":{"turn":{"id":"tu-7"}}}"#);
    let (events, replies) = feed(
        &mut d,
        r#"{"method":"item/tool/requestUserInput","id":5,"params":{}}"#,
    );
    assert!(matches!(&events[0], AgentEvent::Warning { .. }));
    assert_eq!(replies[0]["id"], 5);
    assert_eq!(replies[0]["error"]["code"], -32601);
    let stop: Value = serde_json::from_slice(&d.interrupt().unwrap()).unwrap();
    assert_eq!(stop["method"], "turn/interrupt");
    assert_eq!(
        stop["params"],
        json!({"threadId": "th-1", "turnId": "tu-7"})
    );
    let (events, _) = feed(&mut d, "not json");
    assert!(matches!(&events[0], AgentEvent::Malformed { .. }));
    let (events, _) = feed(&mut d, r#"{"method":"brand/new","params":{}}"#);
    assert!(matches!(&events[0], AgentEvent::Unknown { .. }));
}

#[test]
fn the_auditor_thread_is_read_only() {
    let mut d = CodexAppDriver::new(DriverSetup {
        role: Role::Auditor,
        ..setup(None)
    });
    let mut out = Vec::new();
    d.open("judge", &mut out);
    let (_, replies) = feed(&mut d, r#"{"id":1,"result":{}}"#);
    assert_eq!(replies[1]["params"]["sandbox"], "read-only");
}

/// A driver whose prompt's turn `tu-1` runs on thread `th-1` (the request ids so far: 1
/// initialize, 2 thread/start, 3 turn/start).
fn running() -> CodexAppDriver {
    let (mut d, _) = opened(None);
    feed(&mut d, THREAD);
    let (events, _) = feed(
        &mut d,
        r#"{"id":3,"result":{"turn":{"id":"tu-1","items":[],"status":"inProgress","error":null}}}"#,
    );
    assert_eq!(events, [AgentEvent::TurnStarted], "the prompt's turn");
    let (events, _) = feed(
        &mut d,
        r#"{"method":"turn/started","params":{"threadId":"th-1","turn":{"id":"tu-1","items":[],"status":"inProgress","error":null}}}"#,
    );
    assert!(events.is_empty(), "the same turn starts once: {events:?}");
    d
}

fn say(d: &mut CodexAppDriver, id: &str, text: &str) -> (Delivery, Vec<Value>) {
    let mut out = Vec::new();
    let delivery = d.say(
        &Say {
            id: id.into(),
            text: text.into(),
            now: false,
        },
        &mut out,
    );
    let lines = out
        .iter()
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    (delivery, lines)
}

fn taken(id: &str) -> AgentEvent {
    AgentEvent::MessageTaken {
        message_id: id.into(),
    }
}

#[test]
fn a_message_steers_the_active_turn_and_its_answer_takes_it_in() {
    // c3: a steer during a running command.
    let mut d = running();
    let (delivery, lines) = say(&mut d, "m-1", "steer [[text:reply to STEER]]");
    assert_eq!(delivery, Delivery::Sent);
    assert_eq!(
        lines,
        [json!({"id": 4, "method": "turn/steer", "params": {
            "threadId": "th-1", "expectedTurnId": "tu-1",
            "input": [{"type": "text", "text": "steer [[text:reply to STEER]]"}]}})]
    );
    let (events, replies) = feed(&mut d, r#"{"id":4,"result":{"turnId":"tu-1"}}"#);
    assert_eq!(events, [taken("m-1")]);
    assert!(replies.is_empty());
}

#[test]
fn a_steer_drops_the_message_in_flight_which_is_discarded_at_the_turns_end() {
    // c2: the first answer streamed a delta, the steer came, and that item never completed.
    let mut d = running();
    let (events, _) = feed(
        &mut d,
        r#"{"method":"item/started","params":{"item":{"type":"agentMessage","id":"msg_0b3f43d18a3442a895d62d3f","text":"reply to FIRST, a slowly streamed answer","phase":null},"threadId":"th-1","turnId":"tu-1"}}"#,
    );
    assert!(events.is_empty(), "{events:?}");
    feed(
        &mut d,
        r#"{"method":"item/agentMessage/delta","params":{"threadId":"th-1","turnId":"tu-1","itemId":"msg_0b3f43d18a3442a895d62d3f","delta":"reply to FIRST"}}"#,
    );
    say(&mut d, "m-2", "steer [[text:reply to STEER]]");
    feed(&mut d, r#"{"id":4,"result":{"turnId":"tu-1"}}"#);
    for line in [
        r#"{"method":"item/started","params":{"item":{"type":"agentMessage","id":"msg_steer","text":""},"threadId":"th-1","turnId":"tu-1"}}"#,
        r#"{"method":"item/agentMessage/delta","params":{"itemId":"msg_steer","delta":"reply to STEER"}}"#,
        r#"{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"msg_steer","text":"reply to STEER"},"threadId":"th-1","turnId":"tu-1"}}"#,
    ] {
        feed(&mut d, line);
    }
    let (events, _) = feed(
        &mut d,
        r#"{"method":"turn/completed","params":{"threadId":"th-1","turn":{"id":"tu-1","items":[{"type":"agentMessage","id":"msg_steer","text":"reply to STEER"}],"status":"completed","error":null}}}"#,
    );
    assert_eq!(
        events[0],
        AgentEvent::MessageDiscarded {
            message_id: "msg_0b3f43d18a3442a895d62d3f".into(),
            reason: "steered".into()
        }
    );
    assert!(
        matches!(&events[1], AgentEvent::Final { success: true, text: Some(t), .. } if t == "reply to STEER"),
        "{events:?}"
    );
    assert_eq!(events.len(), 2);
    assert!(d.interrupt().is_none(), "no turn is active");
}

#[test]
fn a_steer_after_the_turn_ended_starts_a_turn_with_the_same_text() {
    // c6: the turn completed before the steer reached Codex.
    let mut d = running();
    let (_, lines) = say(&mut d, "m-3", "one more thing");
    assert_eq!(lines[0]["method"], "turn/steer");
    feed(
        &mut d,
        r#"{"method":"turn/completed","params":{"threadId":"th-1","turn":{"id":"tu-1","items":[],"status":"completed","error":null}}}"#,
    );
    let (events, replies) = feed(
        &mut d,
        r#"{"error":{"code":-32600,"message":"no active turn to steer"},"id":4}"#,
    );
    assert!(events.is_empty(), "not a failure: {events:?}");
    assert_eq!(
        replies,
        [json!({"id": 5, "method": "turn/start", "params": {
            "threadId": "th-1", "input": [{"type": "text", "text": "one more thing"}]}})]
    );
    let (events, _) = feed(
        &mut d,
        r#"{"id":5,"result":{"turn":{"id":"tu-2","items":[],"status":"inProgress","error":null}}}"#,
    );
    assert_eq!(
        events,
        [AgentEvent::TurnStarted, taken("m-3")],
        "its turn starts, then takes it in, once"
    );
    let (events, _) = feed(
        &mut d,
        r#"{"method":"turn/started","params":{"threadId":"th-1","turn":{"id":"tu-2","status":"inProgress"}}}"#,
    );
    assert!(events.is_empty());
    let stop: Value = serde_json::from_slice(&d.interrupt().unwrap()).unwrap();
    assert_eq!(stop["params"]["turnId"], "tu-2");
}

#[test]
fn a_steer_naming_another_turn_falls_back_to_joining_the_active_one() {
    // c5: the expected turn id did not match; c4: turn/start joins the active turn.
    let mut d = running();
    say(&mut d, "m-4", "this instead");
    let (_, replies) = feed(
        &mut d,
        r#"{"error":{"code":-32600,"message":"expected active turn id `tu-1` but found `tu-9`"},"id":4}"#,
    );
    assert_eq!(replies[0]["method"], "turn/start");
    let (events, _) = feed(
        &mut d,
        r#"{"id":5,"result":{"turn":{"id":"tu-9","status":"inProgress"}}}"#,
    );
    assert_eq!(events, [AgentEvent::TurnStarted, taken("m-4")]);
    // Any other refusal: the run goes on, the message refused (the next prompt carries it).
    say(&mut d, "m-5", "again");
    let (events, replies) = feed(
        &mut d,
        r#"{"error":{"code":-32603,"message":"internal error"},"id":6}"#,
    );
    assert!(replies.is_empty());
    assert!(
        matches!(&events[..], [AgentEvent::MessageRefused { message_id, reason }] if message_id == "m-5" && reason.contains("internal error")),
        "{events:?}"
    );
}

#[test]
fn a_message_while_idle_starts_a_turn() {
    let mut d = running();
    feed(
        &mut d,
        r#"{"method":"turn/completed","params":{"threadId":"th-1","turn":{"id":"tu-1","status":"completed"}}}"#,
    );
    let (delivery, lines) = say(&mut d, "m-6", "and now the docs");
    assert_eq!(delivery, Delivery::Sent);
    assert_eq!(lines[0]["method"], "turn/start");
    assert_eq!(lines[0]["params"]["input"][0]["text"], "and now the docs");
    // Codex may tell the turn's start before answering the request.
    let (events, _) = feed(
        &mut d,
        r#"{"method":"turn/started","params":{"threadId":"th-1","turn":{"id":"tu-3","status":"inProgress"}}}"#,
    );
    assert_eq!(events, [AgentEvent::TurnStarted]);
    let (events, _) = feed(
        &mut d,
        r#"{"id":4,"result":{"turn":{"id":"tu-3","status":"inProgress"}}}"#,
    );
    assert_eq!(events, [taken("m-6")]);
}

#[test]
fn a_message_said_before_the_thread_goes_with_the_prompt() {
    let (mut d, _) = opened(None);
    let (delivery, lines) = say(&mut d, "m-7", "use the 2024 edition");
    assert_eq!(delivery, Delivery::Held);
    assert!(lines.is_empty());
    say(&mut d, "m-8", "drop this");
    assert!(d.withdraw("m-8", &mut Vec::new()), "held: taken back");
    assert!(!d.withdraw("m-8", &mut Vec::new()));
    let (_, replies) = feed(&mut d, THREAD);
    assert_eq!(
        replies[0]["params"]["input"],
        json!([{"type": "text", "text": "fix the bug"},
               {"type": "text", "text": "use the 2024 edition"}])
    );
    let (events, _) = feed(
        &mut d,
        r#"{"id":3,"result":{"turn":{"id":"tu-1","status":"inProgress"}}}"#,
    );
    assert_eq!(events, [AgentEvent::TurnStarted, taken("m-7")]);
}

#[test]
fn an_interrupted_turns_partial_message_is_discarded_as_interrupted() {
    // c7: `turn/interrupt`; what streamed of the answer never completed.
    let mut d = running();
    feed(
        &mut d,
        r#"{"method":"item/agentMessage/delta","params":{"itemId":"msg_cut","delta":"Let me"}}"#,
    );
    let (events, _) = feed(
        &mut d,
        r#"{"method":"turn/completed","params":{"threadId":"th-1","turn":{"id":"tu-1","status":"interrupted","error":null}}}"#,
    );
    assert_eq!(
        events[0],
        AgentEvent::MessageDiscarded {
            message_id: "msg_cut".into(),
            reason: "interrupted".into()
        }
    );
}
