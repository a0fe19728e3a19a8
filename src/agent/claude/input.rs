//! What oneshot writes to Claude Code's stdin in stream-json input mode: the control protocol's
//! `initialize`, `interrupt`, `cancel_async_message` and `stop_task` requests, user turns (the
//! prompt, and messages said to the running agent), and answers to `can_use_tool`. Each is one
//! JSON line. [`ClaudeDriver`] puts them together with the stream's parser.

use super::ClaudeParser;
use crate::agent::driver::{Driver, Reply};
use crate::agent::{AgentEvent, Delivery, LineParser, Say};
use serde_json::{Value, json};

/// Claude Code in `--input-format stream-json` mode: the control handshake and the user turn
/// on open, `can_use_tool` answered with a `control_response`, an `interrupt` control request
/// to stop. Claude answers its own requests' ids; nothing in its stream needs an answer at once.
#[derive(Debug, Default)]
pub struct ClaudeDriver {
    parser: ClaudeParser,
    /// Messages said and not yet replayed, in the order sent.
    unreplayed: Vec<Unreplayed>,
    /// `init` lines seen: each begins a turn.
    turns_begun: u32,
    /// The current turn has produced model output.
    output: bool,
}

/// A message said and not yet replayed.
#[derive(Debug)]
struct Unreplayed {
    id: String,
    /// Turns begun (`init` lines read) when it was sent.
    turns_begun: u32,
    /// Sent with `"priority":"now"`.
    now: bool,
}

impl ClaudeDriver {
    /// A turn was cut short before any output: the messages it had dequeued are never
    /// replayed, yet the next request carries them (turns.md s5a) — those sent before the
    /// turn began and before the `now` message that cut it (which, and what follows it, the
    /// next turn replays) are taken in now.
    fn folded(&mut self) -> Vec<AgentEvent> {
        let cut_by = self
            .unreplayed
            .iter()
            .rposition(|m| m.now)
            .unwrap_or(self.unreplayed.len());
        let begun = self.turns_begun;
        let mut taken = Vec::new();
        let mut at = 0;
        self.unreplayed.retain(|m| {
            let fold = at < cut_by && m.turns_begun < begun;
            at += 1;
            if fold {
                taken.push(AgentEvent::MessageTaken {
                    message_id: m.id.clone(),
                });
            }
            !fold
        });
        taken
    }
}

impl Driver for ClaudeDriver {
    fn open(&mut self, prompt: &str, out: &mut Vec<Reply>) {
        out.push(initialize("oneshot-init"));
        out.push(user_turn(prompt));
    }

    fn feed(&mut self, line: &[u8], events: &mut Vec<AgentEvent>, _out: &mut Vec<Reply>) {
        let from = events.len();
        self.parser.feed(line, events);
        let mut at = from;
        while at < events.len() {
            match &events[at] {
                AgentEvent::SessionStarted { .. } => {
                    self.turns_begun += 1;
                    self.output = false;
                }
                AgentEvent::MessageStarted { .. }
                | AgentEvent::AssistantText { .. }
                | AgentEvent::Reasoning { .. }
                | AgentEvent::ToolCall { .. } => self.output = true,
                AgentEvent::MessageTaken { message_id } => {
                    self.unreplayed.retain(|m| m.id != *message_id);
                }
                AgentEvent::TurnInfo {
                    interrupted: true, ..
                } if !self.output => {
                    let taken = self.folded();
                    let n = events.len();
                    events.splice(at + 1..at + 1, taken);
                    at += events.len() - n;
                }
                _ => {}
            }
            at += 1;
        }
    }

    fn permit(
        &mut self,
        request_id: &str,
        allow: bool,
        reason: Option<&str>,
        input: &Value,
    ) -> Option<Reply> {
        Some(permission(request_id, allow, reason, input))
    }

    fn interrupt(&mut self) -> Option<Reply> {
        Some(interrupt("oneshot-interrupt"))
    }

