//! The Agent Client Protocol (JSON-RPC 2.0 over stdio), as Gemini CLI speaks it with `--acp`.
//! The conversation, checked against Gemini CLI 0.61 (`tests/agents/protocols.rs`):
//!
//! 1. `initialize` (protocol version 1; oneshot offers no file system or terminal of its own,
//!    so the agent uses its own tools) → `session/new` in the workdir → `session/prompt`;
//! 2. `session/update` notifications stream the answer (`agent_message_chunk`,
//!    `agent_thought_chunk`, `tool_call`, `tool_call_update`), and the agent asks before a
//!    tool runs (`session/request_permission`, with options of kind `allow_once`,
//!    `reject_once`, …) — oneshot's `permit` picks;
//! 3. the prompt's response ends the turn (`stopReason`, usage under `_meta.quota`), or an
//!    error (Gemini puts the provider's HTTP status in the error code); the agent exits when
//!    its stdin closes. `session/cancel` (a notification) stops the turn.
//!
//! ACP has no message ids: text chunks between two tool calls form one message, named here
//! `m1`, `m2`, … in order.

use crate::agent::driver::{Driver, DriverSetup, Reply};
use crate::agent::jsonrpc::{Incoming, METHOD_NOT_FOUND, Rpc};
use crate::agent::line::{json_answer, status_in, tag, unknown, value_text};
use wire::SessionUpdate;

mod gemini;
mod wire;

pub(crate) use gemini::GEMINI;

/// The ACP driver for one run (the registry's `Protocol::Acp`).
pub(crate) fn driver(setup: DriverSetup) -> Box<dyn Driver> {
    Box::new(AcpDriver::new(setup))
}
use crate::agent::{AgentEvent, ErrorKind};
use serde_json::{Value, json};
use std::collections::HashMap;

/// What one of oneshot's requests was, so its response is read right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Initialize,
    NewSession,
    Prompt,
}

/// The driver of one ACP agent run.
#[derive(Debug)]
pub struct AcpDriver {
    setup: DriverSetup,
    prompt: String,
    /// oneshot's requests and what each asked.
    rpc: Rpc<Asked>,
    session: Option<String>,
    /// Permission requests waiting for the policy: our request id → (the agent's id, options).
    asks: HashMap<String, (Value, Vec<Value>)>,
    /// The message text chunks are going to, by its number; a tool call ends it.
    message: u32,
    in_message: bool,
    /// The text of the latest message: the answer when the turn ends.
    last_text: String,
    done: bool,
}

impl AcpDriver {
    /// A driver for one run set up by `setup`.
    pub fn new(setup: DriverSetup) -> AcpDriver {
        AcpDriver {
            setup,
            prompt: String::new(),
            rpc: Rpc::new(Some("2.0")),
            session: None,
            asks: HashMap::new(),
            message: 0,
            in_message: false,
            last_text: String::new(),
            done: false,
        }
    }

    fn response(
        &mut self,
        asked: Asked,
        v: &Value,
        events: &mut Vec<AgentEvent>,
        out: &mut Vec<Reply>,
    ) {
        if let Some(e) = v.get("error") {
            return self.fail(e, events);
        }
        let r = &v["result"];
        match asked {
            Asked::Initialize => {
                if r["protocolVersion"].as_u64() != Some(1) {
                    let message = format!(
                        "the agent speaks ACP version {}, oneshot version 1",
                        r["protocolVersion"]
                    );
                    return self.fail(&json!({"message": message}), events);
                }
                let params = json!({"cwd": self.setup.cwd.display().to_string(), "mcpServers": []});
                out.push(self.rpc.request(Asked::NewSession, "session/new", params));
            }
            Asked::NewSession => {
                let Some(sid) = r["sessionId"].as_str() else {
                    let message = format!("no session id in the agent's answer: {r}");
                    return self.fail(&json!({"message": message}), events);
                };
                self.session = Some(sid.to_string());
                events.push(AgentEvent::SessionStarted {
                    session_id: sid.to_string(),
                    model: r["models"]["currentModelId"].as_str().map(str::to_string),
                    tools: Vec::new(),
                    cwd: Some(self.setup.cwd.display().to_string()),
                    version: None,
                    transcript: None,
                });
                let prompt = std::mem::take(&mut self.prompt);
                let params =
                    json!({"sessionId": sid, "prompt": [{"type": "text", "text": prompt}]});
                out.push(self.rpc.request(Asked::Prompt, "session/prompt", params));
            }
            Asked::Prompt => {
                let tokens = &r["_meta"]["quota"]["token_count"];
                if tokens.is_object() {
                    events.push(AgentEvent::Usage {
                        input_tokens: tokens["input_tokens"].as_u64(),
                        output_tokens: tokens["output_tokens"].as_u64(),
                        cached_input_tokens: None,
                        cost_usd: None,
                        turns: Some(self.message.max(1)),
                    });
                }
                let stop = r["stopReason"].as_str().unwrap_or_default();
                if stop == "refusal" {
                    events.push(AgentEvent::Error {
                        kind: ErrorKind::Other,
                        status: None,
                        message: "the model refused".into(),
                    });
                }
                self.finish(
                    matches!(stop, "end_turn" | "max_tokens" | "max_turn_requests"),
                    events,
                );
            }
        }
    }

