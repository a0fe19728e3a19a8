//! Codex's `app-server`: JSON-RPC over stdio (Codex omits `"jsonrpc"`; it accepts it). The
//! conversation, checked against Codex 0.169 (`tests/agents/protocols.rs`):
//!
//! 1. `initialize` → result; then the `initialized` notification and `thread/start` (or
//!    `thread/resume` to continue the worker's own earlier thread) with the workdir, model,
//!    sandbox and `approvalPolicy: "untrusted"` — so every command that is not known-safe is
//!    asked about, and oneshot's `permit` answers;
//! 2. the thread's result names its id and transcript (`thread.path`); `turn/start` carries the
//!    prompt;
//! 3. notifications stream the turn (`item/started`, `item/agentMessage/delta`,
//!    `item/completed`, `thread/tokenUsage/updated`, `error` with `willRetry`) and requests ask
//!    for approval (`item/commandExecution/requestApproval`, `item/fileChange/requestApproval`);
//! 4. `turn/completed` ends it (`completed`, `interrupted` or `failed` with the error); Codex
//!    exits when its stdin closes. `turn/interrupt` stops a turn.
//!
//! A message said to the running agent ([`Say`]) joins the active turn with `turn/steer`
//! (`expectedTurnId` names it); when no turn is active — or the turn just ended, which Codex
//! answers `-32600` — it starts one with `turn/start`. The request's answer is the
//! [`AgentEvent::MessageTaken`]. A steer drops the sampling in flight: an `agentMessage` that
//! streamed but never got `item/completed` by `turn/completed` is
//! [`AgentEvent::MessageDiscarded`] (../shared/agents/turns.md §3).

use super::app_wire::Notice;
use crate::agent::ErrorKind;
use crate::agent::driver::{Driver, DriverSetup, Reply};
use crate::agent::jsonrpc::{Incoming, METHOD_NOT_FOUND, Rpc};
use crate::agent::line::{json_answer, status_in, tag_str, unknown};
use crate::agent::{AgentEvent, Delivery, Say};
use crate::process::Role;
use serde_json::{Value, json};
use std::collections::HashMap;

/// What one of oneshot's requests was, so its response is read right.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Asked {
    Initialize,
    /// `thread/start`, or `thread/resume` when `true`.
    Thread(bool),
    /// `turn/start`, carrying the messages with these ids (none: the prompt alone).
    Turn(Vec<String>),
    /// `turn/steer` carrying message `id` with `text` (sent again by `turn/start` if Codex
    /// has no active turn to steer).
    Steer {
        id: String,
        text: String,
    },
    Interrupt,
}

/// JSON-RPC's "Invalid request": what Codex answers a steer when no turn is active, or when
/// `expectedTurnId` is not the active one.
const INVALID_REQUEST: i64 = -32600;

/// The driver of one `codex app-server` run.
#[derive(Debug)]
pub struct CodexAppDriver {
    setup: DriverSetup,
    prompt: String,
    /// oneshot's requests and what each asked (Codex's lines name no `jsonrpc` version).
    rpc: Rpc<Asked>,
    thread: Option<String>,
    /// The active turn (from `turn/start`'s answer or `turn/started`), until `turn/completed`.
    turn: Option<String>,
    /// The turn a [`AgentEvent::TurnStarted`] was last emitted for: the answer to our
    /// `turn/start` and Codex's `turn/started` name the same turn, and it starts once.
    announced: Option<String>,
    /// Messages said before the thread existed: they go with the prompt.
    held: Vec<Say>,
    /// `agentMessage` items that streamed (`item/started`, deltas) and are not completed yet:
    /// those left at `turn/completed` were dropped by a steer or an interrupt.
    streaming: Vec<String>,
    /// Approval requests waiting for the policy: our request id → the id Codex gave.
    approvals: HashMap<String, Value>,
    /// Tool items whose call was emitted, with their input (a file change's approval request
    /// does not repeat the changes).
    tools: HashMap<String, Value>,
    last_message: Option<String>,
    failed: bool,
}

