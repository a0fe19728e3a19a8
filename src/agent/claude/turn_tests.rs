//! Background tasks, autonomous turns, replayed messages and interrupted turns, read from the
//! lines Claude Code 2.1.197 wrote in ../shared/agents/turns.md (trimmed where it shortened
//! them with `…`).

use super::input::{cancel_message, said, stop_task};
use super::*;
use crate::agent::{Delivery, Driver, Say, Timeline};
use serde_json::json;

fn parse(lines: &[&str]) -> Vec<AgentEvent> {
    let mut p = ClaudeParser::default();
    let mut out = Vec::new();
    for line in lines {
        p.feed_str(line, &mut out);
    }
    out
}

/// Scenario s1: a Bash started with `run_in_background`, the turn's result, the task's end, its
/// notification, and the turn Claude takes by itself.
const S1: [&str; 9] = [
    r#"{"type":"assistant","message":{"id":"msg_b815d289a8684d1b9bfe1e9b","role":"assistant","content":[{"type":"tool_use","id":"toolu_2ebb7dfada1d40149dbad487","name":"Bash","input":{"command":"sleep 6; echo BGDONE-S1","description":"Run scripted command","run_in_background":true}}]},"parent_tool_use_id":null,"session_id":"81f0f03f-408f-474c-b547-40d8830d8ab8","uuid":"c2ca487f-0001"}"#,
    r#"{"type":"system","subtype":"task_started","task_id":"bnf5rj0k2","tool_use_id":"toolu_2ebb7dfada1d40149dbad487","description":"Run scripted command","task_type":"local_bash","uuid":"04a8a389-0001","session_id":"81f0f03f-408f-474c-b547-40d8830d8ab8"}"#,
    r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_2ebb7dfada1d40149dbad487","type":"tool_result","content":"Command running in background with ID: bnf5rj0k2. Output is being written to: /tmp/claude-0/w/81f0f03f/tasks/bnf5rj0k2.output. You will be notified when it completes.","is_error":false}]},"parent_tool_use_id":null,"session_id":"81f0f03f-408f-474c-b547-40d8830d8ab8","uuid":"5b1e-0001","tool_use_result":{"stdout":"","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false,"backgroundTaskId":"bnf5rj0k2"}}"#,
    r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":180,"num_turns":2,"result":"Tool finished. reply","stop_reason":"end_turn","session_id":"81f0f03f-408f-474c-b547-40d8830d8ab8","total_cost_usd":0.002,"usage":{"input_tokens":200,"output_tokens":40},"terminal_reason":"completed","uuid":"6976232d-0001"}"#,
    r#"{"type":"system","subtype":"task_updated","task_id":"bnf5rj0k2","patch":{"status":"completed","end_time":1795547077108},"uuid":"477bd8ac-0001","session_id":"81f0f03f-408f-474c-b547-40d8830d8ab8"}"#,
    r#"{"type":"system","subtype":"task_notification","task_id":"bnf5rj0k2","tool_use_id":"toolu_2ebb7dfada1d40149dbad487","status":"completed","output_file":"/tmp/claude-0/w/81f0f03f/tasks/bnf5rj0k2.output","summary":"Background command \"Run scripted command\" completed (exit code 0)","session_id":"81f0f03f-408f-474c-b547-40d8830d8ab8","uuid":"3c925e3b-0001"}"#,
    r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"81f0f03f-408f-474c-b547-40d8830d8ab8","tools":["Bash"],"model":"claude-opus-4-8[1m]","uuid":"c2009b65-0001"}"#,
    r#"{"type":"assistant","message":{"id":"msg_0707be9c29424814b85cb4ab","role":"assistant","content":[{"type":"text","text":"Notified: <task-notification> <task-id>bnf5rj0k2</task-id>"}],"stop_reason":null},"parent_tool_use_id":null,"session_id":"81f0f03f-408f-474c-b547-40d8830d8ab8","uuid":"a3f0496b-0001"}"#,
    r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Notified: <task-notification>","stop_reason":"end_turn","session_id":"81f0f03f-408f-474c-b547-40d8830d8ab8","total_cost_usd":0.003,"usage":{"input_tokens":100,"output_tokens":20},"modelUsage":{"claude-opus-4-8[1m]":{"inputTokens":300,"outputTokens":60,"costUSD":0.003}},"terminal_reason":"completed","origin":{"kind":"task-notification"},"uuid":"0c42f7a6-0001"}"#,
];

