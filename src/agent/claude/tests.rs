use super::*;
use serde_json::json;

fn parse(lines: &[&str]) -> Vec<AgentEvent> {
    let mut p = ClaudeParser::default();
    let mut out = Vec::new();
    for line in lines {
        p.feed_str(line, &mut out);
    }
    out
}

fn partial(event: Value) -> String {
    json!({"type": "stream_event", "event": event, "session_id": "s1", "parent_tool_use_id": null})
        .to_string()
}

#[test]
fn init_names_the_session_whatever_the_key_order() {
    let a = r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"s1","tools":["Bash","Write"],"model":"opus","claude_code_version":"2.1.197"}"#;
    let b = r#"{"claude_code_version":"2.1.197","model":"opus","tools":["Bash","Write"],"session_id":"s1","cwd":"/w","subtype":"init","type":"system"}"#;
    let want = AgentEvent::SessionStarted {
        session_id: "s1".into(),
        model: Some("opus".into()),
        tools: vec!["Bash".into(), "Write".into()],
        cwd: Some("/w".into()),
        version: Some("2.1.197".into()),
        transcript: None,
    };
    assert_eq!(parse(&[a]), vec![want.clone()]);
    assert_eq!(parse(&[b]), vec![want]);
}

#[test]
fn blocks_of_one_message_in_separate_lines_get_successive_indexes() {
    let text = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"I'll run it."}]}}"#;
    let tool = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#;
    let result = r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"a.txt","is_error":false}]}}"#;
    let next =
        r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Done."}]}}"#;
    assert_eq!(
        parse(&[text, tool, result, next]),
        vec![
            AgentEvent::AssistantText {
                message_id: Some("m1".into()),
                index: 0,
                text: "I'll run it.".into(),
                partial: false
            },
            AgentEvent::ToolCall {
                id: "t1".into(),
                name: "Bash".into(),
                input: json!({"command": "ls"}),
                message_id: Some("m1".into())
            },
            AgentEvent::ToolResult {
                tool_call_id: "t1".into(),
                content: "a.txt".into(),
                is_error: false
            },
            AgentEvent::AssistantText {
                message_id: Some("m2".into()),
                index: 0,
                text: "Done.".into(),
                partial: false
            },
        ]
    );
}

#[test]
fn a_tool_result_in_blocks_and_with_an_error_is_read() {
    let line = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t9","content":[{"type":"text","text":"denied"}],"is_error":true}]}}"#;
    assert_eq!(
        parse(&[line]),
        vec![AgentEvent::ToolResult {
            tool_call_id: "t9".into(),
            content: "denied".into(),
            is_error: true
        }]
    );
}

#[test]
fn api_retry_is_a_retry_notice_with_its_status() {
    let line = r#"{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1187.6,"error_status":529,"error":"overloaded_error"}"#;
    assert_eq!(
        parse(&[line]),
        vec![AgentEvent::RetryNotice {
            attempt: Some(2),
            max_attempts: Some(10),
            delay_ms: Some(1188),
            kind: Some(ErrorKind::Overloaded),
            status: Some(529),
            message: Some("overloaded_error".into()),
        }]
    );
    // Server down: no status, the error names the connection.
    let down = r#"{"type":"system","subtype":"api_retry","attempt":1,"error_status":null,"error":"connection_error"}"#;
    let events = parse(&[down]);
    assert!(matches!(
        &events[0],
        AgentEvent::RetryNotice {
            kind: Some(ErrorKind::Network),
            status: None,
            ..
        }
    ));
}

#[test]
fn other_system_lines_are_kept_unknown() {
    let line = r#"{"type":"system","subtype":"hook_started","hook_id":"x"}"#;
    assert!(matches!(&parse(&[line])[0], AgentEvent::Unknown { raw } if raw["hook_id"] == "x"));
}

#[test]
fn a_result_gives_usage_and_the_final_answer() {
    let line = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"{\"ok\":true}","total_cost_usd":0.002,"usage":{"input_tokens":200,"cache_read_input_tokens":5,"output_tokens":40},"permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{}}],"structured_output":{"ok":true}}"#;
    assert_eq!(
        parse(&[line]),
        vec![
            AgentEvent::Usage {
                input_tokens: Some(200),
                output_tokens: Some(40),
                cached_input_tokens: Some(5),
                cost_usd: Some(0.002),
                turns: Some(2)
            },
            AgentEvent::Final {
                success: true,
                text: Some(r#"{"ok":true}"#.into()),
                structured_output: Some(json!({"ok": true})),
                permission_denials: vec![
                    json!({"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {}})
                ],
            },
        ]
    );
}

#[test]
fn a_401_reports_one_auth_error_and_a_failed_result() {
    let retry = r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":1,"error_status":401,"error":"authentication_failed"}"#;
    let synthetic = r#"{"type":"assistant","message":{"id":"u-1","model":"<synthetic>","content":[{"type":"text","text":"Failed to authenticate. API Error: 401 fake 401"}]},"error":"authentication_failed"}"#;
    let result = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"Failed to authenticate. API Error: 401 fake 401"}"#;
    let events = parse(&[retry, synthetic, result]);
    let errors: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::Error { .. }))
        .collect();
    assert_eq!(
        errors,
        vec![&AgentEvent::Error {
            kind: ErrorKind::Auth,
            status: Some(401),
            message: "Failed to authenticate. API Error: 401 fake 401".into()
        }]
    );
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Final { success: false, .. })
    ));
}