impl CodexAppDriver {
    /// A driver for one run set up by `setup`.
    pub fn new(setup: DriverSetup) -> CodexAppDriver {
        CodexAppDriver {
            setup,
            prompt: String::new(),
            rpc: Rpc::new(None),
            thread: None,
            turn: None,
            announced: None,
            held: Vec::new(),
            streaming: Vec::new(),
            approvals: HashMap::new(),
            tools: HashMap::new(),
            last_message: None,
            failed: false,
        }
    }

    /// The thread's settings: where, which model, how much the agent may do on its own.
    fn thread_params(&self) -> Value {
        let sandbox = match self.setup.role {
            Role::Worker => "workspace-write",
            Role::Auditor => "read-only",
        };
        let mut p = json!({
            "cwd": self.setup.cwd.display().to_string(),
            "sandbox": sandbox,
            "approvalPolicy": "untrusted",
        });
        if let Some(m) = &self.setup.model {
            p["model"] = json!(m);
        }
        p
    }

    fn start_thread(&mut self, out: &mut Vec<Reply>) {
        let mut params = self.thread_params();
        match self.setup.resume.take() {
            Some(id) => {
                params["threadId"] = json!(id);
                out.push(
                    self.rpc
                        .request(Asked::Thread(true), "thread/resume", params),
                );
            }
            None => out.push(
                self.rpc
                    .request(Asked::Thread(false), "thread/start", params),
            ),
        }
    }

    fn response(
        &mut self,
        asked: Asked,
        v: &Value,
        events: &mut Vec<AgentEvent>,
        out: &mut Vec<Reply>,
    ) {
        let result = v.get("result");
        match (asked, result) {
            (Asked::Initialize, Some(_)) => {
                out.push(self.rpc.notify("initialized", None));
                self.start_thread(out);
            }
            (Asked::Thread(_), Some(r)) => {
                let thread = &r["thread"];
                let Some(id) = thread["id"].as_str() else {
                    return self.fail(format!("codex app-server: no thread id in {r}"), events);
                };
                self.thread = Some(id.to_string());
                events.push(AgentEvent::SessionStarted {
                    session_id: id.to_string(),
                    model: r["model"].as_str().map(str::to_string),
                    tools: Vec::new(),
                    cwd: thread["cwd"].as_str().map(str::to_string),
                    version: thread["cliVersion"].as_str().map(str::to_string),
                    transcript: thread["path"].as_str().map(str::to_string),
                });
                // Messages said during the handshake go with the prompt, each its own input.
                let held = std::mem::take(&mut self.held);
                let mut input =
                    vec![json!({"type": "text", "text": std::mem::take(&mut self.prompt)})];
                input.extend(held.iter().map(|m| json!({"type": "text", "text": m.text})));
                let ids = held.into_iter().map(|m| m.id).collect();
                let params = json!({"threadId": id, "input": input});
                out.push(self.rpc.request(Asked::Turn(ids), "turn/start", params));
            }
            (Asked::Thread(true), None) => {
                // The thread is gone (another CODEX_HOME, pruned): a fresh one rather than
                // no run at all; the critique in the prompt still carries what matters.
                events.push(AgentEvent::Warning {
                    message: format!(
                        "codex could not resume its earlier thread ({}); a new thread starts",
                        rpc_error(v)
                    ),
                });
                self.start_thread(out);
            }
            (Asked::Turn(ids), Some(r)) => {
                // Our turn starts (or our input joined the active one) before its messages
                // are taken in: a turn's owner is whoever's message it carries.
                if let Some(turn) = r["turn"]["id"].as_str() {
                    self.started(turn, events);
                }
                taken(ids, events);
            }
            (Asked::Steer { id, .. }, Some(_)) => taken(vec![id], events),
            (Asked::Steer { id, text }, None)
                if v["error"]["code"].as_i64() == Some(INVALID_REQUEST) =>
            {
                // No turn to steer (it just ended) or another one than we knew: `turn/start`
                // starts one, or joins the active one.
                self.start_turn(
                    vec![Say {
                        id,
                        text,
                        now: false,
                    }],
                    out,
                );
            }
            (Asked::Steer { id, .. }, None) => refused(&id, v, events),
            (Asked::Turn(ids), None) if !ids.is_empty() && self.announced.is_some() => {
                // A message's turn refused after the prompt's turn ran: the run goes on.
                for id in ids {
                    refused(&id, v, events);
                }
            }
            (Asked::Interrupt, _) => {}
            (_, None) => self.fail(rpc_error(v), events),
        }
    }

