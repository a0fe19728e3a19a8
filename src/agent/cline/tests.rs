//! The parser fed real output of Cline 3.0.65 (`tests/samples/cline-*.jsonl`, captured against
//! the fake model server: a text answer, a shell command and a file edit, plan mode refusing a
//! write, a 401, a 500 after Cline's own retries, and a server that is down).

use super::*;
use crate::agent::{RunState, Timeline};
use serde_json::json;

fn sample(name: &str) -> Vec<AgentEvent> {
    let path = format!("{}/tests/samples/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse(&text.lines().collect::<Vec<_>>())
}

fn parse(lines: &[&str]) -> Vec<AgentEvent> {
    let mut p = ClineParser::default();
    let mut out = Vec::new();
    for line in lines {
        p.feed_str(line, &mut out);
    }
    out
}

fn timeline(events: &[AgentEvent]) -> Timeline {
    let mut t = Timeline::new();
    for e in events {
        t.apply(e);
    }
    t.end_of_stream();
    t
}

#[test]
fn a_text_answer_is_one_message_and_the_final_text() {
    let events = sample("cline-hello.jsonl");
    let id = Some("cline-1".to_owned());
    assert_eq!(
        events,
        vec![
            AgentEvent::TurnStarted,
            AgentEvent::AssistantText {
                message_id: id.clone(),
                index: 0,
                text: "Hello from the fake model.".into(),
                partial: true
            },
            AgentEvent::Usage {
                input_tokens: Some(100),
                output_tokens: Some(20),
                cached_input_tokens: None,
                cost_usd: None,
                turns: None
            },
            AgentEvent::AssistantText {
                message_id: id.clone(),
                index: 0,
                text: "Hello from the fake model.".into(),
                partial: false
            },
            AgentEvent::MessageStopped {
                message_id: id,
                stop_reason: Some("end_turn".into())
            },
            AgentEvent::Usage {
                input_tokens: None,
                output_tokens: None,
                cached_input_tokens: None,
                cost_usd: None,
                turns: Some(1)
            },
            AgentEvent::Final {
                success: true,
                text: Some("Hello from the fake model.".into()),
                structured_output: None,
                permission_denials: vec![]
            },
        ]
    );
    let t = timeline(&events);
    assert_eq!(t.final_text(), Some("Hello from the fake model."));
    assert_eq!(
        t.messages().len(),
        1,
        "delta and whole text are one message"
    );
    assert_eq!(t.usage().input_tokens, 100);
}

#[test]
fn tools_are_calls_and_results_and_usage_adds_up() {
    let events = sample("cline-tools.jsonl");
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCall {
                id,
                name,
                input,
                message_id,
            } => Some((
                id.as_str(),
                name.as_str(),
                input.clone(),
                message_id.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                "call_0",
                "run_commands",
                json!({"commands": ["echo hi from cline > made.txt && cat made.txt"]}),
                Some("cline-1".into())
            ),
            (
                "call_1",
                "editor",
                json!({"path": "/tmp/clx/home/work/ed.txt", "new_text": "edited by cline\n"}),
                Some("cline-2".into())
            ),
        ]
    );
    let results: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => Some((tool_call_id.as_str(), content.as_str(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        vec![
            ("call_0", "hi from cline\n", false),
            (
                "call_1",
                "File created successfully at: /tmp/clx/home/work/ed.txt",
                false
            ),
        ]
    );
    let t = timeline(&events);
    assert_eq!(t.final_text(), Some("done zq9"));
    assert_eq!((t.usage().input_tokens, t.usage().output_tokens), (300, 60));
    assert_eq!(t.usage().turns, 3);
    assert_eq!(t.state(), RunState::Completed);
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, AgentEvent::Unknown { .. })),
        "{events:#?}"
    );
}