#[test]
fn a_failed_result_alone_reports_its_error() {
    let cut = r#"{"type":"result","subtype":"error_during_execution","is_error":true}"#;
    let events = parse(&[cut]);
    assert!(events.contains(&AgentEvent::Error {
        kind: ErrorKind::Network,
        status: None,
        message: "error_during_execution".into()
    }));
    let server = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":500,"result":"API Error: 500"}"#;
    assert!(parse(&[server]).contains(&AgentEvent::Error {
        kind: ErrorKind::Server,
        status: Some(500),
        message: "API Error: 500".into()
    }));
}

#[test]
fn partial_messages_stream_text_and_assemble_tool_input() {
    let lines = [
        partial(
            json!({"type": "message_start", "message": {"id": "m1", "model": "opus", "content": []}}),
        ),
        partial(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        partial(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        ),
        partial(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}}),
        ),
        partial(json!({"type": "content_block_stop", "index": 0})),
        partial(
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}}),
        ),
        partial(
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"comm"}}),
        ),
        partial(
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "and\":\"ls\"}"}}),
        ),
        partial(json!({"type": "content_block_stop", "index": 1})),
        partial(
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ),
        partial(json!({"type": "message_stop"})),
        partial(json!({"type": "ping"})),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let m1 = || Some("m1".to_owned());
    assert_eq!(
        parse(&lines),
        vec![
            AgentEvent::MessageStarted {
                message_id: "m1".into(),
                model: Some("opus".into())
            },
            AgentEvent::AssistantText {
                message_id: m1(),
                index: 0,
                text: "Hel".into(),
                partial: true
            },
            AgentEvent::AssistantText {
                message_id: m1(),
                index: 0,
                text: "lo".into(),
                partial: true
            },
            AgentEvent::ToolCall {
                id: "t1".into(),
                name: "Bash".into(),
                input: json!({"command": "ls"}),
                message_id: m1()
            },
            AgentEvent::MessageStopped {
                message_id: m1(),
                stop_reason: Some("tool_use".into())
            },
        ]
    );
}

#[test]
fn thinking_deltas_are_reasoning_and_deltas_without_a_start_have_no_message() {
    let lines = [
        partial(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        ),
        partial(
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "x"}}),
        ),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    assert_eq!(
        parse(&lines),
        vec![
            AgentEvent::Reasoning {
                message_id: None,
                index: 0,
                text: "hmm".into(),
                partial: true
            },
            AgentEvent::AssistantText {
                message_id: None,
                index: 1,
                text: "x".into(),
                partial: true
            },
        ]
    );
}

#[test]
fn a_stream_error_is_an_error_and_unknown_stream_events_are_kept() {
    let lines = [
        partial(
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        partial(json!({"type": "content_block_future", "index": 0})),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let events = parse(&lines);
    assert_eq!(
        events[0],
        AgentEvent::Error {
            kind: ErrorKind::Overloaded,
            status: None,
            message: "Overloaded".into()
        }
    );
    assert!(
        matches!(&events[1], AgentEvent::Unknown { raw } if raw["event"]["type"] == "content_block_future")
    );
}

#[test]
fn a_cut_tool_input_keeps_its_text() {
    let lines = [
        partial(json!({"type": "message_start", "message": {"id": "m1"}})),
        partial(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "Write", "input": {}}}),
        ),
        partial(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"file_"}}),
        ),
        partial(json!({"type": "content_block_stop", "index": 0})),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    assert!(parse(&lines).contains(&AgentEvent::ToolCall {
        id: "t1".into(),
        name: "Write".into(),
        input: json!("{\"file_"),
        message_id: Some("m1".into())
    }));
}

#[test]
fn a_field_of_an_unexpected_type_keeps_the_line() {
    // `message` as a string fits no known shape: the line is kept, nothing panics.
    let line = r#"{"type":"assistant","message":"oops"}"#;
    assert!(matches!(&parse(&[line])[0], AgentEvent::Unknown { raw } if raw["message"] == "oops"));
}

#[test]
fn a_subagents_deltas_do_not_land_in_the_main_message() {
    let sub = |event: Value| {
        json!({"type": "stream_event", "event": event, "parent_tool_use_id": "toolu_task"})
            .to_string()
    };
    let lines = [
        partial(json!({"type": "message_start", "message": {"id": "main"}})),
        sub(json!({"type": "message_start", "message": {"id": "sub"}})),
        partial(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "A"}}),
        ),
        sub(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "B"}}),
        ),
        sub(json!({"type": "message_stop"})),
        partial(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "C"}}),
        ),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let texts: Vec<(Option<String>, String)> = parse(&lines)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::AssistantText {
                message_id, text, ..
            } => Some((message_id, text)),
            _ => None,
        })
        .collect();
    let main = || Some("main".to_owned());
    assert_eq!(
        texts,
        vec![
            (main(), "A".to_owned()),
            (Some("sub".to_owned()), "B".to_owned()),
            (main(), "C".to_owned()),
        ]
    );
}
