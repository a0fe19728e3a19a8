//! The items of a Codex `app-server` turn (`item/started`, `item/completed`) as events: an
//! agent message is final only at `item/completed` (its deltas stream before; one that never
//! completes was dropped by a steer), tools are called once and answered at completion.

use super::CodexAppDriver;
use crate::agent::AgentEvent;
use crate::agent::codex::app_wire::ItemKind;
use crate::agent::line::{tag, unknown, value_text};
use serde_json::{Value, json};

impl CodexAppDriver {
    pub(super) fn item(
        &mut self,
        item: &Value,
        completed: bool,
        raw: &[u8],
        events: &mut Vec<AgentEvent>,
    ) {
        let id = item["id"].as_str().unwrap_or_default().to_string();
        let Some(kind) = tag::<ItemKind>(&item["type"]) else {
            return events.push(unknown(raw));
        };
        match kind {
            ItemKind::AgentMessage => {
                let text = item["text"].as_str().unwrap_or_default().to_string();
                if !completed {
                    self.streams(&id);
                } else {
                    self.streaming.retain(|s| *s != id);
                    // The whole message replaces its deltas in the timeline.
                    self.last_message = Some(text.clone());
                    events.push(AgentEvent::AssistantText {
                        message_id: Some(id),
                        index: 0,
                        text,
                        partial: false,
                    });
                }
            }
            ItemKind::Reasoning if completed => {
                let text: String = item["summary"]
                    .as_array()
                    .map(|s| {
                        s.iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                events.push(AgentEvent::Reasoning {
                    message_id: Some(id),
                    index: 0,
                    text,
                    partial: false,
                });
            }
            ItemKind::UserMessage if completed => events.push(AgentEvent::UserMessage {
                text: item["content"].as_array().map_or_else(String::new, |c| {
                    c.iter().filter_map(|b| b["text"].as_str()).collect()
                }),
            }),
            ItemKind::CommandExecution
            | ItemKind::FileChange
            | ItemKind::McpToolCall
            | ItemKind::WebSearch => {
                if !self.tools.contains_key(&id) {
                    let (name, input) = tool_call(kind, item);
                    self.tools.insert(id.clone(), input.clone());
                    events.push(AgentEvent::ToolCall {
                        id: id.clone(),
                        name,
                        input,
                        message_id: None,
                    });
                }
                if completed {
                    let (content, is_error) = tool_result(kind, item);
                    events.push(AgentEvent::ToolResult {
                        tool_call_id: id,
                        content,
                        is_error,
                    });
                }
            }
            ItemKind::Reasoning | ItemKind::UserMessage => {}
            ItemKind::Other => events.push(unknown(raw)),
        }
    }

    /// `agentMessage` `id` is streaming.
    pub(super) fn streams(&mut self, id: &str) {
        if !self.streaming.iter().any(|s| s == id) {
            self.streaming.push(id.to_string());
        }
    }
}

/// A tool item's name (the `exec --json` names, so one policy reads both) and its input.
fn tool_call(kind: ItemKind, item: &Value) -> (String, Value) {
    let get = |k: &str| item.get(k).cloned().unwrap_or(Value::Null);
    match kind {
        ItemKind::CommandExecution => (
            "command_execution".into(),
            json!({"command": get("command"), "cwd": get("cwd")}),
        ),
        ItemKind::FileChange => ("file_change".into(), json!({"changes": get("changes")})),
        ItemKind::WebSearch => ("web_search".into(), json!({"query": get("query")})),
        _ => {
            let server = item["server"].as_str().unwrap_or("mcp");
            let tool = item["tool"].as_str().unwrap_or("tool");
            (format!("{server}/{tool}"), get("arguments"))
        }
    }
}

/// A finished tool item's output and whether it failed.
fn tool_result(kind: ItemKind, item: &Value) -> (String, bool) {
    let status = item["status"].as_str().unwrap_or_default();
    let failed = matches!(status, "failed" | "declined");
    match kind {
        ItemKind::CommandExecution => {
            let output = item
                .get("aggregatedOutput")
                .map(value_text)
                .unwrap_or_default();
            let code = item["exitCode"].as_i64();
            (output, failed || code.is_some_and(|c| c != 0))
        }
        ItemKind::McpToolCall => (
            item.get("result").map(value_text).unwrap_or_default(),
            failed,
        ),
        _ => (status.to_string(), failed),
    }
}