#[test]
fn plan_mode_refusals_are_failed_tools_and_warnings_not_a_failure() {
    let events = sample("cline-plan.jsonl");
    let failed = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolResult { is_error: true, .. }))
        .count();
    assert_eq!(failed, 2, "the redirect and the missing editor tool");
    let refused = events.iter().find_map(|e| match e {
        AgentEvent::ToolResult { content, .. } => Some(content.clone()),
        _ => None,
    });
    assert!(refused.unwrap().contains("blocked in plan mode"));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::Warning { .. }))
            .count(),
        2
    );
    let t = timeline(&events);
    assert!(t.errors().is_empty());
    assert_eq!(
        t.final_result().unwrap().structured_output,
        Some(json!({"verdict": "done"}))
    );
}

#[test]
fn a_401_is_an_auth_error_reported_once() {
    let events = sample("cline-401.jsonl");
    let errors: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Error { kind, message, .. } => Some((*kind, message.as_str())),
            _ => None,
        })
        .collect();
    // The bare `error` line after `run_result` repeats the message without the class.
    assert_eq!(errors, vec![(ErrorKind::Auth, "fake 401")]);
    let t = timeline(&events);
    assert_eq!(t.state(), RunState::Error);
    assert!(!t.final_result().unwrap().success);
    assert_eq!(t.final_text(), None, "the error is not an answer");
}

#[test]
fn a_refused_connection_is_a_network_error_and_a_500_is_not_transient() {
    let kinds = |name: &str| -> Vec<ErrorKind> {
        sample(name)
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Error { kind, .. } => Some(*kind),
                _ => None,
            })
            .collect()
    };
    assert_eq!(kinds("cline-server-down.jsonl"), vec![ErrorKind::Network]);
    // Cline retried it five times before giving up, and names neither status nor class.
    assert_eq!(kinds("cline-500.jsonl"), vec![ErrorKind::Other]);
}

/// The bare `error` line is the failure when no `error` event came before it.
#[test]
fn a_bare_error_line_alone_is_the_failure() {
    let events = parse(&[
        r#"{"ts":"2026-11-23T20:33:49.880Z","type":"error","message":"JSON output mode requires a prompt argument or piped stdin (interactive mode is unsupported)"}"#,
    ]);
    assert!(matches!(
        &events[..],
        [AgentEvent::Error { kind: ErrorKind::Other, message, .. }] if message.starts_with("JSON output mode")
    ));
}

#[test]
fn retries_reasoning_and_unknown_lines() {
    let events = parse(&[
        r#"{"type":"agent_event","event":{"type":"iteration_start","iteration":4}}"#,
        r#"{"type":"agent_event","event":{"type":"content_start","contentType":"reasoning","reasoning":"hmm","redacted":false}}"#,
        r#"{"type":"agent_event","event":{"type":"notice","noticeType":"status","displayRole":"status","message":"provider error — retrying (attempt 2/3)","metadata":{"kind":"provider_error_retry","phase":"started"}}}"#,
        r#"{"type":"agent_event","event":{"type":"notice","noticeType":"status","message":"context window exceeded — compacting and retrying","metadata":{"kind":"context_overflow_recovery"}}}"#,
        r#"{"type":"agent_event","event":{"type":"brand_new","x":1}}"#,
        r#"{"type":"something_else"}"#,
        r#"{"ts":"2026-11-23T20:58:30.055Z","type":"run_aborted","reason":"local_abort","message":"aborted"}"#,
    ]);
    assert_eq!(
        events[1],
        AgentEvent::Reasoning {
            message_id: Some("cline-4".into()),
            index: 1,
            text: "hmm".into(),
            partial: true
        }
    );
    assert!(matches!(
        events[2],
        AgentEvent::RetryNotice {
            attempt: Some(2),
            max_attempts: Some(3),
            ..
        }
    ));
    assert!(matches!(events[3], AgentEvent::Warning { .. }));
    assert!(
        matches!(&events[4], AgentEvent::Unknown { raw } if raw["event"]["type"] == "brand_new")
    );
    assert!(matches!(events[5], AgentEvent::Unknown { .. }));
    assert_eq!(
        events[6],
        AgentEvent::Warning {
            message: "cline run aborted: local_abort".into()
        }
    );
}