    /// An error answer: the provider's status (Gemini puts it in the code) and its words (the
    /// provider's error body, whose own `error.message` is the part worth reading).
    fn fail(&mut self, e: &Value, events: &mut Vec<AgentEvent>) {
        let raw = e["message"].as_str().unwrap_or("the agent failed");
        let inner = serde_json::from_str::<Value>(raw).ok();
        let message = inner
            .as_ref()
            .and_then(|v| v["error"]["message"].as_str())
            .unwrap_or(raw);
        let message = match e["data"]["details"].as_str() {
            Some(d) => format!("{message}: {d}"),
            None => message.to_string(),
        };
        let status = e["code"]
            .as_u64()
            .filter(|c| (100..=599).contains(c))
            .and_then(|c| u16::try_from(c).ok())
            .or_else(|| status_in(&message));
        let kind = match status {
            Some(s) => ErrorKind::from_status(s),
            None => ErrorKind::from_text(&message),
        };
        events.push(AgentEvent::Error {
            kind,
            status,
            message,
        });
        self.finish(false, events);
    }

    fn finish(&mut self, success: bool, events: &mut Vec<AgentEvent>) {
        if self.done {
            return;
        }
        self.done = true;
        let text = std::mem::take(&mut self.last_text);
        let text = (!text.is_empty()).then_some(text);
        events.push(AgentEvent::Final {
            success,
            structured_output: text.as_deref().and_then(json_answer),
            text,
            permission_denials: Vec::new(),
        });
    }

