//! Cline `--json`: one JSON object per line. The agent's own events arrive wrapped as
//! `{"type":"agent_event","event":{…}}` (`iteration_start`/`iteration_end`, `content_start`,
//! `content_update` and `content_end` for text, reasoning and tools, `usage`, `notice`, `error`,
//! `done`); around them come `hook_event` lines (which repeat what the agent events say), a
//! `run_start` line with `-v`, the final `run_result`, a bare `error` line when the run fails,
//! and `run_aborted` after a SIGTERM. (A run refused before it starts prints its bare `error`
//! line on stderr, which this parser never sees.)
//!
//! Cline prints no session id in this mode and cannot resume a session headless (`--id` forces
//! its interactive mode), so no [`AgentEvent::SessionStarted`] is made.

mod agent;

pub(crate) use agent::AGENT;

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::agent::line::{Decoded, decode, json_answer, status_in, unknown};
use crate::agent::{AgentEvent, ErrorKind, LineParser};

/// Parser for Cline's `--json` output.
///
/// Cline names no messages either: each model turn (`iteration_start`) is one message,
/// `cline-<iteration>`. A text delta (`content_start`) is a fragment of it, `content_end` its
/// whole text, which the timeline reconciles with the fragments.
#[derive(Debug, Default)]
pub struct ClineParser {
    /// The model turn under way (0: none yet).
    iteration: u64,
    /// A failure was already reported as an [`AgentEvent::Error`]: the bare `error` line that
    /// repeats it must not replace its kind.
    failed: bool,
}

impl LineParser for ClineParser {
    fn feed(&mut self, line: &[u8], out: &mut Vec<AgentEvent>) {
        let l: Line = match decode(line) {
            Decoded::Line(l) => l,
            Decoded::Blank => return,
            Decoded::Fallback(ev) => return out.push(ev),
        };
        match (l.kind, l.event) {
            (LineKind::AgentEvent, Some(ev)) => self.agent_event(ev, line, out),
            // Hook notifications repeat the agent's events (tool_call, agent_end, …), and
            // `run_start` only names the provider and model: nothing new for the timeline.
            (LineKind::HookEvent | LineKind::RunStart, _) => {}
            (LineKind::RunResult, _) => self.result(l.finish_reason, l.text, l.iterations, out),
            (LineKind::Error, _) if !self.failed => {
                self.failed = true;
                let message = l.message.map(Cow::into_owned).unwrap_or_default();
                out.push(AgentEvent::Error {
                    kind: ErrorKind::from_text(&message),
                    status: status_in(&message),
                    message,
                });
            }
            (LineKind::Error, _) => {}
            // After a SIGTERM, once the model call under way has ended (Cline does not cut it
            // short): the stream's end tells the timeline the run was stopped.
            (LineKind::RunAborted, _) => out.push(AgentEvent::Warning {
                message: format!(
                    "cline run aborted: {}",
                    l.reason.as_deref().unwrap_or("no reason given")
                ),
            }),
            (LineKind::AgentEvent | LineKind::Other, _) => out.push(unknown(line.trim_ascii())),
        }
    }
}

impl ClineParser {
    /// The id of the model turn under way.
    fn message_id(&self) -> Option<String> {
        Some(format!("cline-{}", self.iteration))
    }

