use super::*;
use crate::agent::ErrorKind;
use serde_json::json;

fn text(id: Option<&str>, index: u32, text: &str, partial: bool) -> AgentEvent {
    AgentEvent::AssistantText {
        message_id: id.map(str::to_owned),
        index,
        text: text.into(),
        partial,
    }
}

fn start(id: &str) -> AgentEvent {
    AgentEvent::MessageStarted {
        message_id: id.into(),
        model: Some("opus".into()),
    }
}

fn stop(id: &str, reason: &str) -> AgentEvent {
    AgentEvent::MessageStopped {
        message_id: Some(id.into()),
        stop_reason: Some(reason.into()),
    }
}

fn done(text: &str) -> AgentEvent {
    AgentEvent::Final {
        success: true,
        text: Some(text.into()),
        structured_output: None,
        permission_denials: vec![],
    }
}

fn timeline(events: &[AgentEvent]) -> Timeline {
    let mut t = Timeline::new();
    for e in events {
        t.apply(e);
    }
    t
}

#[test]
fn a_whole_block_after_its_deltas_keeps_the_text_once() {
    let t = timeline(&[
        start("m1"),
        text(Some("m1"), 0, "Hel", true),
        text(Some("m1"), 0, "lo", true),
        text(Some("m1"), 0, "Hello", false),
        // A straggling delta after the whole block is a repeat.
        text(Some("m1"), 0, "lo", true),
        stop("m1", "end_turn"),
    ]);
    assert_eq!(t.messages().len(), 1);
    assert_eq!(t.messages()[0].text(), "Hello");
    assert!(t.messages()[0].started && t.messages()[0].stopped);
}

#[test]
fn deltas_before_their_start_are_reconciled() {
    // Named deltas first: the start finds the message.
    let t = timeline(&[text(Some("m1"), 0, "Hi", true), start("m1")]);
    assert_eq!(t.messages().len(), 1);
    assert_eq!(t.message("m1").unwrap().model.as_deref(), Some("opus"));
    // Id-less deltas first: the next start adopts them.
    let t = timeline(&[
        text(None, 0, "Hi ", true),
        text(None, 0, "there", true),
        start("m2"),
        text(Some("m2"), 1, "!", true),
    ]);
    assert_eq!(t.messages().len(), 1);
    assert_eq!(t.message("m2").unwrap().text(), "Hi there!");
}

#[test]
fn blocks_read_in_index_order_whatever_their_arrival() {
    let t = timeline(&[
        text(Some("m1"), 2, "c", false),
        text(Some("m1"), 0, "a", false),
        AgentEvent::Reasoning {
            message_id: Some("m1".into()),
            index: 1,
            text: "thinking".into(),
            partial: false,
        },
    ]);
    assert_eq!(t.message("m1").unwrap().text(), "ac");
}

#[test]
fn a_tool_result_before_its_call_makes_one_entry() {
    let t = timeline(&[
        AgentEvent::ToolResult {
            tool_call_id: "t1".into(),
            content: "ok".into(),
            is_error: false,
        },
        AgentEvent::ToolCall {
            id: "t1".into(),
            name: "Bash".into(),
            input: json!({"command": "ls"}),
            message_id: Some("m1".into()),
        },
        // The whole assistant line repeats the call streamed before.
        AgentEvent::ToolCall {
            id: "t1".into(),
            name: "Bash".into(),
            input: json!({"command": "ls"}),
            message_id: None,
        },
    ]);
    assert_eq!(t.tools().len(), 1);
    let tool = t.tool_call("t1").unwrap();
    assert_eq!(tool.name.as_deref(), Some("Bash"));
    assert_eq!(tool.result.as_deref(), Some("ok"));
    assert_eq!(tool.message_id.as_deref(), Some("m1"));
}

