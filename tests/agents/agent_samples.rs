//! Real output of each agent CLI (`../shared/agents/samples/`) through its parser and a
//! timeline. The snapshots are the spec of the mapping: review them when a parser changes.

use std::path::{Path, PathBuf};

use oneshot::agent::{AgentEvent, ErrorKind, Protocol, RunState, Timeline};
use serde_json::{Value, json};

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/agents/samples");

/// The protocol a sample's file name announces.
fn protocol(name: &str) -> Protocol {
    match name.split('-').next() {
        Some("claude") => Protocol::Claude,
        Some("codex") => Protocol::Codex,
        Some("gemini") => Protocol::Gemini,
        _ => panic!("no parser for sample {name}"),
    }
}

/// A sample's events, and the timeline they build.
fn run(name: &str) -> (Vec<AgentEvent>, Timeline) {
    let path = Path::new(SAMPLES).join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut parser = protocol(name).parser();
    let mut events = Vec::new();
    for line in bytes.split(|&b| b == b'\n') {
        parser.feed(line, &mut events);
    }
    let mut timeline = Timeline::new();
    for event in &events {
        timeline.apply(event);
    }
    timeline.end_of_stream();
    (events, timeline)
}

/// What an executor reads of a timeline, for the snapshot.
fn summary(t: &Timeline) -> Value {
    json!({
        "session_id": t.session_id(),
        "state": t.state(),
        "messages": t.messages().iter().map(|m| json!({"id": m.id, "text": m.text()})).collect::<Vec<_>>(),
        "tools": t.tools(),
        "usage": t.usage(),
        "errors": t.errors(),
        "final": t.final_result(),
        "last_was_retry": t.last_was_retry(),
        "unknown": t.unknown_count(),
    })
}

fn samples() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(SAMPLES)
        .expect("the samples beside the clone (../shared/agents/samples)")
        .map(|e| e.expect("dir entry").path())
        .collect();
    files.sort();
    files
}

#[test]
fn every_sample_parses_into_its_snapshot() {
    let files = samples();
    assert!(files.len() >= 10, "samples missing: {files:?}");
    for path in files {
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let (events, timeline) = run(&name);
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, AgentEvent::Malformed { .. })),
            "{name}: a real line did not parse"
        );
        // The snapshot is also read back: events serialize without loss.
        let round: Vec<AgentEvent> =
            serde_json::from_value(serde_json::to_value(&events).unwrap()).unwrap();
        assert_eq!(round, events, "{name}: round trip");
        let snapshot = name.replace('.', "_");
        insta::assert_json_snapshot!(
            snapshot,
            json!({"events": events, "timeline": summary(&timeline)})
        );
    }
}

#[test]
fn claude_samples_name_the_session_and_the_answer() {
    let (_, t) = run("claude-hello.stream.jsonl");
    assert_eq!(t.session_id(), Some("55975777-c2da-48af-af98-873c6f8e8c99"));
    assert_eq!(
        t.final_text(),
        Some("Hello from the fake model. (request had 2 messages)")
    );
    assert_eq!(t.state(), RunState::Completed);
    assert_eq!(t.usage().cost_usd, Some(0.001));
}

#[test]
fn claude_tool_calls_carry_their_inputs_and_results() {
    let (_, t) = run("claude-bash-allowedtools.stream.jsonl");
    let bash = &t.tools()[0];
    assert_eq!(bash.name.as_deref(), Some("Bash"));
    assert_eq!(
        bash.input["command"],
        "echo allowed-test > allowed.txt && cat allowed.txt"
    );
    assert_eq!(bash.result.as_deref(), Some("allowed-test"));
    assert!(!bash.is_error);
    assert_eq!(
        t.last_assistant_message().unwrap().text(),
        "Tool finished. Result started with: allowed-test"
    );
    // The first message holds a text block and then the tool call.
    assert_eq!(t.messages()[0].text(), "I'll run a command.");

    let (_, t) = run("claude-write-acceptedits.stream.jsonl");
    let write = &t.tools()[0];
    assert_eq!(write.name.as_deref(), Some("Write"));
    assert_eq!(write.input["file_path"], "$LAB/work-claude/written.txt");
    assert_eq!(write.input["content"], "content from Write tool");
}

#[test]
fn claude_json_schema_gives_the_structured_output() {
    let (_, t) = run("claude-jsonschema.stream.jsonl");
    assert_eq!(
        t.structured_output(),
        Some(&json!({"summary": "all good", "ok": true}))
    );
}

