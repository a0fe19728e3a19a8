//! A model request's conversation, read the same way whatever the API: the user's own words,
//! tool results, Claude's background-task notifications and the messages Claude Code injects
//! mid-turn, in order. The directed mode decides its answer from this.
//!
//! What is left out: everything the CLI wraps around the user's words (Claude's
//! `<system-reminder>` blocks, Codex's `<environment_context>` and AGENTS.md instructions,
//! Gemini's session context), and the model's own turns, so directives are only ever read from
//! text a test wrote.

use super::request::{Api, Request};
use serde_json::Value;

/// One piece of the conversation.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Item {
    /// A real text block of a user message.
    User(String),
    /// Claude's `<task-notification>…` user text (a background task ended).
    Notification(String),
    /// A tool result / function output, as text.
    ToolResult(String),
    /// A `system` message Claude Code appended after the last message: a user message that
    /// arrived while the turn ran, or a merged notification (see turns.md §2).
    Injected(Box<Item>),
    /// The model's own turn (text or tool calls).
    Model,
}

/// Claude Code's lead-in for a user message merged into a running turn.
const QUEUED_LEAD: &str = "The user sent a new message while you were working:";
/// Claude Code's lead-in for a notification merged into a running turn.
const NOTIFY_LEAD: &str = "[SYSTEM NOTIFICATION";
const NOTIFY_TAG: &str = "<task-notification>";

/// The conversation of `req` (empty for the APIs the directed mode does not read).
pub(super) fn items(req: &Request) -> Vec<Item> {
    match req.api {
        Api::Anthropic => anthropic(&req.body),
        Api::Responses => responses(&req.body),
        Api::Gemini => gemini(&req.body),
        _ => chat(&req.body),
    }
}

/// Text the CLIs wrap around a user's words, never the words themselves.
fn is_wrapper(text: &str) -> bool {
    let t = text.trim_start();
    [
        "<system-reminder>",
        "<environment_context>",
        "<user_instructions>",
        "<permissions instructions>",
        "<turn_aborted>",
        "<session_context>",
        "# AGENTS.md instructions",
        "[Request interrupted by user",
    ]
    .iter()
    .any(|p| t.starts_with(p))
}

/// A user text block: a notification, a real text, or nothing (a wrapper or empty).
fn user_text(text: &str) -> Option<Item> {
    if text.trim_start().starts_with(NOTIFY_TAG) {
        Some(Item::Notification(text.trim().to_string()))
    } else if is_wrapper(text) || text.trim().is_empty() {
        None
    } else {
        Some(Item::User(text.to_string()))
    }
}

/// Text of a tool result's `content`: a string, or the text of its blocks.
fn flat_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b["text"].as_str().or(b.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Anthropic Messages: `messages[]` of user/assistant turns, whose content is a string or
/// blocks (`text`, `tool_result`, `tool_use`); Claude Code appends `system` turns mid-turn.
fn anthropic(body: &Value) -> Vec<Item> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        match m["role"].as_str() {
            Some("assistant") => out.push(Item::Model),
            // Claude Code also sends system turns of its own (the list of agent types after the
            // first prompt): only the two injections are read.
            Some("system") => {
                out.extend(injected(&flat_text(&m["content"])).map(|i| Item::Injected(Box::new(i))))
            }
            _ => match &m["content"] {
                Value::String(s) => out.extend(user_text(s)),
                blocks => {
                    for b in blocks.as_array().into_iter().flatten() {
                        match b["type"].as_str() {
                            Some("text") => out.extend(user_text(b["text"].as_str().unwrap_or(""))),
                            Some("tool_result") => {
                                out.push(Item::ToolResult(flat_text(&b["content"])))
                            }
                            _ => {}
                        }
                    }
                }
            },
        }
    }
    // Only a trailing system message is an injection still to acknowledge; one further back is
    // history the model already answered.
    let trailing = out
        .iter()
        .rev()
        .take_while(|i| matches!(i, Item::Injected(_)))
        .count();
    let keep_from = out.len() - trailing;
    for item in &mut out[..keep_from] {
        if matches!(item, Item::Injected(_)) {
            *item = Item::Model;
        }
    }
    out
}

/// What a system message Claude Code injected carries: the queued user's words (between the
/// lead-in line and its closing "IMPORTANT: …" paragraph), or the notification; `None` for a
/// system message of another kind.
fn injected(text: &str) -> Option<Item> {
    if let Some(rest) = text.trim_start().strip_prefix(QUEUED_LEAD) {
        let words = rest.split("\n\nIMPORTANT:").next().unwrap_or(rest);
        return Some(Item::User(words.trim().to_string()));
    }
    if text.trim_start().starts_with(NOTIFY_LEAD)
        && let Some(at) = text.find(NOTIFY_TAG)
    {
        return Some(Item::Notification(text[at..].trim().to_string()));
    }
    None
}

/// OpenAI Responses: `input[]` of `message` items (content `input_text` / `output_text`),
/// `function_call` and `function_call_output` (and their custom-tool twins).
fn responses(body: &Value) -> Vec<Item> {
    let mut out = Vec::new();
    for it in body["input"].as_array().into_iter().flatten() {
        match (it["type"].as_str(), it["role"].as_str()) {
            (Some("message") | None, Some("user")) => {
                for c in it["content"].as_array().into_iter().flatten() {
                    out.extend(user_text(c["text"].as_str().unwrap_or("")));
                }
            }
            (Some("function_call_output" | "custom_tool_call_output"), _) => {
                out.push(Item::ToolResult(flat_text(&it["output"])))
            }
            (Some("message") | None, Some("assistant"))
            | (Some("function_call" | "custom_tool_call" | "reasoning"), _) => {
                out.push(Item::Model)
            }
            _ => {}
        }
    }
    out
}

/// Gemini: `contents[]` of user/model turns whose parts are `text`, `functionCall` or
/// `functionResponse`.
fn gemini(body: &Value) -> Vec<Item> {
    let mut out = Vec::new();
    for c in body["contents"].as_array().into_iter().flatten() {
        if c["role"] == "model" {
            out.push(Item::Model);
            continue;
        }
        for p in c["parts"].as_array().into_iter().flatten() {
            if let Some(t) = p["text"].as_str() {
                out.extend(user_text(t));
            } else if let Some(r) = p.get("functionResponse") {
                let resp = &r["response"];
                let text = match resp.get("output").or(resp.get("error")) {
                    Some(v) => flat_text(v),
                    None => resp.to_string(),
                };
                out.push(Item::ToolResult(text));
            }
        }
    }
    out
}

/// Chat Completions: `messages[]` with `user`, `assistant` and `tool` roles.
fn chat(body: &Value) -> Vec<Item> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        match m["role"].as_str() {
            Some("user") => out.extend(user_text(&flat_text(&m["content"]))),
            Some("tool") => out.push(Item::ToolResult(flat_text(&m["content"]))),
            Some("assistant") => out.push(Item::Model),
            _ => {}
        }
    }
    out
}
