//! Claude Code `--output-format stream-json --verbose` (with or without
//! `--include-partial-messages`).
//!
//! Lines: `system` (`init`, `api_retry`, others kept as unknown), `assistant` (one line per
//! content block; the blocks of one message share `message.id`), `user` (tool results),
//! `stream_event` (the Anthropic SSE events: `message_start`, `content_block_*`,
//! `message_delta`, `message_stop`) and the final `result`.

mod agent;
pub mod input;
mod wire;

pub(crate) use agent::AGENT;

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use crate::agent::line::{Decoded, decode, unknown, value_text};
use crate::agent::{AgentEvent, ErrorKind, LineParser};
use wire::{DeltaKind, EventKind, Line, LineKind, StreamEvent, as_u16, as_u32};

/// Parser for Claude Code's stream-json output.
///
/// State it keeps between lines, because the protocol spreads one fact over several lines:
/// the message a `stream_event` delta belongs to (only `message_start` names it), tool inputs
/// streamed as JSON fragments, how many blocks of each message the whole `assistant` lines have
/// carried (each line restarts its `content` array at 0), and whether the current run already
/// reported its error.
#[derive(Debug, Default)]
pub struct ClaudeParser {
    /// The main conversation's partial-message stream.
    main: Stream,
    /// Subagents' streams (Task tool), by the `parent_tool_use_id` their lines carry: their
    /// deltas interleave with the main ones and must not land in its message.
    subagents: Vec<(String, Stream)>,
    /// Blocks of each message seen in whole `assistant` lines: the next block's index.
    blocks_seen: HashMap<String, u32>,
    /// An [`AgentEvent::Error`] was emitted since the last result (so the result's own error
    /// does not repeat it).
    error_reported: bool,
    /// The HTTP status of the latest `api_retry`: the synthetic error message that follows
    /// names only a code, so its status comes from here.
    retry_status: Option<u16>,
    /// The process's cost so far, as the latest `result` said: `total_cost_usd` is cumulative
    /// for the process (a long-lived one answers several turns), and each
    /// [`AgentEvent::Usage`] carries its own turn's part.
    cost_so_far: f64,
}

/// What one partial-message stream has open.
#[derive(Debug, Default)]
struct Stream {
    /// The message the stream's deltas belong to (set by `message_start`).
    current: Option<String>,
    /// Why the current message stopped, from `message_delta`, reported at `message_stop`.
    stop_reason: Option<String>,
    /// A tool_use block being streamed: its index, id, name and input fragments so far.
    pending_tool: Option<PendingTool>,
}

#[derive(Debug)]
struct PendingTool {
    index: u32,
    id: String,
    name: String,
    input: Value,
    json: String,
}

impl LineParser for ClaudeParser {
    fn feed(&mut self, line: &[u8], out: &mut Vec<AgentEvent>) {
        let parsed: Line = match decode(line) {
            Decoded::Line(l) => l,
            Decoded::Blank => return,
            Decoded::Fallback(ev) => return out.push(ev),
        };
        match parsed.kind {
            LineKind::StreamEvent => match parsed.event {
                Some(ev) => {
                    let stream = match parsed.parent_tool_use_id.as_deref() {
                        None => &mut self.main,
                        Some(parent) => self.subagent(parent),
                    };
                    if stream.event(ev, line, out) {
                        self.error_reported = true;
                    }
                }
                None => out.push(unknown(line.trim_ascii())),
            },
            LineKind::Assistant => self.assistant(parsed, out),
            LineKind::User => user(parsed, out),
            LineKind::System => self.system(parsed, line, out),
            LineKind::Result => self.result(parsed, out),
            LineKind::ControlRequest => control_request(parsed, line, out),
            // The answer to a control request of ours (initialize, interrupt, a withdrawn
            // message, a stopped task): nothing the timeline needs; the line stays in the log.
            // A refusal is worth a warning (what was asked did not happen), not an error.
            LineKind::ControlResponse => control_response(parsed, out),
            LineKind::Other => out.push(unknown(line.trim_ascii())),
        }
    }
}