    fn agent_event(&mut self, ev: Event, line: &[u8], out: &mut Vec<AgentEvent>) {
        use ContentType::{Reasoning, Text, Tool};
        match (ev.kind, ev.content_type) {
            (EventKind::IterationStart, _) => {
                self.iteration = ev.iteration.unwrap_or(self.iteration + 1);
                out.push(AgentEvent::TurnStarted);
            }
            (EventKind::IterationEnd, _) => out.push(AgentEvent::MessageStopped {
                message_id: self.message_id(),
                stop_reason: Some(
                    if ev.had_tool_calls == Some(true) {
                        "tool_use"
                    } else {
                        "end_turn"
                    }
                    .into(),
                ),
            }),
            (EventKind::ContentStart | EventKind::ContentEnd, Some(Text)) => {
                out.push(AgentEvent::AssistantText {
                    message_id: self.message_id(),
                    index: 0,
                    text: ev.text.map(Cow::into_owned).unwrap_or_default(),
                    partial: ev.kind == EventKind::ContentStart,
                });
            }
            (EventKind::ContentStart | EventKind::ContentEnd, Some(Reasoning)) => {
                out.push(AgentEvent::Reasoning {
                    message_id: self.message_id(),
                    index: 1,
                    text: ev.reasoning.map(Cow::into_owned).unwrap_or_default(),
                    partial: ev.kind == EventKind::ContentStart,
                });
            }
            (EventKind::ContentStart, Some(Tool)) => out.push(AgentEvent::ToolCall {
                id: ev.tool_call_id.map(Cow::into_owned).unwrap_or_default(),
                name: ev.tool_name.map(Cow::into_owned).unwrap_or_default(),
                input: ev.input.unwrap_or(Value::Null),
                message_id: self.message_id(),
            }),
            // A running command's output as it comes: the whole output follows in
            // `content_end`.
            (EventKind::ContentUpdate, Some(Tool)) => {}
            (EventKind::ContentEnd, Some(Tool)) => {
                let (content, is_error) = tool_output(ev.output.as_ref(), ev.error.as_ref());
                out.push(AgentEvent::ToolResult {
                    tool_call_id: ev.tool_call_id.map(Cow::into_owned).unwrap_or_default(),
                    content,
                    is_error,
                });
            }
            // Per model turn, counted since the previous report: the reports add up to the
            // run's totals.
            (EventKind::Usage, _) => out.push(AgentEvent::Usage {
                input_tokens: ev.input_tokens,
                output_tokens: ev.output_tokens,
                cached_input_tokens: ev.cache_read_tokens,
                cost_usd: ev.cost,
                turns: None,
            }),
            (EventKind::Notice, _) => out.push(notice(ev.message, ev.metadata)),
            (EventKind::Error, _) => {
                let message = match &ev.error {
                    Some(e) => e.get("message").and_then(Value::as_str).map(str::to_owned),
                    None => None,
                }
                .unwrap_or_else(|| "cline run failed".to_owned());
                if ev.recoverable == Some(true) {
                    // A failed tool call or a model mistake: Cline tells the model and goes
                    // on, up to its `--retries` limit.
                    out.push(AgentEvent::Warning { message });
                } else {
                    self.failed = true;
                    let kind = match ev.error_class.as_deref() {
                        Some("auth") => ErrorKind::Auth,
                        _ => ErrorKind::from_text(&message),
                    };
                    out.push(AgentEvent::Error {
                        kind,
                        status: status_in(&message),
                        message,
                    });
                }
            }
            // `done` repeats what `run_result` says next, with less in it.
            (EventKind::Done, _) => {}
            _ => out.push(unknown(line.trim_ascii())),
        }
    }

    fn result(
        &mut self,
        finish: Option<Cow<str>>,
        text: Option<Cow<str>>,
        iterations: Option<u32>,
        out: &mut Vec<AgentEvent>,
    ) {
        // Tokens were counted turn by turn; the run adds its number of turns.
        out.push(AgentEvent::Usage {
            input_tokens: None,
            output_tokens: None,
            cached_input_tokens: None,
            cost_usd: None,
            turns: iterations,
        });
        let success = finish.as_deref() == Some("completed");
        let text = text.map(Cow::into_owned).filter(|t| !t.is_empty());
        if success {
            out.push(AgentEvent::Final {
                success,
                structured_output: text.as_deref().and_then(json_answer),
                text,
                permission_denials: Vec::new(),
            });
            return;
        }
        // On failure `text` is the error message, not an answer.
        if !self.failed {
            self.failed = true;
            let message = text
                .clone()
                .unwrap_or_else(|| format!("cline run ended: {}", finish.unwrap_or_default()));
            out.push(AgentEvent::Error {
                kind: ErrorKind::from_text(&message),
                status: status_in(&message),
                message,
            });
        }
        out.push(AgentEvent::Final {
            success,
            text: None,
            structured_output: None,
            permission_denials: Vec::new(),
        });
    }
}