    /// Turn `id` is active: announced once.
    fn started(&mut self, id: &str, events: &mut Vec<AgentEvent>) {
        self.turn = Some(id.to_string());
        if self.announced.as_deref() != Some(id) {
            self.announced = Some(id.to_string());
            events.push(AgentEvent::TurnStarted);
        }
    }

    /// `turn/start` carrying `messages` on the thread (known).
    fn start_turn(&mut self, messages: Vec<Say>, out: &mut Vec<Reply>) {
        let Some(thread) = &self.thread else { return };
        let input: Vec<Value> = messages
            .iter()
            .map(|m| json!({"type": "text", "text": m.text}))
            .collect();
        let params = json!({"threadId": thread, "input": input});
        let ids = messages.into_iter().map(|m| m.id).collect();
        out.push(self.rpc.request(Asked::Turn(ids), "turn/start", params));
    }

    /// The run cannot go on: an error, then a failed final result (oneshot closes the agent's
    /// stdin on it, and Codex exits).
    fn fail(&mut self, message: String, events: &mut Vec<AgentEvent>) {
        events.push(error_event(&message, None));
        self.finish(false, events);
    }

    fn finish(&mut self, success: bool, events: &mut Vec<AgentEvent>) {
        let text = self.last_message.take();
        events.push(AgentEvent::Final {
            success,
            structured_output: text.as_deref().and_then(json_answer),
            text,
            permission_denials: Vec::new(),
        });
    }

