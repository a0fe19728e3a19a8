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
//!
//! ACP has no queue and no steer: a second `session/prompt` cancels the running one
//! (../shared/agents/turns.md §4). So a message said to the running agent ([`Say`]) is held
//! by the driver and sent as the next prompt when the running one returns (several held
//! messages go as one prompt); with `now` the running prompt is cancelled (`session/cancel`)
//! and the message goes at once, after an account of the cancelled turn — the agent drops a
//! cancelled turn from the model's history. A cancelled prompt's turn ends interrupted and
//! its streamed messages are discarded.

use crate::agent::driver::{Driver, DriverSetup, Reply};
use crate::agent::jsonrpc::{Incoming, METHOD_NOT_FOUND, Rpc};
use crate::agent::line::{json_answer, status_in, tag, unknown, value_text};
use prompts::{Prompt, Prompts};
use wire::SessionUpdate;

mod gemini;
mod prompts;
mod wire;

pub(crate) use gemini::GEMINI;

/// The ACP driver for one run (the registry's `Protocol::Acp`).
pub(crate) fn driver(setup: DriverSetup) -> Box<dyn Driver> {
    Box::new(AcpDriver::new(setup))
}
use crate::agent::{AgentEvent, Delivery, ErrorKind, Say};
use serde_json::{Value, json};
use std::collections::HashMap;

