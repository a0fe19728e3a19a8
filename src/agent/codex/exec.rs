//! Codex `exec --json`: `thread.started`, `turn.started`, `item.started` / `item.updated` /
//! `item.completed` (items `agent_message`, `reasoning`, `command_execution`, `file_change`,
//! `mcp_tool_call`, `web_search`, `error`), `turn.completed` (usage), `turn.failed`, and the
//! top-level `error` lines Codex writes while it reconnects.

use std::borrow::Cow;
use std::collections::HashSet;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::line::{Decoded, decode, json_answer, status_in, tag, unknown, value_text};
use crate::agent::{AgentEvent, ErrorKind, LineParser};

/// Parser for Codex's `exec --json` output.
///
/// Codex has no final-result line: the answer is the last `agent_message`, so the parser keeps
/// it until `turn.completed`. It also remembers which tool items it announced at
/// `item.started`, so a completion without its start still yields the call.
#[derive(Debug, Default)]
pub struct CodexParser {
    /// The latest agent message's text: the turn's answer if no other follows.
    last_message: Option<String>,
    /// Tool items whose call was already emitted (at `item.started`).
    announced: HashSet<String>,
}

impl LineParser for CodexParser {
    fn feed(&mut self, line: &[u8], out: &mut Vec<AgentEvent>) {
        let l: Line = match decode(line) {
            Decoded::Line(l) => l,
            Decoded::Blank => return,
            Decoded::Fallback(ev) => return out.push(ev),
        };
        match l.kind {
            LineKind::ThreadStarted => match l.thread_id {
                Some(id) => out.push(AgentEvent::SessionStarted {
                    session_id: id.into_owned(),
                    model: None,
                    tools: Vec::new(),
                    cwd: None,
                    version: None,
                    transcript: None,
                }),
                None => out.push(unknown(line.trim_ascii())),
            },
            LineKind::TurnStarted => out.push(AgentEvent::TurnStarted),
            LineKind::ItemStarted | LineKind::ItemUpdated | LineKind::ItemCompleted => {
                let completed = l.kind == LineKind::ItemCompleted;
                match l.item {
                    Some(item) => self.item(item, completed, line, out),
                    None => out.push(unknown(line.trim_ascii())),
                }
            }
            LineKind::TurnCompleted => {
                let usage = l.usage.unwrap_or_default();
                out.push(AgentEvent::Usage {
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    cached_input_tokens: usage.cached_input_tokens,
                    cost_usd: None,
                    turns: Some(1),
                });
                let text = self.last_message.take();
                out.push(AgentEvent::Final {
                    success: true,
                    structured_output: text.as_deref().and_then(json_answer),
                    text,
                    permission_denials: Vec::new(),
                });
                self.announced.clear();
            }
            LineKind::TurnFailed => {
                let message = l
                    .error
                    .as_ref()
                    .and_then(|e| e.get("message"))
                    .map(value_text)
                    .unwrap_or_else(|| "turn failed".to_owned());
                out.push(error(message));
                out.push(AgentEvent::Final {
                    success: false,
                    text: self.last_message.take(),
                    structured_output: None,
                    permission_denials: Vec::new(),
                });
                self.announced.clear();
            }
            LineKind::Error => {
                let message = l.message.map(Cow::into_owned).unwrap_or_default();
                out.push(top_level_error(message));
            }
            LineKind::Other => out.push(unknown(line.trim_ascii())),
        }
    }
}

