//! The agents' structured output streams, normalized: one event model, one parser per protocol,
//! and a timeline that assembles a run from its events.
//!
//! # How it works
//!
//! Each CLI writes JSON lines in a format of its own: Claude Code's `stream-json` (with partial
//! `stream_event` deltas when asked), Codex's `exec --json` and Gemini CLI's `stream-json`. A
//! [`LineParser`] for the protocol is fed one line at a time and appends zero or more
//! [`AgentEvent`]s (a line can carry several content blocks, or nothing worth an event). Lines
//! are decoded into serde structs that ignore unknown fields, never by key order or by string
//! matching on the raw line; a well-formed line of an unknown type becomes
//! [`AgentEvent::Unknown`] with its JSON kept, and a line that is not JSON becomes
//! [`AgentEvent::Malformed`] — parsing never fails and never panics.
//!
//! A [`Timeline`] takes those events in any order and keeps one entry per message id and per
//! tool call id: deltas that arrive before their `message_start`, a tool result before its
//! call, a whole assistant line repeating deltas already seen — each ends as one message with
//! its text once. It derives the run's [`RunState`] (queued → awaiting_response → streaming →
//! finalizing → completed | interrupted | error) from the events, and answers what an executor
//! asks: the agent's session id, the final answer, usage totals, errors, and whether the agent
//! is only retrying.
//!
//! Nothing here starts processes or reads files: it is pure and cheap (a benchmark,
//! `benches/agent_events.rs`, holds it above 500,000 events/s).
//!
//! One folder per protocol (`claude/`, `codex/`, `acp/`, `aider/`, `cline/`, `gemini_stream/`),
//! each with its parser or [`Driver`] and the agents that speak it; `registry.rs` lists them,
//! one line each. docs/agents.md has the layout and how a new agent joins. The stdout reader of a
//! run (`tap.rs`) is the part that touches a running process: it writes the driver's replies to
//! the agent's stdin.

mod account;
mod acp;
mod aider;
mod claude;
mod cline;
mod codex;
mod driver;
mod entries;
mod event;
mod gemini_stream;
mod jsonrpc;
mod launch;
mod line;
mod narrative;
mod reconcile;
mod registry;
mod run_end;
mod run_state;
mod say;
mod schema_file;
mod spec;
mod tap;
mod timeline;
pub mod transcript;
mod turns;
mod verdict_schema;

/// What oneshot writes to Claude Code's stdin (kept at its old path, `agent::claude_input`).
pub use claude::input as claude_input;

pub use account::{Account, AccountReader, Entry};
pub use aider::AiderParser;
pub use claude::ClaudeParser;
pub use cline::ClineParser;
pub use codex::CodexParser;
pub use driver::{Driver, DriverSetup, Reply};
pub use entries::{Block, BlockKind, ErrorSeen, FinalResult, Message, ToolEntry, UsageTotals};
pub use event::{AgentEvent, ErrorKind};
pub use gemini_stream::GeminiParser;
pub use launch::{AnswerSchema, Launch};
pub use narrative::Narrative;
pub use registry::{AgentKind, Protocol};
pub use run_end::{AgentFailure, OwnSession, RunEnd, Spent};
pub use run_state::RunState;
pub use say::{Delivery, Say};
pub use schema_file::SchemaFile;
pub use spec::{AgentSpec, SpecError};
pub use timeline::Timeline;
pub use turns::{Owner, TurnChange, Turns};

pub(crate) use tap::{Seen, Tap};
pub use verdict_schema::VERDICT_SCHEMA;

pub(crate) use verdict_schema::VERDICT_SCHEMA_FILE;

// What only the crate's tests reach through this module.
#[cfg(test)]
pub(crate) use registry::AGENT_KINDS;

/// A parser for one agent protocol, fed its stdout one line at a time.
pub trait LineParser {
    /// Parses one line (with or without its line ending) and appends its events to `out`.
    /// Blank lines yield nothing; nothing makes this fail.
    fn feed(&mut self, line: &[u8], out: &mut Vec<AgentEvent>);

