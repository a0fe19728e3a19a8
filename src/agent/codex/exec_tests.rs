use super::*;
use serde_json::json;

fn parse(lines: &[&str]) -> Vec<AgentEvent> {
    let mut p = CodexParser::default();
    let mut out = Vec::new();
    for line in lines {
        p.feed_str(line, &mut out);
    }
    out
}

#[test]
fn a_thread_and_a_turn_give_the_session_the_answer_and_usage() {
    let events = parse(&[
        r#"{"type":"thread.started","thread_id":"th-1"}"#,
        r#"{"type":"turn.started"}"#,
        r#"{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"thinking"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"{\"ok\": true}"}}"#,
        r#"{"usage":{"output_tokens":20,"input_tokens":100,"cached_input_tokens":3},"type":"turn.completed"}"#,
    ]);
    assert_eq!(
        events,
        vec![
            AgentEvent::SessionStarted {
                session_id: "th-1".into(),
                model: None,
                tools: vec![],
                cwd: None,
                version: None,
                transcript: None
            },
            AgentEvent::TurnStarted,
            AgentEvent::Reasoning {
                message_id: Some("item_0".into()),
                index: 0,
                text: "thinking".into(),
                partial: false
            },
            AgentEvent::AssistantText {
                message_id: Some("item_1".into()),
                index: 0,
                text: "{\"ok\": true}".into(),
                partial: false
            },
            AgentEvent::Usage {
                input_tokens: Some(100),
                output_tokens: Some(20),
                cached_input_tokens: Some(3),
                cost_usd: None,
                turns: Some(1)
            },
            AgentEvent::Final {
                success: true,
                text: Some("{\"ok\": true}".into()),
                structured_output: Some(json!({"ok": true})),
                permission_denials: vec![]
            },
        ]
    );
}

#[test]
fn a_command_is_called_once_and_its_exit_code_decides_failure() {
    let started = r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"false","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#;
    let done = r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"false","aggregated_output":"oops\n","exit_code":1,"status":"failed"}}"#;
    let call = AgentEvent::ToolCall {
        id: "item_1".into(),
        name: "command_execution".into(),
        input: json!({"command": "false"}),
        message_id: None,
    };
    let result = AgentEvent::ToolResult {
        tool_call_id: "item_1".into(),
        content: "oops\n".into(),
        is_error: true,
    };
    assert_eq!(parse(&[started, done]), vec![call.clone(), result.clone()]);
    // A completion whose start was lost still names the call.
    assert_eq!(parse(&[done]), vec![call, result]);
}

#[test]
fn file_changes_and_mcp_calls_are_tools() {
    let events = parse(&[
        r#"{"type":"item.completed","item":{"id":"i2","type":"file_change","changes":[{"path":"a.txt","kind":"add"}],"status":"completed"}}"#,
        r#"{"type":"item.completed","item":{"id":"i3","type":"mcp_tool_call","server":"fs","tool":"read","arguments":{"p":1},"result":{"content":[{"type":"text","text":"hi"}]},"error":null,"status":"completed"}}"#,
    ]);
    assert_eq!(
        events,
        vec![
            AgentEvent::ToolCall {
                id: "i2".into(),
                name: "file_change".into(),
                input: json!({"changes": [{"path": "a.txt", "kind": "add"}]}),
                message_id: None
            },
            AgentEvent::ToolResult {
                tool_call_id: "i2".into(),
                content: "completed".into(),
                is_error: false
            },
            AgentEvent::ToolCall {
                id: "i3".into(),
                name: "fs/read".into(),
                input: json!({"p": 1}),
                message_id: None
            },
            AgentEvent::ToolResult {
                tool_call_id: "i3".into(),
                content: "hi".into(),
                is_error: false
            },
        ]
    );
}

#[test]
fn reconnecting_is_a_retry_and_a_failed_turn_an_error() {
    let events = parse(&[
        r#"{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}"#,
        r#"{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: bad key"}}"#,
    ]);
    assert_eq!(
        events,
        vec![
            AgentEvent::RetryNotice {
                attempt: Some(2),
                max_attempts: Some(5),
                delay_ms: None,
                kind: Some(ErrorKind::Network),
                status: None,
                message: Some("Reconnecting... 2/5 (stream disconnected before completion)".into()),
            },
            AgentEvent::Error {
                kind: ErrorKind::Auth,
                status: Some(401),
                message: "unexpected status 401 Unauthorized: bad key".into()
            },
            AgentEvent::Final {
                success: false,
                text: None,
                structured_output: None,
                permission_denials: vec![]
            },
        ]
    );
}

#[test]
fn an_error_item_is_a_warning_and_unknown_items_are_kept() {
    let events = parse(&[
        r#"{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata not found"}}"#,
        r#"{"type":"item.started","item":{"id":"item_5","type":"todo_list","items":[]}}"#,
    ]);
    assert_eq!(
        events[0],
        AgentEvent::Warning {
            message: "Model metadata not found".into()
        }
    );
    assert!(
        matches!(&events[1], AgentEvent::Unknown { raw } if raw["item"]["type"] == "todo_list")
    );
}