#[test]
fn a_background_task_its_end_and_the_agents_own_turn_are_read() {
    let events = parse(&S1);
    let task_events: Vec<_> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::TaskStarted { .. }
                    | AgentEvent::TaskBackgrounded { .. }
                    | AgentEvent::TaskEnded { .. }
                    | AgentEvent::TaskNotified { .. }
                    | AgentEvent::TurnInfo { .. }
            )
        })
        .cloned()
        .collect();
    assert_eq!(
        task_events,
        vec![
            AgentEvent::TaskStarted {
                task_id: "bnf5rj0k2".into(),
                tool_call_id: Some("toolu_2ebb7dfada1d40149dbad487".into()),
                description: Some("Run scripted command".into()),
            },
            AgentEvent::TaskBackgrounded {
                task_id: "bnf5rj0k2".into(),
                tool_call_id: "toolu_2ebb7dfada1d40149dbad487".into(),
            },
            AgentEvent::TurnInfo {
                autonomous: false,
                interrupted: false
            },
            AgentEvent::TaskEnded {
                task_id: "bnf5rj0k2".into(),
                status: "completed".into(),
            },
            AgentEvent::TaskNotified {
                task_id: "bnf5rj0k2".into(),
                status: "completed".into(),
            },
            AgentEvent::TurnInfo {
                autonomous: true,
                interrupted: false
            },
        ]
    );
    // The tool's own result comes before the task it left running.
    let result_at = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolResult { .. }))
        .unwrap();
    assert!(matches!(
        events[result_at + 1],
        AgentEvent::TaskBackgrounded { .. }
    ));
    // The turn's info comes right before its usage and final result.
    let last = &events[events.len() - 3..];
    assert!(matches!(
        last,
        [
            AgentEvent::TurnInfo {
                autonomous: true,
                ..
            },
            AgentEvent::Usage { .. },
            AgentEvent::Final { success: true, .. }
        ]
    ));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::Unknown { .. } | AgentEvent::Error { .. })),
        "{events:?}"
    );
}

#[test]
fn the_process_cumulative_cost_becomes_each_turns_own() {
    let events = parse(&S1);
    let costs: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage { cost_usd, .. } => *cost_usd,
            _ => None,
        })
        .collect();
    assert_eq!(costs.len(), 2);
    assert!((costs[0] - 0.002).abs() < 1e-12, "{costs:?}");
    assert!((costs[1] - 0.001).abs() < 1e-12, "{costs:?}");
    let mut t = Timeline::new();
    for e in &events {
        t.apply(e);
    }
    let total = t.usage().cost_usd.unwrap();
    assert!(
        (total - 0.003).abs() < 1e-12,
        "the sum is the process's total: {total}"
    );
    assert_eq!(t.usage().input_tokens, 300, "usage is per turn already");
}

#[test]
fn an_aborted_turn_reports_zero_and_does_not_reset_the_base() {
    let first = r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5,"terminal_reason":"completed"}"#;
    let aborted = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"stop_reason":null,"total_cost_usd":0,"terminal_reason":"aborted_streaming","errors":["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null"]}"#;
    let next = r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.75,"terminal_reason":"completed"}"#;
    let costs: Vec<_> = parse(&[first, aborted, next])
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Usage { cost_usd, .. } => *cost_usd,
            _ => None,
        })
        .collect();
    assert_eq!(costs, vec![0.5, 0.0, 0.25]);
}