    /// Claude takes a user line at any time: merged into the running turn at its next tool
    /// result, or queued for the next turn; `now` preempts. Its replay (`isReplay` with the
    /// same uuid) confirms it was taken in.
    fn say(&mut self, message: &Say, out: &mut Vec<Reply>) -> Delivery {
        out.push(said(&message.id, &message.text, message.now));
        self.unreplayed.push(Unreplayed {
            id: message.id.clone(),
            turns_begun: self.turns_begun,
            now: message.now,
        });
        Delivery::Sent
    }

    /// A message still queued is taken back (`cancel_async_message`); one already taken in
    /// stays (Claude answers `{"cancelled":false}`).
    fn withdraw(&mut self, id: &str, out: &mut Vec<Reply>) -> bool {
        self.unreplayed.retain(|m| m.id != id);
        out.push(cancel_message(&format!("oneshot-withdraw-{id}"), id));
        true
    }

    fn stop_task(&mut self, task_id: &str) -> Option<Reply> {
        Some(stop_task(&format!("oneshot-stop-{task_id}"), task_id))
    }
}

/// One JSON value as a line.
fn line(v: Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&v).expect("a JSON value serializes");
    bytes.push(b'\n');
    bytes
}

/// The control protocol's handshake: Claude answers with a `control_response`.
pub fn initialize(request_id: &str) -> Vec<u8> {
    line(json!({
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": "initialize"},
    }))
}

/// A user turn carrying `prompt`.
pub(crate) fn user_turn(prompt: &str) -> Vec<u8> {
    line(json!({
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": prompt}]},
        "parent_tool_use_id": null,
        "session_id": "default",
    }))
}

/// A message said to the running agent: a user line carrying its `uuid` (kept in Claude's
/// replay and transcript), with `"priority":"now"` to preempt the running turn.
pub fn said(id: &str, text: &str, now: bool) -> Vec<u8> {
    let mut v = json!({
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": text}]},
        "parent_tool_use_id": null,
        "session_id": "default",
        "uuid": id,
    });
    if now {
        v["priority"] = json!("now");
    }
    line(v)
}

/// Withdraws the queued message `uuid` before Claude takes it in; Claude answers
/// `{"cancelled":true}`, or `false` when it was taken in already (or never known).
pub fn cancel_message(request_id: &str, uuid: &str) -> Vec<u8> {
    line(json!({
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": "cancel_async_message", "message_uuid": uuid},
    }))
}

/// Stops background task `task_id` (`interrupt` does not): Claude kills it, reports it
/// `killed`, and no turn of its own follows.
pub fn stop_task(request_id: &str, task_id: &str) -> Vec<u8> {
    line(json!({
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": "stop_task", "task_id": task_id},
    }))
}

/// Stops the turn in progress (a running tool is killed by Claude); the turn ends with a
/// `result`.
pub fn interrupt(request_id: &str) -> Vec<u8> {
    line(json!({
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": "interrupt"},
    }))
}

/// The answer to a `can_use_tool` request: allow with the tool's input unchanged, or deny with
/// a message the model reads.
pub fn permission(request_id: &str, allow: bool, reason: Option<&str>, input: &Value) -> Vec<u8> {
    let response = if allow {
        json!({"behavior": "allow", "updatedInput": input})
    } else {
        json!({
            "behavior": "deny",
            "message": reason.unwrap_or("denied by the oneshot policy"),
        })
    };
    line(json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_single_json_objects() {
        for bytes in [
            initialize("i1"),
            user_turn("fix \"it\"\nnow"),
            interrupt("x"),
            said("u-1", "and \"this\"", true),
            cancel_message("c", "u-1"),
            stop_task("s", "b1"),
            permission("r", true, None, &json!({"command": "ls"})),
            permission("r", false, Some("no rm"), &Value::Null),
        ] {
            assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            assert!(v.is_object());
        }
        let v: Value =
            serde_json::from_slice(&permission("r", false, Some("no rm"), &Value::Null)).unwrap();
        assert_eq!(v["response"]["response"]["message"], "no rm");
        assert_eq!(v["response"]["request_id"], "r");
    }
}