#[test]
fn the_lifecycle_follows_a_tool_run_to_completion() {
    let mut t = Timeline::new();
    let mut states = vec![t.state()];
    for e in [
        AgentEvent::SessionStarted {
            session_id: "s1".into(),
            model: None,
            tools: vec![],
            cwd: None,
            version: None,
            transcript: None,
        },
        start("m1"),
        stop("m1", "tool_use"),
        AgentEvent::ToolResult {
            tool_call_id: "t1".into(),
            content: String::new(),
            is_error: false,
        },
        text(Some("m2"), 0, "done", false),
        stop("m2", "end_turn"),
        done("done"),
    ] {
        t.apply(&e);
        states.push(t.state());
    }
    use RunState::*;
    assert_eq!(
        states,
        [
            Queued,
            AwaitingResponse,
            Streaming,
            AwaitingResponse,
            AwaitingResponse,
            Streaming,
            Finalizing,
            Completed
        ]
    );
    assert_eq!(t.session_id(), Some("s1"));
    assert_eq!(t.final_text(), Some("done"));
    assert_eq!(t.last_assistant_message().unwrap().id, "m2");
}

#[test]
fn a_failed_result_is_an_error_and_an_interrupt_wins() {
    let failed = AgentEvent::Final {
        success: false,
        text: None,
        structured_output: None,
        permission_denials: vec![],
    };
    assert_eq!(timeline(&[failed]).state(), RunState::Error);
    let mut t = timeline(&[start("m1")]);
    t.request_interrupt();
    // Claude answers a SIGTERM during a tool with a "success" result: still interrupted.
    t.apply(&done("partial"));
    assert_eq!(t.state(), RunState::Interrupted);
}

#[test]
fn a_stream_that_ends_without_a_result_is_an_error_or_interrupted() {
    let mut t = timeline(&[start("m1")]);
    t.end_of_stream();
    assert_eq!(t.state(), RunState::Error);
    let mut t = timeline(&[start("m1")]);
    t.request_interrupt();
    t.end_of_stream();
    assert_eq!(t.state(), RunState::Interrupted);
    // A finished run stays finished.
    let mut t = timeline(&[done("x")]);
    t.end_of_stream();
    assert_eq!(t.state(), RunState::Completed);
}

#[test]
fn output_after_the_end_starts_a_new_run_and_begin_run_resets() {
    let mut t = timeline(&[done("first")]);
    t.apply(&start("m9"));
    assert_eq!((t.runs(), t.state()), (2, RunState::Streaming));
    assert_eq!(t.final_result(), None);
    assert_eq!(t.begin_run(), 3);
    assert_eq!(t.state(), RunState::Queued);
    assert_eq!(t.messages().len(), 1, "messages outlive runs");
}

#[test]
fn a_discarded_message_is_neither_said_nor_the_answer() {
    // Codex c2: a partly streamed agentMessage dropped by a steer, then the steer's answer.
    let discarded = AgentEvent::MessageDiscarded {
        message_id: "msg_0b3f".into(),
        reason: "steered".into(),
    };
    let mut t = timeline(&[
        text(Some("m0"), 0, "Looking.", false),
        text(Some("msg_0b3f"), 0, "reply to FIRST", true),
        discarded.clone(),
        // A late fragment of the dropped message does not bring it back.
        text(Some("msg_0b3f"), 0, ", a slowly streamed answer", true),
        stop("msg_0b3f", "end_turn"),
    ]);
    assert_eq!(t.messages().len(), 1);
    assert!(t.message("msg_0b3f").is_none());
    assert_eq!(t.last_assistant_message().unwrap().text(), "Looking.");
    assert_eq!(
        t.discarded(),
        &[("msg_0b3f".to_string(), "steered".to_string())]
    );
    t.apply(&text(Some("msg_steer"), 0, "reply to STEER", false));
    t.apply(&AgentEvent::Final {
        success: true,
        text: None,
        structured_output: None,
        permission_denials: vec![],
    });
    assert_eq!(t.last_assistant_message().unwrap().text(), "reply to STEER");
    assert_eq!(t.message("m0").unwrap().text(), "Looking.", "ids still map");
    t.apply(&discarded);
    assert_eq!(t.discarded().len(), 1, "discarded once");
}