#[test]
fn an_interrupted_turn_is_not_a_failure() {
    // s4a3: `interrupt` during the autonomous turn's model call.
    let lines = [
        r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"parent_tool_use_id":null,"session_id":"6ff0859b-0001","uuid":"8cfafebf-0001","timestamp":"2026-11-24T10:00:05.254Z"}"#,
        r#"{"type":"result","subtype":"error_during_execution","duration_ms":1022,"is_error":true,"num_turns":2,"stop_reason":null,"session_id":"6ff0859b-0001","total_cost_usd":0.004,"terminal_reason":"aborted_streaming","origin":{"kind":"task-notification"},"errors":["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null"]}"#,
    ];
    let events = parse(&lines);
    assert!(
        !events.iter().any(|e| matches!(e, AgentEvent::Error { .. })),
        "{events:?}"
    );
    assert!(
        matches!(
            &events[..],
            [
                AgentEvent::UserMessage { .. },
                AgentEvent::TurnInfo {
                    autonomous: true,
                    interrupted: true
                },
                AgentEvent::Usage { .. },
                AgentEvent::Final { .. },
            ]
        ),
        "{events:?}"
    );
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Final { success: true, .. })
    ));
}

#[test]
fn an_interrupted_turn_then_a_good_one_leave_the_run_completed_and_not_failed() {
    // s4a3 again, then the next user turn ("after interrupt") answered normally.
    let lines = [
        r#"{"type":"system","subtype":"init","session_id":"6ff0859b-0001","tools":[]}"#,
        r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Working on the notification"}]}}"#,
        r#"{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":2,"stop_reason":null,"total_cost_usd":0.004,"terminal_reason":"aborted_streaming","origin":{"kind":"task-notification"}}"#,
        r#"{"type":"system","subtype":"init","session_id":"6ff0859b-0001","tools":[]}"#,
        r#"{"type":"assistant","message":{"id":"msg_2","content":[{"type":"text","text":"reply AFTER"}]}}"#,
        r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"reply AFTER","total_cost_usd":0.005,"terminal_reason":"completed"}"#,
    ];
    let mut t = Timeline::new();
    let events = parse(&lines);
    for (i, e) in events.iter().enumerate() {
        t.apply(e);
        if matches!(e, AgentEvent::Final { .. }) && i < events.len() - 1 {
            assert_eq!(t.state(), crate::agent::RunState::Interrupted);
        }
    }
    assert_eq!(t.state(), crate::agent::RunState::Completed);
    assert!(t.errors().is_empty(), "{:?}", t.errors());
    assert!(t.final_result().unwrap().success);
    assert_eq!(t.final_text(), Some("reply AFTER"));
}

#[test]
fn a_cut_stream_is_still_a_failure() {
    // No `aborted_*` reason: the stream broke, which is a failure as before.
    let cut = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"model_error"}"#;
    let events = parse(&[cut]);
    assert!(events.iter().any(|e| matches!(e, AgentEvent::Error { .. })));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::Final { success: false, .. })
    ));
}

#[test]
fn a_replayed_message_is_taken_in_not_echoed() {
    // s2a2: the uuid we gave comes back on the replay.
    let replay = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"second message [[text:reply to SECOND]]"}]},"session_id":"81f0f03f-0002","parent_tool_use_id":null,"uuid":"00000000-0000-4000-8000-000000000002","timestamp":"2026-11-24T10:00:06.300Z","isReplay":true}"#;
    assert_eq!(
        parse(&[replay]),
        vec![AgentEvent::MessageTaken {
            message_id: "00000000-0000-4000-8000-000000000002".into()
        }]
    );
    // Without `isReplay` a user line's text is what it was.
    let plain = r#"{"type":"user","message":{"role":"user","content":"hello"},"uuid":"u-9"}"#;
    assert_eq!(
        parse(&[plain]),
        vec![AgentEvent::UserMessage {
            text: "hello".into()
        }]
    );
}