/// A tool's result as text, and whether it failed. Shapes seen: `run_commands` gives a list of
/// `{query, result, success}`, `editor` one such object, a refused call `{"error": …}` plus a
/// top-level `error`.
fn tool_output(output: Option<&Value>, error: Option<&Value>) -> (String, bool) {
    let entries: Vec<&Value> = match output {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(v @ Value::Object(_)) => vec![v],
        _ => Vec::new(),
    };
    let failed_entry = entries.iter().any(|e| {
        e.get("success") == Some(&Value::Bool(false))
            || e.get("error").is_some_and(|v| !v.is_null())
    });
    let mut text = String::new();
    for e in &entries {
        let part = e.get("result").or_else(|| e.get("error"));
        match part {
            Some(Value::String(s)) => text.push_str(s),
            Some(other) => text.push_str(&other.to_string()),
            None => text.push_str(&e.to_string()),
        }
    }
    if entries.is_empty() {
        match output {
            Some(Value::String(s)) => text.push_str(s),
            Some(Value::Null) | None => {}
            Some(other) => text.push_str(&other.to_string()),
        }
    }
    let error = error.filter(|v| !v.is_null());
    if text.is_empty()
        && let Some(e) = error
    {
        text = e.as_str().map_or_else(|| e.to_string(), str::to_owned);
    }
    (text, failed_entry || error.is_some())
}

/// A status notice: Cline retrying a failed provider call, or compacting its context.
fn notice(message: Option<Cow<str>>, metadata: Option<Value>) -> AgentEvent {
    let message = message.map(Cow::into_owned).unwrap_or_default();
    let kind = metadata
        .as_ref()
        .and_then(|m| m.get("kind"))
        .and_then(Value::as_str);
    if kind != Some("provider_error_retry") {
        return AgentEvent::Warning { message };
    }
    // "provider error — retrying (attempt 2/3)"
    let (attempt, max_attempts) = message
        .rsplit_once("attempt ")
        .and_then(|(_, rest)| rest.trim_end_matches(')').split_once('/'))
        .map(|(a, m)| (a.trim().parse().ok(), m.trim().parse().ok()))
        .unwrap_or((None, None));
    AgentEvent::RetryNotice {
        attempt,
        max_attempts,
        delay_ms: None,
        kind: None,
        status: status_in(&message),
        message: Some(message),
    }
}

/// A line's `type`, dispatched on; a type this version does not know is [`LineKind::Other`],
/// kept as [`AgentEvent::Unknown`].
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum LineKind {
    AgentEvent,
    HookEvent,
    RunStart,
    RunResult,
    Error,
    RunAborted,
    #[serde(other)]
    Other,
}

/// An `agent_event`'s `type`.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum EventKind {
    IterationStart,
    IterationEnd,
    ContentStart,
    ContentUpdate,
    ContentEnd,
    Usage,
    Notice,
    Error,
    Done,
    #[serde(other)]
    Other,
}

/// What a `content_*` event is about.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum ContentType {
    Text,
    Reasoning,
    Tool,
    #[serde(other)]
    Other,
}

/// A line of Cline's `--json` output; fields of every type, all optional.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: LineKind,
    #[serde(default, borrow)]
    event: Option<Event<'a>>,
    #[serde(default, borrow, rename = "finishReason")]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    iterations: Option<u32>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reason: Option<Cow<'a, str>>,
}

/// The `event` of an `agent_event` line.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: EventKind,
    #[serde(default)]
    iteration: Option<u64>,
    #[serde(default)]
    had_tool_calls: Option<bool>,
    #[serde(default)]
    content_type: Option<ContentType>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, borrow)]
    error_class: Option<Cow<'a, str>>,
    #[serde(default)]
    recoverable: Option<bool>,
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_tokens: Option<u64>,
    #[serde(default)]
    cost: Option<f64>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default)]
    metadata: Option<Value>,
}

/// The reader for one run (the registry's `Protocol::Cline`): it only listens.
pub(crate) fn driver(_: crate::agent::DriverSetup) -> Box<dyn crate::agent::Driver> {
    Box::new(crate::agent::driver::Listen(ClineParser::default()))
}

#[cfg(test)]
mod tests;
