//! Messages said to a running ACP agent: held until the running prompt returns, or (`now`)
//! cancelling it; answers out of order; fed lines Gemini CLI 0.61 wrote in
//! ../shared/agents/turns.md §4 (g1, g2, g3b).

use super::*;
use crate::agent::{Owner, Timeline, TurnChange, Turns};
use crate::process::Role;

/// A driver whose prompt "fix it" (request 3) runs in session `s-1`.
fn prompted() -> AcpDriver {
    let mut d = AcpDriver::new(DriverSetup {
        role: Role::Worker,
        cwd: "/w".into(),
        model: None,
        resume: None,
    });
    d.open("fix it", &mut Vec::new());
    feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}"#,
    );
    let (events, lines) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1"}}"#,
    );
    assert_eq!(lines[0]["params"]["prompt"][0]["text"], "fix it");
    assert!(matches!(
        &events[..],
        [AgentEvent::SessionStarted { .. }, AgentEvent::TurnStarted]
    ));
    d
}

fn feed(d: &mut AcpDriver, line: &str) -> (Vec<AgentEvent>, Vec<Value>) {
    let (mut events, mut out) = (Vec::new(), Vec::new());
    d.feed(line.as_bytes(), &mut events, &mut out);
    (events, json_lines(&out))
}

fn json_lines(out: &[Reply]) -> Vec<Value> {
    out.iter()
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

fn say(d: &mut AcpDriver, id: &str, text: &str, now: bool) -> (Delivery, Vec<Value>) {
    let mut out = Vec::new();
    let delivery = d.say(
        &Say {
            id: id.into(),
            text: text.into(),
            now,
        },
        &mut out,
    );
    (delivery, json_lines(&out))
}

fn chunk(text: &str) -> String {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s-1",
           "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})
    .to_string()
}

fn taken(id: &str) -> AgentEvent {
    AgentEvent::MessageTaken {
        message_id: id.into(),
    }
}

fn done(text: Option<&str>, success: bool) -> AgentEvent {
    AgentEvent::Final {
        success,
        text: text.map(str::to_string),
        structured_output: None,
        permission_denials: vec![],
    }
}

const END_TURN_3: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#;
const CANCELLED_3: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}"#;
const END_TURN_4: &str = r#"{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":50,"output_tokens":5}}}}}"#;

#[test]
fn messages_said_while_a_prompt_runs_wait_for_it_and_go_as_one_prompt() {
    let mut d = prompted();
    feed(&mut d, &chunk("reply to FIRST"));
    assert_eq!(
        say(&mut d, "u-2", "second", false),
        (Delivery::Held, vec![])
    );
    assert_eq!(say(&mut d, "u-3", "third", false), (Delivery::Held, vec![]));
    let (events, lines) = feed(&mut d, END_TURN_3);
    assert_eq!(
        events,
        [
            done(Some("reply to FIRST"), true),
            AgentEvent::TurnStarted,
            taken("u-2"),
            taken("u-3"),
        ]
    );
    assert_eq!(
        lines,
        [
            json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
               "params": {"sessionId": "s-1", "prompt": [{"type": "text", "text": "second\n\nthird"}]}})
        ]
    );
    let (events, _) = feed(&mut d, &chunk("reply to SECOND"));
    assert!(
        matches!(&events[0], AgentEvent::AssistantText { message_id: Some(m), .. } if m == "m2")
    );
    let (events, lines) = feed(&mut d, END_TURN_4);
    assert!(lines.is_empty());
    assert!(matches!(
        &events[..],
        [AgentEvent::Usage { turns: Some(1), .. }, AgentEvent::Final { success: true, text: Some(t), .. }] if t == "reply to SECOND"
    ));
}