#[test]
fn a_long_foreground_tool_reported_as_a_task_is_read_the_same() {
    // s2b: a foreground Bash that runs long also gets a task and a notification (with no
    // output file) before its own result; no `backgroundTaskId` marks it background.
    let lines = [
        r#"{"type":"system","subtype":"task_started","task_id":"b7x","tool_use_id":"toolu_fg","description":"Run scripted command","task_type":"local_bash","uuid":"x1","session_id":"s"}"#,
        r#"{"type":"system","subtype":"task_notification","task_id":"b7x","tool_use_id":"toolu_fg","status":"completed","output_file":"","summary":"Run scripted command","session_id":"s","uuid":"x2"}"#,
        r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_fg","type":"tool_result","content":"done","is_error":false}]},"tool_use_result":{"stdout":"done","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}}"#,
    ];
    let events = parse(&lines);
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::TaskBackgrounded { .. }))
    );
    // A tool_use_result Claude writes as a bare string is no task either, and no lost line.
    let string = r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":"Error: no","is_error":true}]},"tool_use_result":"Error: no"}"#;
    assert!(matches!(
        &parse(&[string])[..],
        [AgentEvent::ToolResult { is_error: true, .. }]
    ));
}

#[test]
fn a_stopped_task_and_the_control_answers_raise_no_alarm() {
    // s7: `stop_task` → the task killed, its notification `stopped`, then the answer.
    let lines = [
        r#"{"type":"system","subtype":"task_updated","task_id":"bt74jj79v","patch":{"status":"killed","end_time":1795547077999},"uuid":"y1","session_id":"s"}"#,
        r#"{"type":"system","subtype":"task_notification","task_id":"bt74jj79v","tool_use_id":"toolu_x","status":"stopped","output_file":"","summary":"Run scripted command","session_id":"s","uuid":"y2"}"#,
        r#"{"type":"control_response","response":{"subtype":"success","request_id":"oneshot-stop-bt74jj79v","response":{}}}"#,
        r#"{"type":"control_response","response":{"subtype":"success","request_id":"oneshot-withdraw-u1","response":{"cancelled":true}}}"#,
        r#"{"type":"control_response","response":{"subtype":"success","request_id":"oneshot-withdraw-u2","response":{"cancelled":false}}}"#,
        r#"{"type":"system","subtype":"task_updated","task_id":"bt74jj79v","patch":{"description":"renamed"},"uuid":"y3","session_id":"s"}"#,
    ];
    assert_eq!(
        parse(&lines),
        vec![
            AgentEvent::TaskEnded {
                task_id: "bt74jj79v".into(),
                status: "killed".into()
            },
            AgentEvent::TaskNotified {
                task_id: "bt74jj79v".into(),
                status: "stopped".into()
            },
        ]
    );
    let refused = r#"{"type":"control_response","response":{"subtype":"error","request_id":"oneshot-stop-b0","error":"No task found with ID: b0"}}"#;
    assert_eq!(
        parse(&[refused]),
        vec![AgentEvent::Warning {
            message: "claude refused control request oneshot-stop-b0: No task found with ID: b0"
                .into()
        }]
    );
}