/// What one of oneshot's requests was, so its response is read right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Initialize,
    NewSession,
    /// `session/prompt` number n ([`Prompts`]).
    Prompt(u64),
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
    /// The current message has had no text chunk yet (its first one starts the answer anew).
    fresh_text: bool,
    /// The prompts written and not yet seen through.
    prompts: Prompts,
    /// Messages said while a prompt runs (or before the session exists), for the next prompt.
    held: Vec<Say>,
    /// Events of a prompt written by [`Driver::say`], which has no events to add to: told
    /// before the next line's.
    pending: Vec<AgentEvent>,
    /// The handshake failed and the run's end was told.
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
            fresh_text: false,
            prompts: Prompts::default(),
            held: Vec::new(),
            pending: Vec::new(),
            done: false,
        }
    }

    fn response(
        &mut self,
        asked: Asked,
        v: Value,
        events: &mut Vec<AgentEvent>,
        out: &mut Vec<Reply>,
    ) {
        if let Asked::Prompt(n) = asked {
            // Told in order, once every earlier prompt's end has been.
            if self.prompts.answer(n, v) {
                self.settle(events, out);
            }
            return;
        }
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
                // Messages said during the handshake go with the prompt.
                let mut text = std::mem::take(&mut self.prompt);
                let held = std::mem::take(&mut self.held);
                for m in &held {
                    text.push_str("\n\n");
                    text.push_str(&m.text);
                }
                let carries = held.into_iter().map(|m| m.id).collect();
                if let Some(line) = self.write_prompt(text, carries) {
                    out.push(line);
                }
                self.settle(events, out);
            }
            Asked::Prompt(_) => {}
        }
    }

    /// `session/prompt` with `text`, carrying messages `carries`; `None` before the session.
    fn write_prompt(&mut self, text: String, carries: Vec<String>) -> Option<Reply> {
        let sid = self.session.clone()?;
        let params = json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
        let n = self.prompts.push(Prompt {
            text,
            carries,
            ..Prompt::default()
        });
        // What streams from now on is this prompt's.
        self.in_message = false;
        Some(self.rpc.request(Asked::Prompt(n), "session/prompt", params))
    }

    /// Tells what the prompts' answers allow, in order: the oldest prompt's turn starts (its
    /// messages taken in), ends once answered, and the next one's starts; with none left,
    /// the messages held for the agent go as one prompt.
    fn settle(&mut self, events: &mut Vec<AgentEvent>, out: &mut Vec<Reply>) {
        loop {
            if let Some(oldest) = self.prompts.oldest()
                && !oldest.started
            {
                oldest.started = true;
                started(oldest, events);
            }
            if let Some(done) = self.prompts.pop_done() {
                self.end(done, events);
                continue;
            }
            if self.prompts.is_empty() && !self.held.is_empty() && self.session.is_some() {
                let held = std::mem::take(&mut self.held);
                let text = held
                    .iter()
                    .map(|m| m.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n\n");
                let carries = held.into_iter().map(|m| m.id).collect();
                if let Some(line) = self.write_prompt(text, carries) {
                    out.push(line);
                }
                continue;
            }
            return;
        }
    }

    /// Prompt `p`'s turn ended with the agent's answer: its usage, how it ended, its result.
    fn end(&mut self, p: Prompt, events: &mut Vec<AgentEvent>) {
        let v = p.answer.unwrap_or_default();
        if let Some(e) = v.get("error") {
            events.push(error_event(e));
            return final_result(false, None, events);
        }
        let r = &v["result"];
        let tokens = &r["_meta"]["quota"]["token_count"];
        if tokens.is_object() {
            events.push(AgentEvent::Usage {
                input_tokens: tokens["input_tokens"].as_u64(),
                output_tokens: tokens["output_tokens"].as_u64(),
                cached_input_tokens: None,
                cost_usd: None,
                turns: Some(u32::try_from(p.messages.len()).unwrap_or(u32::MAX).max(1)),
            });
        }
        let stop = r["stopReason"].as_str().unwrap_or_default();
        if stop == "cancelled" {
            // The agent drops a cancelled turn from the model's history: what it streamed
            // was never said. Interrupted, not failed.
            for message_id in p.messages {
                events.push(AgentEvent::MessageDiscarded {
                    message_id,
                    reason: "cancelled".into(),
                });
            }
            events.push(AgentEvent::TurnInfo {
                autonomous: false,
                interrupted: true,
            });
            return final_result(true, None, events);
        }
        if stop == "refusal" {
            events.push(AgentEvent::Error {
                kind: ErrorKind::Other,
                status: None,
                message: "the model refused".into(),
            });
        }
        let text = (!p.last_text.is_empty()).then_some(p.last_text);
        final_result(
            matches!(stop, "end_turn" | "max_tokens" | "max_turn_requests"),
            text,
            events,
        );
    }

    /// The handshake failed: an error, and the run's end (once).
    fn fail(&mut self, e: &Value, events: &mut Vec<AgentEvent>) {
        if self.done {
            return;
        }
        self.done = true;
        events.push(error_event(e));
        final_result(false, None, events);
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
                let message_id = Some(format!("m{}", self.message + u32::from(!self.in_message)));
                if !self.in_message {
                    self.in_message = true;
                    self.fresh_text = true;
                    self.message += 1;
                    if let (Some(p), Some(id)) = (self.prompts.latest(), &message_id) {
                        p.messages.push(id.clone());
                    }
                }
                if kind == SessionUpdate::AgentMessageChunk {
                    if let Some(p) = self.prompts.latest() {
                        if std::mem::take(&mut self.fresh_text) {
                            p.last_text.clear();
                        }
                        p.say(&text);
                    }
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
                if let Some(p) = self.prompts.latest() {
                    p.tool(u["title"].as_str().unwrap_or("a tool").to_string());
                }
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
        events.append(&mut self.pending);
        let Some(incoming) = self.rpc.read(raw, events) else {
            return;
        };
        let raw = raw.trim_ascii();
        match incoming {
            Incoming::Request { id, method, params } if method == "session/request_permission" => {
                let call = &params["toolCall"];
                if let Some(p) = self.prompts.latest() {
                    p.tool(call["title"].as_str().unwrap_or("a tool").to_string());
                }
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
            Incoming::Response { asked, message } => self.response(asked, message, events, out),
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

    /// No prompt runs: the message is the next prompt, now. One runs: held until it returns
    /// — or, `now`, the running prompt is cancelled and the message (with the held ones)
    /// goes at once after an account of the cancelled turn. Before the session exists: held
    /// for the first prompt.
    fn say(&mut self, message: &Say, out: &mut Vec<Reply>) -> Delivery {
        let running = !self.prompts.is_empty();
        if self.session.is_none() || (running && !message.now) {
            self.held.push(message.clone());
            return Delivery::Held;
        }
        let mut held = std::mem::take(&mut self.held);
        held.push(message.clone());
        let mut text = held
            .iter()
            .map(|m| m.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        if running {
            if let Some(cancelled) = self.prompts.latest() {
                text = cancelled.account_before(&text);
            }
            out.extend(self.interrupt());
        }
        let carries = held.into_iter().map(|m| m.id).collect();
        out.extend(self.write_prompt(text, carries));
        if !running {
            // The only prompt: its turn starts now, told with the agent's next line.
            if let Some(p) = self.prompts.oldest() {
                p.started = true;
                started(p, &mut self.pending);
            }
        }
        Delivery::Sent
    }

    /// A held message is dropped before any prompt carries it; one written is the agent's.
    fn withdraw(&mut self, id: &str, _out: &mut Vec<Reply>) -> bool {
        let before = self.held.len();
        self.held.retain(|m| m.id != id);
        self.held.len() < before
    }
}

/// Prompt `p`'s turn starts: the messages it carries are taken in.
fn started(p: &Prompt, events: &mut Vec<AgentEvent>) {
    events.push(AgentEvent::TurnStarted);
    events.extend(p.carries.iter().map(|id| AgentEvent::MessageTaken {
        message_id: id.clone(),
    }));
}

/// A prompt's final result.
fn final_result(success: bool, text: Option<String>, events: &mut Vec<AgentEvent>) {
    events.push(AgentEvent::Final {
        success,
        structured_output: text.as_deref().and_then(json_answer),
        text,
        permission_denials: Vec::new(),
    });
}

/// An error answer: the provider's status (Gemini puts it in the code) and its words (the
/// provider's error body, whose own `error.message` is the part worth reading).
fn error_event(e: &Value) -> AgentEvent {
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
    AgentEvent::Error {
        kind,
        status,
        message,
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
mod say_tests;
#[cfg(test)]
mod tests;