    fn notification(&mut self, method: &str, p: &Value, raw: &[u8], events: &mut Vec<AgentEvent>) {
        let Some(notice) = tag_str::<Notice>(method) else {
            return events.push(unknown(raw));
        };
        match notice {
            Notice::TurnStarted => match p["turn"]["id"].as_str() {
                Some(turn) => self.started(turn, events),
                None => events.push(AgentEvent::TurnStarted),
            },
            Notice::ItemStarted | Notice::ItemCompleted => {
                self.item(&p["item"], notice == Notice::ItemCompleted, raw, events)
            }
            Notice::AgentMessageDelta => {
                let id = p["itemId"].as_str();
                if let Some(id) = id {
                    self.streams(id);
                }
                events.push(AgentEvent::AssistantText {
                    message_id: id.map(str::to_string),
                    index: 0,
                    text: p["delta"].as_str().unwrap_or_default().to_string(),
                    partial: true,
                });
            }
            Notice::ReasoningDelta => events.push(AgentEvent::Reasoning {
                message_id: p["itemId"].as_str().map(str::to_string),
                index: 0,
                text: p["delta"].as_str().unwrap_or_default().to_string(),
                partial: true,
            }),
            Notice::TokenUsage => {
                // `last` is the model call just made; the run's usage is their sum (`total`
                // also counts the thread's earlier turns).
                // Reported as it happens, so a budget can stop a run that is still going.
                let last = &p["tokenUsage"]["last"];
                let n = |k: &str| last[k].as_u64().unwrap_or(0);
                let cached = n("cachedInputTokens");
                events.push(AgentEvent::Usage {
                    input_tokens: Some(n("inputTokens").saturating_sub(cached)),
                    output_tokens: Some(n("outputTokens")),
                    cached_input_tokens: Some(cached),
                    cost_usd: None,
                    turns: Some(1),
                });
            }
            Notice::Error => {
                let e = &p["error"];
                let status = http_status(e);
                let mut message = e["message"].as_str().unwrap_or("error").to_string();
                if let Some(d) = e["additionalDetails"].as_str().filter(|d| !d.is_empty()) {
                    message = format!("{message}: {d}");
                }
                if p["willRetry"].as_bool() == Some(true) {
                    events.push(AgentEvent::RetryNotice {
                        attempt: None,
                        max_attempts: None,
                        delay_ms: None,
                        kind: Some(kind(status, &message)),
                        status,
                        message: Some(message),
                    });
                } else {
                    self.failed = true;
                    events.push(error_event(&message, status));
                }
            }
            Notice::TurnCompleted => {
                let turn = &p["turn"];
                let status = turn["status"].as_str().unwrap_or_default();
                if status == "failed" && !self.failed {
                    let e = &turn["error"];
                    let message = e["message"].as_str().unwrap_or("the turn failed");
                    events.push(error_event(message, http_status(e)));
                }
                // Only `item/completed` is final: what streamed without it was dropped.
                let reason = match status {
                    "interrupted" => "interrupted",
                    "failed" => "failed",
                    _ => "steered",
                };
                for message_id in self.streaming.drain(..) {
                    events.push(AgentEvent::MessageDiscarded {
                        message_id,
                        reason: reason.to_string(),
                    });
                }
                self.failed = false;
                self.turn = None;
                self.finish(status == "completed", events);
            }
            Notice::Warning => events.push(AgentEvent::Warning {
                message: p["summary"]
                    .as_str()
                    .or(p["message"].as_str())
                    .unwrap_or_default()
                    .to_string(),
            }),
            Notice::Quiet => {}
            Notice::Other => events.push(unknown(raw)),
        }
    }

    fn server_request(
        &mut self,
        id: &Value,
        method: &str,
        p: &Value,
        events: &mut Vec<AgentEvent>,
        out: &mut Vec<Reply>,
    ) {
        let tool = match method {
            "item/commandExecution/requestApproval" => "command_execution",
            "item/fileChange/requestApproval" => "file_change",
            _ => {
                events.push(AgentEvent::Warning {
                    message: format!("codex asked `{method}`, which oneshot does not answer"),
                });
                let message = format!("oneshot does not answer {method}");
                return out.push(self.rpc.refuse(id, METHOD_NOT_FOUND, message));
            }
        };
        let item = p["itemId"].as_str().unwrap_or_default();
        let mut input = self.tools.get(item).cloned().unwrap_or_else(|| json!({}));
        if let Some(c) = p.get("command").filter(|c| !c.is_null()) {
            input["command"] = c.clone();
        }
        for k in ["cwd", "reason", "grantRoot"] {
            if let Some(v) = p.get(k).filter(|v| !v.is_null()) {
                input[k] = v.clone();
            }
        }
        let request_id = id.to_string();
        self.approvals.insert(request_id.clone(), id.clone());
        events.push(AgentEvent::PermissionRequest {
            request_id,
            tool: tool.to_string(),
            input,
            tool_call_id: (!item.is_empty()).then(|| item.to_string()),
        });
    }
}

impl Driver for CodexAppDriver {
    fn open(&mut self, prompt: &str, out: &mut Vec<Reply>) {
        self.prompt = prompt.to_string();
        let info = json!({"clientInfo": {"name": "oneshot", "version": env!("CARGO_PKG_VERSION")}});
        out.push(self.rpc.request(Asked::Initialize, "initialize", info));
    }