impl ClaudeParser {
    fn system(&mut self, l: Line, line: &[u8], out: &mut Vec<AgentEvent>) {
        match l.subtype.as_deref() {
            Some("init") => {
                let Some(session_id) = l.session_id else {
                    return out.push(unknown(line.trim_ascii()));
                };
                let tools = match l.tools {
                    Some(Value::Array(items)) => items
                        .into_iter()
                        .filter_map(|t| match t {
                            Value::String(s) => Some(s),
                            // A tool described by an object: keep its name.
                            other => other.get("name")?.as_str().map(str::to_owned),
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                out.push(AgentEvent::SessionStarted {
                    session_id: session_id.into_owned(),
                    model: l.model.map(Cow::into_owned),
                    tools,
                    cwd: l.cwd.map(Cow::into_owned),
                    version: l.claude_code_version.map(Cow::into_owned),
                    transcript: None,
                });
            }
            Some("api_retry") => {
                let status = l.error_status.as_ref().and_then(as_u16);
                self.retry_status = status;
                let message = l.error.as_ref().map(value_text);
                let kind = status
                    .map(ErrorKind::from_status)
                    .or_else(|| message.as_deref().map(ErrorKind::from_text));
                out.push(AgentEvent::RetryNotice {
                    attempt: l.attempt.as_ref().and_then(as_u32),
                    max_attempts: l.max_retries.as_ref().and_then(as_u32),
                    delay_ms: l
                        .retry_delay_ms
                        .as_ref()
                        .and_then(Value::as_f64)
                        .map(|ms| ms.round() as u64),
                    kind,
                    status,
                    message,
                });
            }
            Some("task_started") => {
                let Some(task_id) = l.task_id else {
                    return out.push(unknown(line.trim_ascii()));
                };
                out.push(AgentEvent::TaskStarted {
                    task_id: task_id.into_owned(),
                    tool_call_id: l.tool_use_id.map(Cow::into_owned),
                    description: l.description.map(Cow::into_owned),
                });
            }
            Some("task_updated") => {
                let Some(task_id) = l.task_id else {
                    return out.push(unknown(line.trim_ascii()));
                };
                // Only a final status matters: the task no longer runs.
                if let Some(status) = l
                    .patch
                    .status
                    .filter(|s| matches!(&**s, "completed" | "failed" | "killed"))
                {
                    out.push(AgentEvent::TaskEnded {
                        task_id: task_id.into_owned(),
                        status: status.into_owned(),
                    });
                }
            }
            Some("task_notification") => {
                let (Some(task_id), Some(status)) = (l.task_id, l.status) else {
                    return out.push(unknown(line.trim_ascii()));
                };
                out.push(AgentEvent::TaskNotified {
                    task_id: task_id.into_owned(),
                    status: status.into_owned(),
                });
            }
            _ => out.push(unknown(line.trim_ascii())),
        }
    }

    fn assistant(&mut self, l: Line, out: &mut Vec<AgentEvent>) {
        let Some(message) = l.message else { return };
        let message_id = message.id.map(Cow::into_owned);
        let blocks = match message.content {
            Some(Value::Array(blocks)) => blocks,
            Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
            _ => Vec::new(),
        };
        let first = match &message_id {
            Some(id) => {
                let seen = self.blocks_seen.entry(id.clone()).or_insert(0);
                let first = *seen;
                *seen += blocks.len() as u32;
                first
            }
            None => 0,
        };
        let mut text_of_error = None;
        for (i, block) in blocks.into_iter().enumerate() {
            let index = first + i as u32;
            match content_block(block, message_id.clone(), index) {
                Some(ev) => {
                    if let AgentEvent::AssistantText { text, .. } = &ev {
                        text_of_error = Some(text.clone());
                    }
                    out.push(ev);
                }
                None => continue,
            }
        }
        // A synthetic message (model "<synthetic>") carries the provider's failure, e.g.
        // `"error":"authentication_failed"` after a 401: report it now, before the result.
        if let Some(code) = l.error.as_ref().map(value_text) {
            self.error_reported = true;
            let kind = ErrorKind::from_text(&code);
            let status = self
                .retry_status
                .filter(|&s| ErrorKind::from_status(s) == kind);
            out.push(AgentEvent::Error {
                kind,
                status,
                message: text_of_error.unwrap_or(code),
            });
        }
    }

    fn result(&mut self, l: Line, out: &mut Vec<AgentEvent>) {
        // A turn cut short by `interrupt` or a `"priority":"now"` message ends
        // `error_during_execution` with `is_error`, but nothing failed: it was interrupted.
        let interrupted = l
            .terminal_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("aborted_"));
        let autonomous = l.origin.kind.as_deref() == Some("task-notification");
        // Claude 2.1 names every turn's end: say who owned each (a turn that began while a
        // task's wake was owed may still be ours: the result decides).
        if l.terminal_reason.is_some() || l.origin.kind.is_some() {
            out.push(AgentEvent::TurnInfo {
                autonomous,
                interrupted,
            });
        }
        let usage = l.usage.unwrap_or_default();
        out.push(AgentEvent::Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cached_input_tokens: usage.cache_read_input_tokens,
            cost_usd: self.turn_cost(l.total_cost_usd.as_ref().and_then(Value::as_f64)),
            turns: l.num_turns.as_ref().and_then(as_u32),
        });
        let text = l.result.map(|v| value_text(&v));
        // `subtype` says "success" even on a 401 (is_error true): is_error is the truth.
        let is_error = !interrupted
            && l.is_error
                .unwrap_or_else(|| l.subtype.as_deref().is_some_and(|s| s.starts_with("error")));
        if is_error && !self.error_reported {
            let status = l.api_error_status.as_ref().and_then(as_u16);
            let subtype = l.subtype.as_deref().unwrap_or("error");
            let kind = match status {
                Some(s) => ErrorKind::from_status(s),
                // A cut stream ends this way (the agents README): transient.
                None if subtype == "error_during_execution" => ErrorKind::Network,
                None => ErrorKind::from_text(text.as_deref().unwrap_or(subtype)),
            };
            out.push(AgentEvent::Error {
                kind,
                status,
                message: text.clone().unwrap_or_else(|| subtype.to_owned()),
            });
        }
        out.push(AgentEvent::Final {
            success: !is_error,
            text,
            structured_output: l.structured_output,
            permission_denials: l.permission_denials.unwrap_or_default(),
        });
        self.error_reported = false;
        self.retry_status = None;
        // A run's subagents and whole-line block counts end with it; a long-lived process
        // would otherwise hold them for every turn.
        self.blocks_seen.clear();
        self.subagents.clear();
    }

    /// This turn's cost, from the process's cumulative `total`: what it adds to the last one.
    /// A total lower than the last (an aborted turn reports 0) adds nothing and is not taken
    /// as the new base, so the next turn is not counted twice.
    fn turn_cost(&mut self, total: Option<f64>) -> Option<f64> {
        let total = total?;
        let cost = (total - self.cost_so_far).max(0.0);
        self.cost_so_far = self.cost_so_far.max(total);
        Some(cost)
    }

    /// The stream of the subagent started by tool call `parent`.
    fn subagent(&mut self, parent: &str) -> &mut Stream {
        let at = match self.subagents.iter().position(|(p, _)| p == parent) {
            Some(at) => at,
            None => {
                self.subagents.push((parent.to_owned(), Stream::default()));
                self.subagents.len() - 1
            }
        };
        &mut self.subagents[at].1
    }
}

impl Stream {
    /// Applies one SSE event; returns whether it reported an error.
    fn event(&mut self, ev: StreamEvent, line: &[u8], out: &mut Vec<AgentEvent>) -> bool {
        match ev.kind {
            EventKind::MessageStart => {
                let message = ev.message.unwrap_or_default();
                let id = message.id.map(Cow::into_owned);
                self.stop_reason = None;
                self.pending_tool = None;
                if let Some(id) = &id {
                    out.push(AgentEvent::MessageStarted {
                        message_id: id.clone(),
                        model: message.model.map(Cow::into_owned),
                    });
                }
                self.current = id;
            }
            EventKind::ContentBlockStart => {
                let index = ev.index.unwrap_or(0);
                let Some(block) = ev.content_block else {
                    return false;
                };
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use" | "server_tool_use") => {
                        let field =
                            |k: &str| block.get(k).and_then(Value::as_str).map(str::to_owned);
                        self.pending_tool = Some(PendingTool {
                            index,
                            id: field("id").unwrap_or_default(),
                            name: field("name").unwrap_or_default(),
                            input: block.get("input").cloned().unwrap_or(Value::Null),
                            json: String::new(),
                        });
                    }
                    Some("text") => {
                        if let Some(text) = block.get("text").and_then(Value::as_str)
                            && !text.is_empty()
                        {
                            out.push(self.delta_text(index, text.to_owned()));
                        }
                    }
                    _ => {}
                }
            }
            EventKind::ContentBlockDelta => {
                let index = ev.index.unwrap_or(0);
                let Some(delta) = ev.delta else { return false };
                match delta.kind {
                    Some(DeltaKind::TextDelta) => {
                        if let Some(text) = delta.text {
                            out.push(self.delta_text(index, text));
                        }
                    }
                    Some(DeltaKind::ThinkingDelta) => {
                        if let Some(text) = delta.thinking {
                            out.push(AgentEvent::Reasoning {
                                message_id: self.current.clone(),
                                index,
                                text,
                                partial: true,
                            });
                        }
                    }
                    Some(DeltaKind::InputJsonDelta) => {
                        if let (Some(tool), Some(part)) =
                            (&mut self.pending_tool, delta.partial_json)
                            && tool.index == index
                        {
                            tool.json.push_str(&part);
                        }
                    }
                    // Signatures and citations are not progress anyone reads.
                    _ => {}
                }
            }
            EventKind::ContentBlockStop => {
                let index = ev.index.unwrap_or(0);
                if self.pending_tool.as_ref().is_some_and(|t| t.index == index) {
                    let tool = self.pending_tool.take().expect("checked above");
                    let input = if tool.json.trim().is_empty() {
                        tool.input
                    } else {
                        // A cut stream can leave half an input: keep its text rather than lose it.
                        serde_json::from_str(&tool.json).unwrap_or(Value::String(tool.json))
                    };
                    out.push(AgentEvent::ToolCall {
                        id: tool.id,
                        name: tool.name,
                        input,
                        message_id: self.current.clone(),
                    });
                }
            }
            EventKind::MessageDelta => {
                if let Some(reason) = ev.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason.into_owned());
                }
            }
            EventKind::MessageStop => out.push(AgentEvent::MessageStopped {
                message_id: self.current.take(),
                stop_reason: self.stop_reason.take(),
            }),
            EventKind::Ping => {}
            EventKind::Error => {
                let error = ev.error.unwrap_or(Value::Null);
                let code = error.get("type").and_then(Value::as_str).unwrap_or("error");
                let message = error.get("message").and_then(Value::as_str).unwrap_or(code);
                out.push(AgentEvent::Error {
                    kind: ErrorKind::from_text(code),
                    status: None,
                    message: message.to_owned(),
                });
                return true;
            }
            EventKind::Other => out.push(unknown(line.trim_ascii())),
        }
        false
    }

    fn delta_text(&self, index: u32, text: String) -> AgentEvent {
        AgentEvent::AssistantText {
            message_id: self.current.clone(),
            index,
            text,
            partial: true,
        }
    }
}