#[test]
fn the_driver_says_withdraws_and_stops_in_claudes_words() {
    let mut d = input::ClaudeDriver::default();
    let mut out = Vec::new();
    let say = Say {
        id: "00000000-0000-4000-8000-000000000002".into(),
        text: "look at \"b.rs\" instead".into(),
        now: false,
    };
    assert_eq!(d.say(&say, &mut out), Delivery::Sent);
    let line: Value = serde_json::from_slice(&out[0]).unwrap();
    assert_eq!(
        line,
        json!({"type": "user",
               "message": {"role": "user", "content": [{"type": "text", "text": "look at \"b.rs\" instead"}]},
               "parent_tool_use_id": null, "session_id": "default",
               "uuid": "00000000-0000-4000-8000-000000000002"})
    );
    let now = Say { now: true, ..say };
    d.say(&now, &mut out);
    let line: Value = serde_json::from_slice(&out[1]).unwrap();
    assert_eq!(line["priority"], "now");
    assert_eq!(out[1], said(&now.id, &now.text, true));

    out.clear();
    assert!(d.withdraw("u-7", &mut out));
    let line: Value = serde_json::from_slice(&out[0]).unwrap();
    assert_eq!(
        line,
        json!({"type": "control_request", "request_id": "oneshot-withdraw-u-7",
               "request": {"subtype": "cancel_async_message", "message_uuid": "u-7"}})
    );
    assert_eq!(out[0], cancel_message("oneshot-withdraw-u-7", "u-7"));
    let stop: Value = serde_json::from_slice(&d.stop_task("bt74jj79v").unwrap()).unwrap();
    assert_eq!(
        stop,
        json!({"type": "control_request", "request_id": "oneshot-stop-bt74jj79v",
               "request": {"subtype": "stop_task", "task_id": "bt74jj79v"}})
    );
    assert_eq!(
        d.stop_task("b1").unwrap(),
        stop_task("oneshot-stop-b1", "b1")
    );
}

#[test]
fn a_message_whose_turn_a_now_message_cut_short_is_taken_in_all_the_same() {
    // Claude 2.1.197 against the fake server: message A began a turn, B (`now`) aborted it
    // before any output; A is never replayed, yet the next request carries it.
    let mut d = input::ClaudeDriver::default();
    let feed = |d: &mut input::ClaudeDriver, line: &str| {
        let mut events = Vec::new();
        d.feed(line.as_bytes(), &mut events, &mut Vec::new());
        events
    };
    let init = r#"{"type":"system","subtype":"init","session_id":"s","tools":[]}"#;
    let say = |d: &mut input::ClaudeDriver, id: &str, now: bool| {
        d.say(
            &Say {
                id: id.into(),
                text: "x".into(),
                now,
            },
            &mut Vec::new(),
        )
    };
    feed(&mut d, init);
    feed(
        &mut d,
        r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"first"}]}}"#,
    );
    feed(
        &mut d,
        r#"{"type":"result","subtype":"success","is_error":false,"result":"first","terminal_reason":"completed"}"#,
    );
    say(&mut d, "A", false);
    // B is sent before the driver reads the `init` of A's turn: the order it knows.
    say(&mut d, "B", true);
    feed(&mut d, init);
    // C is queued behind: it runs later and is replayed then.
    say(&mut d, "C", false);
    let aborted = feed(
        &mut d,
        r#"{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"stop_reason":null,"total_cost_usd":0.001,"terminal_reason":"aborted_streaming"}"#,
    );
    assert!(
        matches!(
            &aborted[..],
            [
                AgentEvent::TurnInfo {
                    interrupted: true,
                    ..
                },
                AgentEvent::MessageTaken { message_id },
                AgentEvent::Usage { .. },
                AgentEvent::Final { success: true, .. }
            ] if message_id == "A"
        ),
        "{aborted:?}"
    );
    feed(&mut d, init);
    let replay = feed(
        &mut d,
        r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"x"}]},"uuid":"B","isReplay":true}"#,
    );
    assert_eq!(
        replay,
        [AgentEvent::MessageTaken {
            message_id: "B".into()
        }]
    );
    // A turn cut short after it said something replayed its messages already: nothing more.
    feed(
        &mut d,
        r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"reply"}]}}"#,
    );
    let cut = feed(
        &mut d,
        r#"{"type":"result","subtype":"success","is_error":false,"terminal_reason":"aborted_tools"}"#,
    );
    assert!(
        !cut.iter()
            .any(|e| matches!(e, AgentEvent::MessageTaken { .. })),
        "{cut:?}"
    );
}