#[test]
fn claude_401_is_an_auth_error_and_a_failed_run() {
    let (events, t) = run("claude-fail401.stdout");
    assert!(events.iter().any(|e| matches!(
        e,
        AgentEvent::RetryNotice {
            status: Some(401),
            kind: Some(ErrorKind::Auth),
            ..
        }
    )));
    assert_eq!(t.errors().len(), 1);
    assert_eq!(t.errors()[0].kind, ErrorKind::Auth);
    assert_eq!(t.errors()[0].status, Some(401));
    assert_eq!(t.state(), RunState::Error);
    assert!(!t.final_result().unwrap().success);
}

#[test]
fn codex_samples_give_the_thread_the_command_and_the_answer() {
    let (_, t) = run("codex-bash-workspace-write.jsonl");
    assert_eq!(t.session_id(), Some("01a2016b-3f38-7d72-90bf-84a886c13b47"));
    let cmd = &t.tools()[0];
    assert_eq!(cmd.name.as_deref(), Some("command_execution"));
    assert_eq!(
        cmd.input["command"],
        "/bin/bash -lc 'echo hi from codex > made_by_codex.txt && cat made_by_codex.txt'"
    );
    assert_eq!(cmd.result.as_deref(), Some("hi from codex\n"));
    assert!(t.errors().is_empty(), "the metadata notice is no error");
    assert_eq!(t.state(), RunState::Completed);

    let (_, t) = run("codex-output-schema.jsonl");
    assert_eq!(
        t.structured_output(),
        Some(&json!({"summary": "all good", "ok": true}))
    );
}

#[test]
fn gemini_samples_give_the_session_the_shell_call_and_the_answer() {
    let (_, t) = run("gemini-bash-yolo.stream.jsonl");
    assert_eq!(t.session_id(), Some("f9c0fdb2-99e7-4dc7-ac71-fbed68bb302f"));
    let shell = &t.tools()[0];
    assert_eq!(shell.name.as_deref(), Some("run_shell_command"));
    assert_eq!(
        shell.input["command"],
        "echo hi from gemini > made_by_gemini.txt && cat made_by_gemini.txt"
    );
    let (_, t) = run("gemini-hello.stream.jsonl");
    assert_eq!(
        t.final_text(),
        Some("Hello from the fake model. (request had 1 messages)")
    );
    assert_eq!(t.state(), RunState::Completed);
}

/// The hello sample as `--include-partial-messages` gives it: the same message streamed as
/// deltas first, then the real whole `assistant` line and the real result.
#[test]
fn claude_partial_deltas_then_the_whole_line_keep_one_message() {
    let real = std::fs::read_to_string(Path::new(SAMPLES).join("claude-hello.stream.jsonl"))
        .expect("hello sample");
    let lines: Vec<&str> = real.lines().collect();
    let whole: Value = serde_json::from_str(lines[1]).unwrap();
    let id = whole["message"]["id"].as_str().unwrap();
    let text = whole["message"]["content"][0]["text"].as_str().unwrap();
    let event =
        |e: Value| json!({"type": "stream_event", "event": e, "session_id": "s"}).to_string();
    let mut stream = vec![lines[0].to_owned()];
    stream.push(event(
        json!({"type": "message_start", "message": {"id": id, "model": "m"}}),
    ));
    stream.push(event(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})));
    for chunk in text.as_bytes().chunks(7) {
        let chunk = std::str::from_utf8(chunk).unwrap();
        stream.push(event(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": chunk}})));
    }
    stream.push(event(json!({"type": "content_block_stop", "index": 0})));
    stream.push(lines[1].to_owned());
    stream.push(event(
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
    ));
    stream.push(event(json!({"type": "message_stop"})));
    stream.push(lines[2].to_owned());

    let mut parser = Protocol::Claude.parser();
    let mut timeline = Timeline::new();
    let mut states = Vec::new();
    let mut events = Vec::new();
    for line in &stream {
        parser.feed_str(line, &mut events);
        for e in events.drain(..) {
            timeline.apply(&e);
        }
        states.push(timeline.state());
    }
    assert_eq!(timeline.messages().len(), 1);
    assert_eq!(timeline.messages()[0].text(), text);
    assert!(timeline.messages()[0].stopped);
    assert!(states.contains(&RunState::Streaming));
    assert!(states.contains(&RunState::Finalizing));
    assert_eq!(timeline.state(), RunState::Completed);
    assert_eq!(timeline.final_text(), Some(text));
}