/// A `user` line: tool results (and whether one left a task in the background), a message of
/// ours replayed as the agent takes it in (`--replay-user-messages`: `isReplay` with the uuid
/// it was sent with), or other user text in the stream (`[Request interrupted by user]`).
fn user(l: Line, out: &mut Vec<AgentEvent>) {
    if l.is_replay
        && let Some(uuid) = l.uuid
    {
        return out.push(AgentEvent::MessageTaken {
            message_id: uuid.into_owned(),
        });
    }
    let background = l.tool_use_result.background_task_id;
    let Some(message) = l.message else { return };
    match message.content {
        Some(Value::String(text)) => out.push(AgentEvent::UserMessage { text }),
        Some(Value::Array(blocks)) => {
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_result") => {
                        let tool_call_id = block
                            .get("tool_use_id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned();
                        let task = background.as_ref().map(|t| AgentEvent::TaskBackgrounded {
                            task_id: t.clone().into_owned(),
                            tool_call_id: tool_call_id.clone(),
                        });
                        out.push(AgentEvent::ToolResult {
                            tool_call_id,
                            content: block.get("content").map(value_text).unwrap_or_default(),
                            is_error: block
                                .get("is_error")
                                .and_then(Value::as_bool)
                                .unwrap_or(false),
                        });
                        out.extend(task);
                    }
                    Some("text") => out.push(AgentEvent::UserMessage {
                        text: block.get("text").map(value_text).unwrap_or_default(),
                    }),
                    _ => out.push(AgentEvent::Unknown { raw: block }),
                }
            }
        }
        _ => {}
    }
}

