use super::*;
use serde_json::json;

fn parse(lines: &[&str]) -> Vec<AgentEvent> {
    let mut p = GeminiParser::default();
    let mut out = Vec::new();
    for line in lines {
        p.feed_str(line, &mut out);
    }
    out
}

#[test]
fn a_tool_run_numbers_responses_and_concatenates_the_answer() {
    let events = parse(&[
        r#"{"type":"init","session_id":"g-1","model":"gemini-x"}"#,
        r#"{"type":"message","role":"user","content":"run it"}"#,
        r#"{"type":"message","role":"assistant","content":"Running","delta":true}"#,
        r#"{"type":"tool_use","tool_name":"run_shell_command","tool_id":"c1","parameters":{"command":"ls"}}"#,
        r#"{"type":"tool_result","tool_id":"c1","status":"success","output":"a.txt"}"#,
        r#"{"type":"message","role":"assistant","content":" done","delta":true}"#,
        r#"{"type":"result","status":"success","stats":{"input_tokens":200,"output_tokens":40,"cached":1}}"#,
    ]);
    let id = |n: u32| Some(format!("gemini-{n}"));
    assert_eq!(
        events,
        vec![
            AgentEvent::SessionStarted {
                session_id: "g-1".into(),
                model: Some("gemini-x".into()),
                tools: vec![],
                cwd: None,
                version: None,
                transcript: None
            },
            AgentEvent::UserMessage {
                text: "run it".into()
            },
            AgentEvent::AssistantText {
                message_id: id(1),
                index: 0,
                text: "Running".into(),
                partial: true
            },
            AgentEvent::ToolCall {
                id: "c1".into(),
                name: "run_shell_command".into(),
                input: json!({"command": "ls"}),
                message_id: id(1)
            },
            AgentEvent::ToolResult {
                tool_call_id: "c1".into(),
                content: "a.txt".into(),
                is_error: false
            },
            AgentEvent::AssistantText {
                message_id: id(2),
                index: 0,
                text: " done".into(),
                partial: true
            },
            AgentEvent::Usage {
                input_tokens: Some(200),
                output_tokens: Some(40),
                cached_input_tokens: Some(1),
                cost_usd: None,
                turns: None
            },
            AgentEvent::Final {
                success: true,
                text: Some("Running done".into()),
                structured_output: None,
                permission_denials: vec![]
            },
        ]
    );
}

#[test]
fn a_failed_tool_and_a_failed_run_are_errors() {
    let events = parse(&[
        r#"{"type":"tool_result","tool_id":"c2","status":"error","error":{"type":"x","message":"no such file"}}"#,
        r#"{"type":"error","severity":"warning","message":"loop detected"}"#,
        r#"{"type":"result","status":"error","error":{"type":"FatalAuthenticationError","message":"API key not valid"},"stats":{}}"#,
    ]);
    assert_eq!(
        events[0],
        AgentEvent::ToolResult {
            tool_call_id: "c2".into(),
            content: "no such file".into(),
            is_error: true
        }
    );
    assert_eq!(
        events[1],
        AgentEvent::Warning {
            message: "loop detected".into()
        }
    );
    assert_eq!(
        events[3],
        AgentEvent::Error {
            kind: ErrorKind::Auth,
            status: None,
            message: "API key not valid".into()
        }
    );
    assert!(matches!(
        &events[4],
        AgentEvent::Final {
            success: false,
            text: None,
            ..
        }
    ));
}

#[test]
fn a_json_answer_is_the_structured_output() {
    let events = parse(&[
        r#"{"type":"message","role":"assistant","content":"{\"ok\":","delta":true}"#,
        r#"{"type":"message","role":"assistant","content":"true}","delta":true}"#,
        r#"{"type":"result","status":"success","stats":{}}"#,
    ]);
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Final { structured_output: Some(v), .. }) if *v == json!({"ok": true})
    ));
}