    /// [`LineParser::feed`] for a line already known to be text.
    fn feed_str(&mut self, line: &str, out: &mut Vec<AgentEvent>) {
        self.feed(line.as_bytes(), out);
    }
}

impl Protocol {
    /// A fresh parser for this protocol: its [`Driver`] with its replies dropped (for the
    /// two-way protocols, enough to read a captured stream).
    pub fn parser(self) -> Box<dyn LineParser + Send> {
        let setup = DriverSetup {
            role: crate::process::Role::Worker,
            cwd: std::path::PathBuf::from("."),
            model: None,
            resume: None,
        };
        Box::new(Overheard(self.driver(setup)))
    }
}

/// A [`Driver`] read as a [`LineParser`]: its events, none of its replies.
struct Overheard(Box<dyn Driver>);

impl LineParser for Overheard {
    fn feed(&mut self, line: &[u8], out: &mut Vec<AgentEvent>) {
        self.0.feed(line, out, &mut Vec::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blank_lines_yield_nothing_and_garbage_is_kept() {
        for protocol in [
            Protocol::Claude,
            Protocol::Codex,
            Protocol::Gemini,
            Protocol::Cline,
        ] {
            let mut p = protocol.parser();
            let mut out = Vec::new();
            p.feed(b"  \r\n", &mut out);
            assert!(out.is_empty(), "{protocol:?}");
            p.feed(b"not json {", &mut out);
            p.feed(b"[1,2]", &mut out);
            p.feed_str(r#"{"type":"brand_new","x":1}"#, &mut out);
            assert!(matches!(&out[0], AgentEvent::Malformed { line, .. } if line == "not json {"));
            assert_eq!(out[1], AgentEvent::Unknown { raw: json!([1, 2]) });
            assert_eq!(
                out[2],
                AgentEvent::Unknown {
                    raw: json!({"type": "brand_new", "x": 1})
                }
            );
        }
    }

    mod never_panics {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// No line, however broken, makes a parser panic; each yields at most a few events.
            #[test]
            fn on_arbitrary_bytes(lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8)) {
                for protocol in [
            Protocol::Claude,
            Protocol::Codex,
            Protocol::Gemini,
            Protocol::Cline,
        ] {
                    let mut p = protocol.parser();
                    let mut out = Vec::new();
                    for line in &lines {
                        p.feed(line, &mut out);
                    }
                    prop_assert!(out.len() <= lines.len());
                }
            }

            /// Known line types with fields of any JSON type are kept or mapped, never a panic.
            #[test]
            fn on_known_types_with_odd_fields(
                kind in prop::sample::select(vec![
                    "system", "assistant", "user", "result", "stream_event", "thread.started",
                    "item.completed", "item.started", "turn.completed", "turn.failed", "error",
                    "init", "message", "tool_use", "tool_result",
                ]),
                field in prop::sample::select(vec![
                    "subtype", "message", "event", "item", "content", "usage", "error",
                    "session_id", "thread_id", "stats", "result", "tools", "delta", "role",
                ]),
                value in prop::sample::select(vec![
                    "null", "1", "-3.5", "\"x\"", "[]", "[1,{}]", "{}", "{\"type\":\"text\"}",
                    "{\"type\":\"content_block_stop\",\"index\":4294967296}",
                    "{\"type\":\"agent_message\"}", "{\"content\":[{\"type\":\"tool_use\"}]}",
                ]),
            ) {
                let line = format!(r#"{{"type":"{kind}","{field}":{value},"subtype":"init","session_id":"s"}}"#);
                for protocol in [
            Protocol::Claude,
            Protocol::Codex,
            Protocol::Gemini,
            Protocol::Cline,
        ] {
                    let mut p = protocol.parser();
                    let mut out = Vec::new();
                    p.feed_str(&line, &mut out);
                    let mut t = Timeline::new();
                    for e in &out {
                        t.apply(e);
                    }
                }
            }
        }
    }
}