impl CodexParser {
    fn item(&mut self, mut item: Value, completed: bool, line: &[u8], out: &mut Vec<AgentEvent>) {
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let text = |item: &mut Value| match item.get_mut("text").map(Value::take) {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        let Some(kind) = item.get("type").and_then(tag::<ItemKind>) else {
            return out.push(unknown(line.trim_ascii()));
        };
        match kind {
            ItemKind::AgentMessage => {
                let text = text(&mut item);
                // Only the completed item is sure to hold the whole message.
                if completed {
                    self.last_message = Some(text.clone());
                }
                if completed || !text.is_empty() {
                    out.push(AgentEvent::AssistantText {
                        message_id: Some(id),
                        index: 0,
                        text,
                        partial: false,
                    });
                }
            }
            ItemKind::Reasoning => {
                let text = text(&mut item);
                if completed || !text.is_empty() {
                    out.push(AgentEvent::Reasoning {
                        message_id: Some(id),
                        index: 0,
                        text,
                        partial: false,
                    });
                }
            }
            ItemKind::CommandExecution
            | ItemKind::FileChange
            | ItemKind::McpToolCall
            | ItemKind::WebSearch => {
                if !self.announced.contains(&id) {
                    let (name, input) = tool_call(kind, &item);
                    out.push(AgentEvent::ToolCall {
                        id: id.clone(),
                        name,
                        input,
                        message_id: None,
                    });
                    self.announced.insert(id.clone());
                }
                if completed {
                    let (content, is_error) = tool_result(kind, &item);
                    out.push(AgentEvent::ToolResult {
                        tool_call_id: id,
                        content,
                        is_error,
                    });
                }
            }
            // An `error` item is a notice (unknown model metadata, …); the turn goes on.
            ItemKind::Error => out.push(AgentEvent::Warning {
                message: item.get("message").map(value_text).unwrap_or_default(),
            }),
            ItemKind::Other => out.push(unknown(line.trim_ascii())),
        }
    }
}

/// A tool item's name and input: what the model asked for, without the outcome fields.
fn tool_call(kind: ItemKind, item: &Value) -> (String, Value) {
    let get = |k: &str| item.get(k).cloned().unwrap_or(Value::Null);
    match kind {
        ItemKind::CommandExecution => (
            "command_execution".into(),
            json!({ "command": get("command") }),
        ),
        ItemKind::FileChange => ("file_change".into(), json!({ "changes": get("changes") })),
        ItemKind::WebSearch => ("web_search".into(), json!({ "query": get("query") })),
        _ => {
            let server = item.get("server").and_then(Value::as_str).unwrap_or("mcp");
            let tool = item.get("tool").and_then(Value::as_str).unwrap_or("tool");
            (format!("{server}/{tool}"), get("arguments"))
        }
    }
}

/// A finished tool item's output and whether it failed.
fn tool_result(kind: ItemKind, item: &Value) -> (String, bool) {
    let status = item
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let failed = matches!(status, "failed" | "declined");
    match kind {
        ItemKind::CommandExecution => {
            let output = item
                .get("aggregated_output")
                .map(value_text)
                .unwrap_or_default();
            let code = item.get("exit_code").and_then(Value::as_i64);
            (output, failed || code.is_some_and(|c| c != 0))
        }
        ItemKind::McpToolCall => {
            let result = match item.get("error") {
                Some(e) if !e.is_null() => e.get("message").unwrap_or(e),
                // An MCP result is `{content: [blocks]}`: its text is what the model reads.
                _ => match item.get("result") {
                    Some(r) => r.get("content").unwrap_or(r),
                    None => &Value::Null,
                },
            };
            (value_text(result), failed)
        }
        _ => (status.to_owned(), failed),
    }
}

/// A top-level `error` line: "Reconnecting... 2/5 (…)" while Codex retries, a failure
/// otherwise.
fn top_level_error(message: String) -> AgentEvent {
    if let Some(rest) = message.strip_prefix("Reconnecting...") {
        let (attempt, max_attempts) = attempts(rest);
        return AgentEvent::RetryNotice {
            attempt,
            max_attempts,
            delay_ms: None,
            kind: Some(kind_of(&message)),
            status: status_in(&message),
            message: Some(message),
        };
    }
    error(message)
}

fn error(message: String) -> AgentEvent {
    AgentEvent::Error {
        kind: kind_of(&message),
        status: status_in(&message),
        message,
    }
}

fn kind_of(message: &str) -> ErrorKind {
    match status_in(message) {
        Some(status) => ErrorKind::from_status(status),
        None => ErrorKind::from_text(message),
    }
}

/// "2/5" at the start of `rest` (after spaces) as (2, 5).
fn attempts(rest: &str) -> (Option<u32>, Option<u32>) {
    let word = rest.split_whitespace().next().unwrap_or_default();
    match word.split_once('/') {
        Some((a, m)) => (a.parse().ok(), m.parse().ok()),
        None => (None, None),
    }
}

/// A line's `type`, dispatched on; a type this version does not know is [`LineKind::Other`],
/// kept as [`AgentEvent::Unknown`].
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    #[serde(rename = "thread.started")]
    ThreadStarted,
    #[serde(rename = "turn.started")]
    TurnStarted,
    #[serde(rename = "item.started")]
    ItemStarted,
    #[serde(rename = "item.updated")]
    ItemUpdated,
    #[serde(rename = "item.completed")]
    ItemCompleted,
    #[serde(rename = "turn.completed")]
    TurnCompleted,
    #[serde(rename = "turn.failed")]
    TurnFailed,
    /// Written while Codex reconnects, and when it gives up.
    #[serde(rename = "error")]
    Error,
    #[serde(other)]
    Other,
}

/// An item's `type`; one this version does not know is [`ItemKind::Other`], kept as
/// [`AgentEvent::Unknown`].
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum ItemKind {
    AgentMessage,
    Reasoning,
    CommandExecution,
    FileChange,
    McpToolCall,
    WebSearch,
    /// A notice (unknown model metadata, …); the turn goes on.
    Error,
    #[serde(other)]
    Other,
}

/// A line: its type beside every field any type uses (borrowed where it can be).
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: LineKind,
    #[serde(default, borrow)]
    thread_id: Option<Cow<'a, str>>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cached_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
