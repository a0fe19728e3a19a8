//! The shapes of Claude Code's stream-json lines, as far as the parser reads them.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

/// A JSON number as a `u32`, when it is one and fits.
pub(super) fn as_u32(v: &Value) -> Option<u32> {
    v.as_u64().and_then(|n| u32::try_from(n).ok())
}

/// A JSON number as a `u16` (an HTTP status), when it is one and fits.
pub(super) fn as_u16(v: &Value) -> Option<u16> {
    v.as_u64().and_then(|n| u16::try_from(n).ok())
}

/// A line's `type`: what the parser dispatches on. A type this version does not know is
/// [`LineKind::Other`], kept as [`crate::agent::AgentEvent::Unknown`] (a tag enum beside
/// borrowed fields rather than an internally tagged enum, which would copy every string).
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum LineKind {
    /// Anthropic SSE events (partial messages).
    StreamEvent,
    /// A whole assistant message (one content block per line).
    Assistant,
    /// Tool results, and the user's own text when replayed.
    User,
    /// `init`, `api_retry` and other notices, by `subtype`.
    System,
    /// The run's final result.
    Result,
    /// Claude asks oneshot (`can_use_tool`).
    ControlRequest,
    /// Claude's answer to one of oneshot's control requests.
    ControlResponse,
    /// Any other type.
    #[serde(other)]
    Other,
}

/// The `type` of an SSE event inside a `stream_event` line.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum EventKind {
    MessageStart,
    ContentBlockStart,
    ContentBlockDelta,
    ContentBlockStop,
    MessageDelta,
    MessageStop,
    Ping,
    Error,
    /// Any other event.
    #[serde(other)]
    Other,
}

/// The `type` of a `content_block_delta`'s delta.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum DeltaKind {
    TextDelta,
    ThinkingDelta,
    InputJsonDelta,
    /// Signatures, citations and whatever comes next.
    #[serde(other)]
    Other,
}

/// Every field any line type uses; serde skips the rest, so neither key order nor new fields
/// matter. Fields whose type is not certain across versions are kept as [`Value`].
#[derive(Deserialize)]
pub(super) struct Line<'a> {
    #[serde(rename = "type")]
    pub(super) kind: LineKind,
    #[serde(default, borrow)]
    pub(super) subtype: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) tools: Option<Value>,
    #[serde(default, borrow)]
    pub(super) cwd: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) claude_code_version: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) message: Option<WireMessage<'a>>,
    #[serde(default, borrow)]
    pub(super) event: Option<StreamEvent<'a>>,
    #[serde(default, borrow)]
    pub(super) parent_tool_use_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) attempt: Option<Value>,
    #[serde(default)]
    pub(super) max_retries: Option<Value>,
    #[serde(default)]
    pub(super) retry_delay_ms: Option<Value>,
    #[serde(default)]
    pub(super) error_status: Option<Value>,
    #[serde(default)]
    pub(super) error: Option<Value>,
    #[serde(default)]
    pub(super) is_error: Option<bool>,
    #[serde(default)]
    pub(super) result: Option<Value>,
    #[serde(default)]
    pub(super) api_error_status: Option<Value>,
    #[serde(default)]
    pub(super) total_cost_usd: Option<Value>,
    #[serde(default, borrow)]
    pub(super) request_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) request: Option<Value>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) num_turns: Option<Value>,
    #[serde(default)]
    pub(super) permission_denials: Option<Vec<Value>>,
    #[serde(default)]
    pub(super) structured_output: Option<Value>,
}

#[derive(Deserialize, Default)]
pub(super) struct WireMessage<'a> {
    #[serde(default, borrow)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) content: Option<Value>,
}

#[derive(Deserialize, Default)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_read_input_tokens: Option<u64>,
}

/// The Anthropic SSE event inside a `stream_event` line: the hot path with partial messages,
/// so its fields are borrowed where they can be.
#[derive(Deserialize)]
pub(super) struct StreamEvent<'a> {
    #[serde(rename = "type")]
    pub(super) kind: EventKind,
    #[serde(default)]
    pub(super) index: Option<u32>,
    #[serde(default, borrow)]
    pub(super) message: Option<WireMessage<'a>>,
    #[serde(default, borrow)]
    pub(super) delta: Option<Delta<'a>>,
    #[serde(default)]
    pub(super) content_block: Option<Value>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<DeltaKind>,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) thinking: Option<String>,
    #[serde(default, borrow)]
    pub(super) partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) stop_reason: Option<Cow<'a, str>>,
}