#[test]
fn a_message_now_cancels_the_running_prompt_and_carries_its_account() {
    // g2: `session/cancel`, then the new prompt; the first is answered `cancelled`.
    let mut d = prompted();
    let mut turns = Turns::new();
    let mut timeline = Timeline::new();
    turns.prompted();
    let mut apply = |events: &[AgentEvent], turns: &mut Turns| {
        let mut changes = Vec::new();
        for e in events {
            timeline.apply(e);
            changes.extend(turns.apply(e));
        }
        changes
    };
    let (events, _) = feed(&mut d, &chunk("I will look at a.rs"));
    apply(&events, &mut turns);
    let (events, _) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call","toolCallId":"read_file__1","status":"pending","title":"a.rs","kind":"read"}}}"#,
    );
    apply(&events, &mut turns);
    assert_eq!(say(&mut d, "u-1", "held one", false).0, Delivery::Held);
    turns.message_sent("u-1");
    let (delivery, lines) = say(&mut d, "u-2", "look at b.rs instead", true);
    turns.message_sent("u-2");
    assert_eq!(delivery, Delivery::Sent);
    assert_eq!(
        lines[0],
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s-1"}})
    );
    assert_eq!(lines[1]["method"], "session/prompt");
    assert_eq!(lines[1]["id"], 4);
    let text = lines[1]["params"]["prompt"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("[This message interrupted your previous turn"));
    assert!(text.contains("asked:\nfix it"), "{text}");
    assert!(text.contains("said so far:\nI will look at a.rs"), "{text}");
    assert!(text.contains("tools:\n- a.rs]"), "{text}");
    assert!(
        text.ends_with("]\n\nheld one\n\nlook at b.rs instead"),
        "{text}"
    );

    let (events, lines) = feed(&mut d, CANCELLED_3);
    assert!(lines.is_empty(), "the new prompt went already");
    assert_eq!(
        events,
        [
            AgentEvent::MessageDiscarded {
                message_id: "m1".into(),
                reason: "cancelled".into()
            },
            AgentEvent::TurnInfo {
                autonomous: false,
                interrupted: true
            },
            done(None, true),
            AgentEvent::TurnStarted,
            taken("u-1"),
            taken("u-2"),
        ]
    );
    let changes = apply(&events, &mut turns);
    assert_eq!(
        changes,
        [
            TurnChange::Ended {
                owner: Owner::Foreground,
                interrupted: true
            },
            TurnChange::Began {
                owner: Owner::Foreground
            }
        ]
    );
    let (events, _) = feed(&mut d, &chunk("reply to SECOND"));
    apply(&events, &mut turns);
    let (events, _) = feed(&mut d, END_TURN_4);
    apply(&events, &mut turns);
    assert!(!turns.keep_open(), "both turns over, both messages in");
    assert_eq!(turns.counts(), (2, 0));
    assert_eq!(timeline.state(), crate::agent::RunState::Completed);
    assert_eq!(timeline.final_text(), Some("reply to SECOND"));
    let said: Vec<_> = timeline.messages().iter().map(|m| m.text()).collect();
    assert_eq!(
        said,
        ["reply to SECOND"],
        "the cancelled text was never said"
    );
}

#[test]
fn answers_out_of_order_are_told_in_order() {
    // g3b: the second prompt's `end_turn` came before the first one's `cancelled`.
    let mut d = prompted();
    feed(&mut d, &chunk("Running it."));
    let (_, lines) = say(&mut d, "u-2", "second", true);
    assert_eq!(lines.len(), 2);
    let (events, _) = feed(&mut d, &chunk("reply to SECOND"));
    assert!(
        matches!(&events[..], [AgentEvent::AssistantText { message_id: Some(m), .. }] if m == "m2"),
        "the new prompt's text is its own message: {events:?}"
    );
    let (events, _) = feed(&mut d, END_TURN_4);
    assert!(
        events.is_empty(),
        "waits for the first prompt's end: {events:?}"
    );
    let (events, _) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Command cancelled by user."}}]}}}"#,
    );
    assert_eq!(events.len(), 1);
    let (events, _) = feed(&mut d, CANCELLED_3);
    let kinds: Vec<_> = events
        .iter()
        .map(|e| match e {
            AgentEvent::MessageDiscarded { message_id, .. } => format!("discarded {message_id}"),
            AgentEvent::TurnInfo { .. } => "info".into(),
            AgentEvent::Final { text, .. } => format!("final {text:?}"),
            AgentEvent::TurnStarted => "started".into(),
            AgentEvent::MessageTaken { message_id } => format!("taken {message_id}"),
            AgentEvent::Usage { .. } => "usage".into(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "discarded m1",
            "info",
            "final None",
            "started",
            "taken u-2",
            "usage",
            "final Some(\"reply to SECOND\")"
        ]
    );
}

#[test]
fn a_message_while_idle_is_the_next_prompt_at_once() {
    let mut d = prompted();
    feed(&mut d, END_TURN_3);
    let (delivery, lines) = say(&mut d, "u-5", "and the docs", false);
    assert_eq!(delivery, Delivery::Sent);
    assert_eq!(lines[0]["id"], 4);
    assert_eq!(lines[0]["params"]["prompt"][0]["text"], "and the docs");
    // Its turn is told with the agent's next line, before it.
    let (events, _) = feed(&mut d, &chunk("ok"));
    assert!(
        matches!(&events[..], [AgentEvent::TurnStarted, AgentEvent::MessageTaken { message_id }, AgentEvent::AssistantText { .. }] if message_id == "u-5"),
        "{events:?}"
    );
}

#[test]
fn a_message_said_before_the_session_goes_with_the_prompt_and_held_ones_can_be_withdrawn() {
    let mut d = AcpDriver::new(DriverSetup {
        role: Role::Worker,
        cwd: "/w".into(),
        model: None,
        resume: None,
    });
    d.open("fix it", &mut Vec::new());
    assert_eq!(say(&mut d, "u-1", "early", true).0, Delivery::Held);
    feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}"#,
    );
    let (events, lines) = feed(
        &mut d,
        r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1"}}"#,
    );
    assert_eq!(lines[0]["params"]["prompt"][0]["text"], "fix it\n\nearly");
    assert!(matches!(
        &events[..],
        [AgentEvent::SessionStarted { .. }, AgentEvent::TurnStarted, AgentEvent::MessageTaken { message_id }] if message_id == "u-1"
    ));
    say(&mut d, "u-2", "later", false);
    assert!(d.withdraw("u-2", &mut Vec::new()));
    assert!(!d.withdraw("u-1", &mut Vec::new()), "taken in already");
    let (_, lines) = feed(&mut d, END_TURN_3);
    assert!(lines.is_empty(), "nothing left to send");
}
