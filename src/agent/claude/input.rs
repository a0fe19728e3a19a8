//! What oneshot writes to Claude Code's stdin in stream-json input mode: the control protocol's
//! `initialize` and `interrupt` requests, the user turn, and answers to `can_use_tool`. Each is
//! one JSON line. [`ClaudeDriver`] puts them together with the stream's parser.

use super::ClaudeParser;
use crate::agent::driver::{Driver, Reply};
use crate::agent::{AgentEvent, LineParser};
use serde_json::{Value, json};

/// Claude Code in `--input-format stream-json` mode: the control handshake and the user turn
/// on open, `can_use_tool` answered with a `control_response`, an `interrupt` control request
/// to stop. Claude answers its own requests' ids; nothing in its stream needs an answer at once.
#[derive(Debug, Default)]
pub struct ClaudeDriver {
    parser: ClaudeParser,
}

impl Driver for ClaudeDriver {
    fn open(&mut self, prompt: &str, out: &mut Vec<Reply>) {
        out.push(initialize("oneshot-init"));
        out.push(user_turn(prompt));
    }

    fn feed(&mut self, line: &[u8], events: &mut Vec<AgentEvent>, _out: &mut Vec<Reply>) {
        self.parser.feed(line, events);
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
