//! Claude stream-json through the agent layer: parsing, normalizing and timeline assembly,
//! beside the bare JSON parse of the same lines (`serde_json::from_slice::<Value>`, the floor any
//! reader of the stream pays).
//!
//! The input is built from the real sample lines (`../shared/agents/samples/`): each turn is a
//! `--include-partial-messages` stream — `message_start`, a text block streamed in small
//! deltas, a Bash `tool_use` whose input arrives as `input_json_delta` fragments,
//! `message_delta`, `message_stop`, pings — followed by the whole `assistant` lines Claude
//! repeats, the tool's `user` result, and every 20 turns a `result`. Ids vary per message and
//! per call, so the timeline grows as it would over a long session.
//!
//! Run: `cargo bench --bench agent_events` (add `-- --quick` for a short run). Criterion
//! reports throughput in normalized events per second for both cases (the same count, so the
//! figures compare directly); a summary line with events/s and lines/s is printed first.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oneshot::agent::{AgentEvent, ClaudeParser, LineParser, Timeline};
use serde_json::{Value, json};

const TURNS: usize = 2_000;
const SESSION: &str = "aede5bb7-1f2a-485d-9ac6-b0e93ee90a5d";

/// The real first line of a Claude session (system/init), from the samples.
const INIT: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/agents/samples/claude-bash-allowedtools.stream.jsonl"
));

/// Words the streamed text is made of.
const WORDS: &[&str] = &[
    "I'll ",
    "run ",
    "the ",
    "failing ",
    "test ",
    "first, ",
    "then ",
    "look ",
    "at ",
    "the ",
    "stack ",
    "trace ",
    "and ",
    "fix ",
    "`parse_line` ",
    "in ",
    "src/lib.rs.\n",
];

fn stream_event(event: Value, n: usize) -> String {
    json!({
        "type": "stream_event",
        "event": event,
        "session_id": SESSION,
        "parent_tool_use_id": null,
        "uuid": format!("{n:08x}-0000-4000-8000-000000000000"),
    })
    .to_string()
}

/// One long session of partial-message stream-json lines.
fn session() -> Vec<String> {
    let mut lines = vec![INIT.lines().next().expect("init line").to_owned()];
    let real: Vec<Value> = INIT
        .lines()
        .map(|l| serde_json::from_str(l).expect("sample line"))
        .collect();
    let (assistant_text, assistant_tool, user, result) = (&real[1], &real[2], &real[3], &real[5]);
    for turn in 0..TURNS {
        let id = format!("msg_{turn:024x}");
        let tool_id = format!("toolu_{turn:024x}");
        let n = lines.len();
        lines.push(stream_event(
            json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": "claude-opus-4-8", "content": [], "stop_reason": null, "usage": {"input_tokens": 100, "output_tokens": 1}}}),
            n,
        ));
        lines.push(stream_event(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            n + 1,
        ));
        let mut text = String::new();
        for (k, word) in WORDS.iter().cycle().skip(turn % 7).take(24).enumerate() {
            text.push_str(word);
            lines.push(stream_event(
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": word}}),
                n + 2 + k,
            ));
            if k == 12 {
                lines.push(stream_event(json!({"type": "ping"}), n + 2 + k));
            }
        }
        let n = lines.len();
        lines.push(stream_event(
            json!({"type": "content_block_stop", "index": 0}),
            n,
        ));
        let mut whole = assistant_text.clone();
        whole["message"]["id"] = json!(id);
        whole["message"]["content"][0]["text"] = json!(text);
        lines.push(whole.to_string());
        lines.push(stream_event(
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {}}}),
            n + 1,
        ));
        let input = json!({"command": format!("cargo test -p oneshot parse_line_{turn}"), "description": "Run the failing test"}).to_string();
        for (k, part) in input.as_bytes().chunks(16).enumerate() {
            lines.push(stream_event(
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": std::str::from_utf8(part).expect("ascii input")}}),
                n + 2 + k,
            ));
        }
        let n = lines.len();
        lines.push(stream_event(
            json!({"type": "content_block_stop", "index": 1}),
            n,
        ));
        let mut whole = assistant_tool.clone();
        whole["message"]["id"] = json!(id);
        whole["message"]["content"][0]["id"] = json!(tool_id);
        whole["message"]["content"][0]["input"] = serde_json::from_str(&input).expect("tool input");
        lines.push(whole.to_string());
        lines.push(stream_event(
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 40}}),
            n + 1,
        ));
        lines.push(stream_event(json!({"type": "message_stop"}), n + 2));
        let mut result_line = user.clone();
        result_line["message"]["content"][0]["tool_use_id"] = json!(tool_id);
        lines.push(result_line.to_string());
        if turn % 20 == 19 {
            lines.push(result.to_string());
        }
    }
    lines
}

/// Parses, normalizes and assembles every line; returns the number of events.
fn agent_layer(lines: &[String]) -> (usize, Timeline) {
    let mut parser = ClaudeParser::default();
    let mut timeline = Timeline::new();
    let mut events: Vec<AgentEvent> = Vec::with_capacity(8);
    let mut count = 0;
    for line in lines {
        parser.feed(line.as_bytes(), &mut events);
        for event in events.drain(..) {
            timeline.apply(&event);
            count += 1;
        }
    }
    (count, timeline)
}

/// The baseline: each line parsed into a `serde_json::Value`, nothing else.
fn json_only(lines: &[String]) -> usize {
    let mut n = 0;
    for line in lines {
        let v: Value = serde_json::from_slice(line.as_bytes()).expect("json");
        n += black_box(&v).is_object() as usize;
    }
    n
}

fn bench(c: &mut Criterion) {
    let lines = session();
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let (events, timeline) = agent_layer(&lines);
    assert_eq!(timeline.messages().len(), TURNS, "one message per turn");
    assert_eq!(timeline.tools().len(), TURNS);
    assert_eq!(timeline.unknown_count(), 0);

    // A quick summary in plain figures before criterion's own report.
    let rounds = 5;
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(agent_layer(&lines));
    }
    let agent = t.elapsed().as_secs_f64() / rounds as f64;
    let t = Instant::now();
    for _ in 0..rounds {
        black_box(json_only(&lines));
    }
    let raw = t.elapsed().as_secs_f64() / rounds as f64;
    println!(
        "agent_events: {} lines ({:.1} MB), {events} normalized events",
        lines.len(),
        bytes as f64 / 1e6
    );
    for (label, secs) in [
        ("serde_json Value only (baseline)", raw),
        ("parse + normalize + timeline", agent),
    ] {
        println!(
            "  {label:<34} {:>12.0} events/s {:>12.0} lines/s {:>8.1} MB/s",
            events as f64 / secs,
            lines.len() as f64 / secs,
            bytes as f64 / secs / 1e6
        );
    }

    let mut group = c.benchmark_group("claude_stream_json");
    group.throughput(Throughput::Elements(events as u64));
    group.sample_size(10);
    group.bench_function("serde_json_value_only", |b| {
        b.iter(|| black_box(json_only(&lines)))
    });
    group.bench_function("parse_normalize_timeline", |b| {
        b.iter(|| black_box(agent_layer(&lines)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
