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
    /// `system/task_*`: the task's id.
    #[serde(default, borrow)]
    pub(super) task_id: Option<Cow<'a, str>>,
    /// `system/task_started`, `system/task_notification`: the tool call behind the task.
    #[serde(default, borrow)]
    pub(super) tool_use_id: Option<Cow<'a, str>>,
    /// `system/task_started`: what the task does.
    #[serde(default, borrow)]
    pub(super) description: Option<Cow<'a, str>>,
    /// `system/task_notification`: `completed`, `failed` or `stopped`.
    #[serde(default, borrow)]
    pub(super) status: Option<Cow<'a, str>>,
    /// `system/task_updated`: what changed (its `status`).
    #[serde(default, borrow)]
    pub(super) patch: Loose<'a>,
    /// A `user` line that replays a message of ours (`--replay-user-messages`).
    #[serde(default, rename = "isReplay")]
    pub(super) is_replay: bool,
    /// The line's own id; on a replayed user line, the uuid the message was sent with.
    #[serde(default, borrow)]
    pub(super) uuid: Option<Cow<'a, str>>,
    /// A tool_result `user` line: the tool's own report (its `backgroundTaskId`). Any shape
    /// (Claude writes a bare string for some failures), read without copying its output.
    #[serde(default, borrow)]
    pub(super) tool_use_result: Loose<'a>,
    /// `result`: who started the turn (`{"kind":"task-notification"}` on the agent's own).
    #[serde(default, borrow)]
    pub(super) origin: Loose<'a>,
    /// `control_response`: Claude's answer to a control request of ours.
    #[serde(default, borrow)]
    pub(super) response: Option<ControlResponse<'a>>,
    /// `result`: how the turn ended (`completed`, `aborted_streaming`, `aborted_tools`, …).
    #[serde(default, borrow)]
    pub(super) terminal_reason: Option<Cow<'a, str>>,
}

/// The envelope of a `control_response` (`{"subtype":"success"|"error","request_id":…,
/// "error":…}`); what it answered is not read.
#[derive(Deserialize)]
pub(super) struct ControlResponse<'a> {
    #[serde(default, borrow)]
    pub(super) subtype: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) request_id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

/// The few string members the parser reads from an object whose shape varies (`patch`,
/// `origin`, `tool_use_result`): any other member, and any value that is not an object, is
/// skipped without being copied.
#[derive(Default, Debug)]
pub(super) struct Loose<'a> {
    /// `status` (a task's patch).
    pub(super) status: Option<Cow<'a, str>>,
    /// `kind` (a result's origin).
    pub(super) kind: Option<Cow<'a, str>>,
    /// `backgroundTaskId` (a tool's result that left a task running).
    pub(super) background_task_id: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Loose<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LooseVisitor(std::marker::PhantomData))
    }
}

struct LooseVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> serde::de::Visitor<'de> for LooseVisitor<'a> {
    type Value = Loose<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Loose<'a>, M::Error> {
        let mut loose = Loose::default();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            let slot = match key.0.as_deref() {
                Some("status") => &mut loose.status,
                Some("kind") => &mut loose.kind,
                Some("backgroundTaskId") => &mut loose.background_task_id,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            *slot = map.next_value::<Text<'de>>()?.0;
        }
        Ok(loose)
    }

    fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<Loose<'a>, S::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Loose::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Loose<'a>, E> {
        Ok(Loose::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Loose<'a>, E> {
        Ok(Loose::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Loose<'a>, E> {
        Ok(Loose::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Loose<'a>, E> {
        Ok(Loose::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Loose<'a>, E> {
        Ok(Loose::default())
    }

    fn visit_unit<E>(self) -> Result<Loose<'a>, E> {
        Ok(Loose::default())
    }

    fn visit_none<E>(self) -> Result<Loose<'a>, E> {
        Ok(Loose::default())
    }
}

/// A JSON string, borrowed from the line when it has no escapes; `None` for any other value
/// (which is skipped).
struct Text<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_string<E>(self, s: String) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Owned(s))))
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Text<'de>, M::Error> {
                while m
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Text(None))
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(
                self,
                mut s: S,
            ) -> Result<Text<'de>, S::Error> {
                while s.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_unit<E>(self) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_none<E>(self) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
        }
        d.deserialize_any(V)
    }
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
