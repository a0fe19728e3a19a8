//! What a timeline holds: messages and their blocks, tool calls, usage, errors, the result.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::ErrorKind;

/// What a content block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BlockKind {
    /// Text addressed to the user: the answer.
    Text,
    /// The model's reasoning.
    Reasoning,
}

/// One content block of a message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Block {
    /// What the block holds.
    pub kind: BlockKind,
    /// Its text so far.
    pub text: String,
    /// The whole block arrived; later fragments of it are repeats and are ignored.
    pub complete: bool,
}

/// One assistant message, its blocks by index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    /// The agent's message id; empty while the message is known only by id-less deltas.
    pub id: String,
    /// The model, when `message_start` named it.
    pub model: Option<String>,
    /// Text and reasoning blocks by their index (tool calls are in [`super::Timeline::tools`]).
    pub blocks: BTreeMap<u32, Block>,
    /// `message_start` was seen.
    pub started: bool,
    /// `message_stop` was seen.
    pub stopped: bool,
    /// Why the message stopped, when said.
    pub stop_reason: Option<String>,
}

impl Message {
    pub(super) fn new(id: String) -> Message {
        Message {
            id,
            model: None,
            blocks: BTreeMap::new(),
            started: false,
            stopped: false,
            stop_reason: None,
        }
    }

    /// The message's text: its text blocks in order.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in self.blocks.values().filter(|b| b.kind == BlockKind::Text) {
            out.push_str(&block.text);
        }
        out
    }

    pub(super) fn has_text(&self) -> bool {
        self.blocks
            .values()
            .any(|b| b.kind == BlockKind::Text && !b.text.is_empty())
    }
}

/// One tool call and, once known, its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolEntry {
    /// The call's id.
    pub id: String,
    /// The tool's name; `None` while only the result is known.
    pub name: Option<String>,
    /// The tool's input (null while only the result is known).
    pub input: Value,
    /// The message that carried the call, when known.
    pub message_id: Option<String>,
    /// The tool's output, once it finished.
    pub result: Option<String>,
    /// The tool failed or was denied.
    pub is_error: bool,
}

/// Usage summed over every usage report of the timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageTotals {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens served from cache.
    pub cached_input_tokens: u64,
    /// Dollars, when any report carried a cost.
    pub cost_usd: Option<f64>,
    /// Model turns reported.
    pub turns: u32,
}

/// An error the agent reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorSeen {
    /// Its kind.
    pub kind: ErrorKind,
    /// The HTTP status, when known.
    pub status: Option<u16>,
    /// The agent's message.
    pub message: String,
}

/// The final result of the latest run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FinalResult {
    /// The run succeeded.
    pub success: bool,
    /// The answer's text.
    pub text: Option<String>,
    /// The structured answer, when there is one.
    pub structured_output: Option<Value>,
    /// Tool calls the agent's permissions denied.
    pub permission_denials: Vec<Value>,
}
