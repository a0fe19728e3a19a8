//! The ACP conversation, fed lines captured from Gemini CLI 0.61 `--acp` (trimmed).

use super::*;
use crate::process::Role;
use serde_json::json;

fn feed(d: &mut AcpDriver, line: &str) -> (Vec<AgentEvent>, Vec<Value>) {
    let (mut events, mut out) = (Vec::new(), Vec::new());
    d.feed(line.as_bytes(), &mut events, &mut out);
    (
        events,
        out.iter()
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect(),
    )
}

/// A driver past the handshake, its prompt sent.
fn prompted() -> AcpDriver {
    let mut d = AcpDriver::new(DriverSetup {
        role: Role::Worker,
        cwd: "/w".into(),
        model: None,
        resume: None,
    });
    let mut out = Vec::new();
    d.open("fix it", &mut out);
    let init: Value = serde_json::from_slice(&out[0]).unwrap();
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], 1);
    let (_, replies) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}"#,
    );
    assert_eq!(replies[0]["method"], "session/new");
    assert_eq!(replies[0]["params"], json!({"cwd": "/w", "mcpServers": []}));
    assert!(d.interrupt().is_none(), "no session to cancel yet");
    let (events, replies) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1","models":{"currentModelId":"gemini-2.5-flash"}}}"#,
    );
    assert!(
        matches!(&events[0], AgentEvent::SessionStarted { session_id, model: Some(m), .. } if session_id == "s-1" && m == "gemini-2.5-flash")
    );
    assert_eq!(replies[0]["method"], "session/prompt");
    assert_eq!(replies[0]["params"]["prompt"][0]["text"], "fix it");
    d
}

const ASK: &str = r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s-1","options":[{"optionId":"proceed_always","kind":"allow_always"},{"optionId":"proceed_once","kind":"allow_once"},{"optionId":"cancel","kind":"reject_once"}],"toolCall":{"toolCallId":"run_shell_command__run_shell_command_1_0","status":"pending","title":"echo hi > a.txt","content":[],"locations":[],"kind":"execute"}}}"#;

#[test]
fn a_prompt_runs_from_handshake_to_final_answer() {
    let mut d = prompted();
    let (events, replies) = feed(&mut d, ASK);
    assert!(replies.is_empty());
    let AgentEvent::PermissionRequest {
        request_id,
        tool,
        input,
        ..
    } = &events[0]
    else {
        panic!("{events:?}");
    };
    assert_eq!(tool, "run_shell_command", "Gemini's own tool name");
    assert_eq!(input["title"], "echo hi > a.txt");
    assert_eq!(input["kind"], "execute");
    let allow: Value =
        serde_json::from_slice(&d.permit(request_id, true, None, input).unwrap()).unwrap();
    assert_eq!(
        allow,
        json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}})
    );
    let (events, _) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_1_0","status":"completed","content":[{"type":"content","content":{"type":"text","text":"hi"}}]}}}"#,
    );
    assert_eq!(
        events[0],
        AgentEvent::ToolResult {
            tool_call_id: "run_shell_command__run_shell_command_1_0".into(),
            content: "hi".into(),
            is_error: false
        }
    );
    for chunk in ["do", "ne"] {
        let (events, _) = feed(
            &mut d,
            &format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s-1","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{chunk}"}}}}}}}}"#
            ),
        );
        assert!(
            matches!(&events[0], AgentEvent::AssistantText { message_id: Some(m), partial: true, .. } if m == "m1")
        );
    }
    let (quiet, _) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}}"#,
    );
    assert!(quiet.is_empty());
    let (events, _) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":600,"output_tokens":120}}}}}"#,
    );
    assert!(matches!(
        &events[0],
        AgentEvent::Usage {
            input_tokens: Some(600),
            output_tokens: Some(120),
            ..
        }
    ));
    assert!(
        matches!(&events[1], AgentEvent::Final { success: true, text: Some(t), .. } if t == "done")
    );
}

#[test]
fn a_denied_tool_picks_the_reject_option() {
    let mut d = prompted();
    let (events, _) = feed(&mut d, ASK);
    let AgentEvent::PermissionRequest {
        request_id, input, ..
    } = &events[0]
    else {
        panic!("{events:?}");
    };
    let deny: Value =
        serde_json::from_slice(&d.permit(request_id, false, Some("no"), input).unwrap()).unwrap();
    assert_eq!(
        deny["result"]["outcome"],
        json!({"outcome": "selected", "optionId": "cancel"})
    );
    let stop: Value = serde_json::from_slice(&d.interrupt().unwrap()).unwrap();
    assert_eq!(
        stop,
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s-1"}})
    );
}

#[test]
fn a_provider_error_names_its_status_and_words() {
    let mut d = prompted();
    let (events, _) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":401,"message":"{\"error\":{\"code\":401,\"message\":\"fake 401\",\"status\":\"UNAUTHENTICATED\"}}"}}"#,
    );
    assert_eq!(
        events[0],
        AgentEvent::Error {
            kind: ErrorKind::Auth,
            status: Some(401),
            message: "fake 401".into()
        }
    );
    assert!(matches!(
        &events[1],
        AgentEvent::Final { success: false, .. }
    ));
    let mut d = prompted();
    let (events, _) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Internal error","data":{"details":"quota"}}}"#,
    );
    assert!(
        matches!(&events[0], AgentEvent::Error { status: None, message, .. } if message == "Internal error: quota")
    );
}

#[test]
fn requests_it_does_not_offer_get_an_error() {
    let mut d = prompted();
    let (events, replies) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":9,"method":"fs/read_text_file","params":{"path":"/etc/passwd"}}"#,
    );
    assert!(matches!(&events[0], AgentEvent::Warning { .. }));
    assert_eq!(replies[0]["error"]["code"], -32601);
    // A cancelled prompt was interrupted, not failed (../shared/agents/turns.md §4).
    let (events, _) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}"#,
    );
    assert_eq!(
        events,
        [
            AgentEvent::TurnInfo {
                autonomous: false,
                interrupted: true
            },
            AgentEvent::Final {
                success: true,
                text: None,
                structured_output: None,
                permission_denials: vec![]
            }
        ]
    );
}