    fn feed(&mut self, raw: &[u8], events: &mut Vec<AgentEvent>, out: &mut Vec<Reply>) {
        let Some(incoming) = self.rpc.read(raw, events) else {
            return;
        };
        let raw = raw.trim_ascii();
        match incoming {
            Incoming::Request { id, method, params } => {
                self.server_request(&id, &method, &params, events, out)
            }
            Incoming::Notification { method, params } => {
                self.notification(&method, &params, raw, events)
            }
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
        // Codex's decline carries no message: the model learns the command was declined.
        let id = self.approvals.remove(request_id)?;
        let decision = if allow { "accept" } else { "decline" };
        Some(self.rpc.reply(&id, json!({"decision": decision})))
    }

    fn interrupt(&mut self) -> Option<Reply> {
        let (thread, turn) = (self.thread.clone()?, self.turn.clone()?);
        Some(self.rpc.request(
            Asked::Interrupt,
            "turn/interrupt",
            json!({"threadId": thread, "turnId": turn}),
        ))
    }

    /// `turn/steer` into the active turn, else `turn/start`; before the thread exists, kept
    /// for the prompt's turn. `now` changes nothing: a steer already drops the sampling in
    /// flight and the model reads the message at once.
    fn say(&mut self, message: &Say, out: &mut Vec<Reply>) -> Delivery {
        let Some(thread) = &self.thread else {
            self.held.push(message.clone());
            return Delivery::Held;
        };
        match &self.turn {
            Some(turn) => {
                let params = json!({
                    "threadId": thread,
                    "expectedTurnId": turn,
                    "input": [{"type": "text", "text": message.text}],
                });
                let asked = Asked::Steer {
                    id: message.id.clone(),
                    text: message.text.clone(),
                };
                out.push(self.rpc.request(asked, "turn/steer", params));
            }
            None => self.start_turn(vec![message.clone()], out),
        }
        Delivery::Sent
    }

    /// A message still held for the prompt's turn is dropped; one written is Codex's.
    fn withdraw(&mut self, id: &str, _out: &mut Vec<Reply>) -> bool {
        let before = self.held.len();
        self.held.retain(|m| m.id != id);
        self.held.len() < before
    }
}

/// Messages `ids` were taken in.
fn taken(ids: Vec<String>, events: &mut Vec<AgentEvent>) {
    events.extend(
        ids.into_iter()
            .map(|message_id| AgentEvent::MessageTaken { message_id }),
    );
}

/// Codex refused the request carrying message `id`: the run goes on without it, and the
/// next worker prompt carries it.
fn refused(id: &str, v: &Value, events: &mut Vec<AgentEvent>) {
    events.push(AgentEvent::MessageRefused {
        message_id: id.to_string(),
        reason: rpc_error(v),
    });
}

/// A JSON-RPC error response's words.
fn rpc_error(v: &Value) -> String {
    let e = &v["error"];
    match e["message"].as_str() {
        Some(m) => format!("codex app-server: {m}"),
        None => format!("codex app-server answered {v}"),
    }
}

/// The HTTP status in a Codex error's `codexErrorInfo` (`{"httpConnectionFailed":
/// {"httpStatusCode": 401}}` and its siblings), else in its words.
fn http_status(e: &Value) -> Option<u16> {
    let from_info = e["codexErrorInfo"].as_object().and_then(|info| {
        info.values()
            .find_map(|v| v["httpStatusCode"].as_u64())
            .and_then(|s| u16::try_from(s).ok())
    });
    from_info.or_else(|| e["message"].as_str().and_then(status_in))
}

fn kind(status: Option<u16>, message: &str) -> ErrorKind {
    match status {
        Some(s) => ErrorKind::from_status(s),
        None => ErrorKind::from_text(message),
    }
}

fn error_event(message: &str, status: Option<u16>) -> AgentEvent {
    let status = status.or_else(|| status_in(message));
    AgentEvent::Error {
        kind: kind(status, message),
        status,
        message: message.to_string(),
    }
}

#[path = "app_items.rs"]
mod items;

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