    fn update(&mut self, u: &Value, raw: &[u8], events: &mut Vec<AgentEvent>) {
        let Some(kind) = tag::<SessionUpdate>(&u["sessionUpdate"]) else {
            return events.push(unknown(raw));
        };
        match kind {
            SessionUpdate::AgentMessageChunk | SessionUpdate::AgentThoughtChunk => {
                let text = u["content"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                if !self.in_message {
                    self.in_message = true;
                    self.message += 1;
                    if kind == SessionUpdate::AgentMessageChunk {
                        self.last_text.clear();
                    }
                }
                let message_id = Some(format!("m{}", self.message));
                if kind == SessionUpdate::AgentMessageChunk {
                    self.last_text.push_str(&text);
                    events.push(AgentEvent::AssistantText {
                        message_id,
                        index: 0,
                        text,
                        partial: true,
                    });
                } else {
                    events.push(AgentEvent::Reasoning {
                        message_id,
                        index: 1,
                        text,
                        partial: true,
                    });
                }
            }
            SessionUpdate::UserMessageChunk => events.push(AgentEvent::UserMessage {
                text: u["content"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            }),
            SessionUpdate::ToolCall => {
                self.in_message = false;
                events.push(AgentEvent::ToolCall {
                    id: u["toolCallId"].as_str().unwrap_or_default().to_string(),
                    name: tool_name(u),
                    input: tool_input(u),
                    message_id: None,
                });
            }
            SessionUpdate::ToolCallUpdate => {
                self.in_message = false;
                let status = u["status"].as_str().unwrap_or_default();
                if matches!(status, "completed" | "failed") {
                    events.push(AgentEvent::ToolResult {
                        tool_call_id: u["toolCallId"].as_str().unwrap_or_default().to_string(),
                        content: tool_output(&u["content"]),
                        is_error: status == "failed",
                    });
                }
            }
            SessionUpdate::Quiet => {}
            SessionUpdate::Other => events.push(unknown(raw)),
        }
    }
}

impl Driver for AcpDriver {
    fn open(&mut self, prompt: &str, out: &mut Vec<Reply>) {
        self.prompt = prompt.to_string();
        let params = json!({
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
        });
        out.push(self.rpc.request(Asked::Initialize, "initialize", params));
    }

    fn feed(&mut self, raw: &[u8], events: &mut Vec<AgentEvent>, out: &mut Vec<Reply>) {
        let Some(incoming) = self.rpc.read(raw, events) else {
            return;
        };
        let raw = raw.trim_ascii();
        match incoming {
            Incoming::Request { id, method, params } if method == "session/request_permission" => {
                let call = &params["toolCall"];
                let request_id = id.to_string();
                let options = params["options"].as_array().cloned().unwrap_or_default();
                self.asks.insert(request_id.clone(), (id.clone(), options));
                events.push(AgentEvent::PermissionRequest {
                    request_id,
                    tool: tool_name(call),
                    input: tool_input(call),
                    tool_call_id: call["toolCallId"].as_str().map(str::to_string),
                });
            }
            Incoming::Request { id, method, .. } => {
                // A file system or terminal request: oneshot offered neither.
                events.push(AgentEvent::Warning {
                    message: format!("the agent asked `{method}`, which oneshot does not offer"),
                });
                let message = format!("oneshot does not offer {method}");
                out.push(self.rpc.refuse(&id, METHOD_NOT_FOUND, message));
            }
            Incoming::Notification { method, params } if method == "session/update" => {
                self.update(&params["update"], raw, events)
            }
            Incoming::Notification { .. } => events.push(unknown(raw)),
            Incoming::Response { asked, message } => self.response(asked, &message, events, out),
        }
    }

    fn permit(
        &mut self,
        request_id: &str,
        allow: bool,
        _reason: Option<&str>,
        _input: &Value,
    ) -> Option<Reply> {
        // ACP's answer is one of the agent's options; none carries a message for the model.
        let (id, options) = self.asks.remove(request_id)?;
        let want = if allow { "allow_once" } else { "reject_once" };
        let pick = options
            .iter()
            .find(|o| o["kind"] == want)
            .or_else(|| {
                options.iter().find(|o| {
                    o["kind"]
                        .as_str()
                        .is_some_and(|k| k.starts_with(if allow { "allow" } else { "reject" }))
                })
            })
            .and_then(|o| o["optionId"].as_str());
        let outcome = match pick {
            Some(option) => json!({"outcome": "selected", "optionId": option}),
            // No option says no: the request is withdrawn, which no agent runs a tool on.
            None => json!({"outcome": "cancelled"}),
        };
        Some(self.rpc.reply(&id, json!({"outcome": outcome})))
    }

    fn interrupt(&mut self) -> Option<Reply> {
        let sid = self.session.clone()?;
        Some(
            self.rpc
                .notify("session/cancel", Some(json!({"sessionId": sid}))),
        )
    }
}

/// The tool's name as the agent knows it: Gemini prefixes its call ids with it
/// (`run_shell_command__…`), so a policy written for `gemini -p` reads the same names; else the
/// ACP kind (`execute`, `edit`, `read`, …).
fn tool_name(call: &Value) -> String {
    let id = call["toolCallId"].as_str().unwrap_or_default();
    match id.split_once("__") {
        Some((name, _)) if !name.is_empty() => name.to_string(),
        _ => call["kind"].as_str().unwrap_or("other").to_string(),
    }
}

/// What the tool is asked to do: its title (the command line for a shell), its kind, what it
/// touches and its proposed content (a diff for an edit).
fn tool_input(call: &Value) -> Value {
    let mut input = json!({});
    for k in ["title", "kind", "locations", "content", "rawInput"] {
        if let Some(v) = call.get(k).filter(|v| !v.is_null()) {
            input[k] = v.clone();
        }
    }
    input
}

/// A tool's output: its content blocks' text, or the diffs it made.
fn tool_output(content: &Value) -> String {
    let Some(blocks) = content.as_array() else {
        return value_text(content);
    };
    blocks
        .iter()
        .map(|b| match b["type"].as_str() {
            Some("content") => value_text(&b["content"]["text"]),
            Some("diff") => format!("diff {}", b["path"].as_str().unwrap_or_default()),
            _ => value_text(b),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;
