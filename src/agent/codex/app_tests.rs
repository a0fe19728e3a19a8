//! The app-server conversation, fed lines captured from Codex 0.169 (trimmed of fields
//! nothing reads).

use super::*;
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