/// One content block of a whole `assistant` line as an event; `None` for blocks nobody reads
/// (redacted thinking).
fn content_block(mut block: Value, message_id: Option<String>, index: u32) -> Option<AgentEvent> {
    let take_str = |b: &mut Value, k: &str| match b.get_mut(k).map(Value::take) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    let ev = match block.get("type").and_then(Value::as_str) {
        Some("text") => AgentEvent::AssistantText {
            message_id,
            index,
            text: take_str(&mut block, "text"),
            partial: false,
        },
        Some("thinking") => AgentEvent::Reasoning {
            message_id,
            index,
            text: take_str(&mut block, "thinking"),
            partial: false,
        },
        Some("tool_use" | "server_tool_use") => AgentEvent::ToolCall {
            id: take_str(&mut block, "id"),
            name: take_str(&mut block, "name"),
            input: block
                .get_mut("input")
                .map(Value::take)
                .unwrap_or(Value::Null),
            message_id,
        },
        Some("redacted_thinking") => return None,
        _ => AgentEvent::Unknown { raw: block },
    };
    Some(ev)
}

/// The Claude driver for one run (the registry's `Protocol::Claude`).
pub(crate) fn driver(_: crate::agent::DriverSetup) -> Box<dyn crate::agent::Driver> {
    Box::<input::ClaudeDriver>::default()
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod turn_tests;

/// Claude's answer to a control request of ours: a refusal becomes a warning (the control
/// request did not do what it asked); a success says nothing the run needs.
fn control_response(l: Line, out: &mut Vec<AgentEvent>) {
    let Some(response) = l.response else { return };
    if response.subtype.as_deref() != Some("error") {
        return;
    }
    out.push(AgentEvent::Warning {
        message: format!(
            "claude refused control request {}: {}",
            response.request_id.as_deref().unwrap_or("?"),
            response
                .error
                .as_ref()
                .map_or_else(|| "no reason given".into(), value_text),
        ),
    });
}

/// A control request from Claude (`--permission-prompt-tool stdio`): `can_use_tool` asks
/// whether a tool may run; anything else is kept as unknown.
fn control_request(l: Line, line: &[u8], out: &mut Vec<AgentEvent>) {
    let (Some(request_id), Some(request)) = (l.request_id, l.request) else {
        return out.push(unknown(line.trim_ascii()));
    };
    if request.get("subtype").and_then(Value::as_str) != Some("can_use_tool") {
        return out.push(unknown(line.trim_ascii()));
    }
    let Some(tool) = request.get("tool_name").and_then(Value::as_str) else {
        return out.push(unknown(line.trim_ascii()));
    };
    out.push(AgentEvent::PermissionRequest {
        request_id: request_id.into_owned(),
        tool: tool.to_string(),
        input: request.get("input").cloned().unwrap_or(Value::Null),
        tool_call_id: request
            .get("tool_use_id")
            .and_then(Value::as_str)
            .map(str::to_string),
    });
}