#[test]
fn discarding_the_unnamed_message_forgets_it() {
    let mut t = timeline(&[text(Some("a"), 0, "A", false), text(None, 0, "x", true)]);
    t.apply(&start("b"));
    t.apply(&AgentEvent::MessageDiscarded {
        message_id: "b".into(),
        reason: "cancelled".into(),
    });
    t.apply(&text(None, 0, "y", true));
    let texts: Vec<_> = t.messages().iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["A", "y"]);
}

#[test]
fn retries_are_told_apart_from_progress() {
    let retry = AgentEvent::RetryNotice {
        attempt: Some(1),
        max_attempts: None,
        delay_ms: None,
        kind: Some(ErrorKind::Network),
        status: None,
        message: None,
    };
    let mut t = timeline(&[start("m1"), retry.clone()]);
    assert!(t.last_was_retry());
    t.apply(&AgentEvent::Unknown { raw: json!({}) });
    assert!(
        t.last_was_retry(),
        "an unknown line says nothing about progress"
    );
    t.apply(&text(Some("m1"), 0, "x", true));
    assert!(!t.last_was_retry());
    assert_eq!(t.unknown_count(), 1);
    assert_eq!(t.event_count(), 4);
}

#[test]
fn usage_errors_and_structured_output_are_collected() {
    let usage = |input, cost| AgentEvent::Usage {
        input_tokens: Some(input),
        output_tokens: Some(10),
        cached_input_tokens: None,
        cost_usd: cost,
        turns: Some(1),
    };
    let t = timeline(&[
        usage(100, None),
        usage(50, Some(0.25)),
        AgentEvent::Error {
            kind: ErrorKind::Auth,
            status: Some(401),
            message: "bad key".into(),
        },
        AgentEvent::Final {
            success: true,
            text: Some("{}".into()),
            structured_output: Some(json!({"ok": true})),
            permission_denials: vec![],
        },
    ]);
    assert_eq!(
        t.usage(),
        &UsageTotals {
            input_tokens: 150,
            output_tokens: 20,
            cached_input_tokens: 0,
            cost_usd: Some(0.25),
            turns: 2
        }
    );
    assert_eq!(t.errors()[0].kind, ErrorKind::Auth);
    assert_eq!(t.structured_output(), Some(&json!({"ok": true})));
}

mod any_order {
    use super::*;
    use proptest::prelude::*;

    /// One streamed message with a tool call, as Claude's partial messages give it.
    fn streamed() -> Vec<AgentEvent> {
        vec![
            start("m1"),
            text(Some("m1"), 0, "Hel", true),
            text(Some("m1"), 0, "lo ", true),
            text(Some("m1"), 0, "you", true),
            text(Some("m1"), 0, "Hello you", false),
            AgentEvent::ToolCall {
                id: "t1".into(),
                name: "Bash".into(),
                input: json!({"command": "ls"}),
                message_id: Some("m1".into()),
            },
            stop("m1", "tool_use"),
            AgentEvent::ToolResult {
                tool_call_id: "t1".into(),
                content: "a.txt".into(),
                is_error: false,
            },
        ]
    }

    proptest! {
        /// Whatever order the events arrive in, the timeline holds one message with its text
        /// once and one tool call with its result.
        #[test]
        fn any_order_assembles_the_same_run(order in Just((0..8).collect::<Vec<usize>>()).prop_shuffle()) {
            let events = streamed();
            let mut t = Timeline::new();
            for &i in &order {
                t.apply(&events[i]);
            }
            prop_assert_eq!(t.messages().len(), 1);
            prop_assert_eq!(t.message("m1").map(Message::text), Some("Hello you".to_owned()));
            prop_assert_eq!(t.tools().len(), 1);
            let tool = t.tool_call("t1").unwrap();
            prop_assert_eq!(tool.name.as_deref(), Some("Bash"));
            prop_assert_eq!(tool.result.as_deref(), Some("a.txt"));
            prop_assert!(!t.state().is_terminal());
        }
    }
}
