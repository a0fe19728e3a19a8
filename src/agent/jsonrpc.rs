//! JSON-RPC over stdio, as the two-way protocols speak it (Codex `app-server`, the Agent Client
//! Protocol): one line per message, requests both ways. [`Rpc`] is the bookkeeping both drivers
//! share — oneshot's request ids, what each request asked (so its response is read right), and
//! the sorting of an incoming line into a request, a notification or a response — so that a
//! driver only says what its protocol means.

use super::AgentEvent;
use super::driver::Reply;
use super::line::unknown;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// The error code for a method oneshot does not serve (JSON-RPC's "Method not found").
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

/// One side of a JSON-RPC conversation: oneshot's requests, numbered from 1, each remembered
/// with what it asked (`A`) until its response arrives.
#[derive(Debug)]
pub(crate) struct Rpc<A> {
    /// `Some("2.0")` names the version on every line (ACP requires it); Codex omits it.
    version: Option<&'static str>,
    next_id: u64,
    pending: HashMap<u64, A>,
}

/// What one line from the agent was.
#[derive(Debug)]
pub(crate) enum Incoming<A> {
    /// The agent asks oneshot something; it waits for a [`Rpc::reply`] or [`Rpc::refuse`]
    /// carrying `id`.
    Request {
        /// The agent's id, as it sent it (a number or a string).
        id: Value,
        /// The method.
        method: String,
        /// Its parameters (`null` when it sent none).
        params: Value,
    },
    /// The agent tells oneshot something; nothing is answered.
    Notification {
        /// The method.
        method: String,
        /// Its parameters (`null` when it sent none).
        params: Value,
    },
    /// The answer to one of oneshot's requests, with what that request asked.
    Response {
        /// What oneshot asked.
        asked: A,
        /// The whole message: its `result` or `error` (drivers read either, and the whole
        /// message when it has neither).
        message: Value,
    },
}

/// The members that say what a message is; the rest is read from the whole message.
#[derive(Deserialize)]
struct Envelope {
    /// Present (even `null`) on requests and responses.
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default)]
    method: Option<Value>,
}

/// A member that is there, whatever its value (`"id": null` is still an id).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl<A> Rpc<A> {
    /// A conversation whose lines name JSON-RPC `version` (`Some("2.0")`) or none at all.
    pub(crate) fn new(version: Option<&'static str>) -> Rpc<A> {
        Rpc {
            version,
            next_id: 1,
            pending: HashMap::new(),
        }
    }

    /// A request for the agent, remembered as `asked` until its response arrives.
    pub(crate) fn request(&mut self, asked: A, method: &str, params: Value) -> Reply {
        let id = self.next_id;
        self.next_id += 1;
        self.pending.insert(id, asked);
        self.line([
            ("id", json!(id)),
            ("method", json!(method)),
            ("params", params),
        ])
    }

    /// A notification for the agent (no id, no answer).
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) -> Reply {
        match params {
            Some(params) => self.line([("method", json!(method)), ("params", params)]),
            None => self.line([("method", json!(method))]),
        }
    }

    /// The answer to the agent's request `id`.
    pub(crate) fn reply(&self, id: &Value, result: Value) -> Reply {
        self.line([("id", id.clone()), ("result", result)])
    }

    /// The error answer to the agent's request `id`, so it never waits on oneshot.
    pub(crate) fn refuse(&self, id: &Value, code: i64, message: String) -> Reply {
        let error = json!({"code": code, "message": message});
        self.line([("id", id.clone()), ("error", error)])
    }

    /// Sorts one line from the agent. `None` for a blank line, and for a line that is no
    /// message of this conversation — not a JSON object, the response to an id oneshot never
    /// asked (or already had answered), an object with neither id nor method — which is kept
    /// in `events` as [`AgentEvent::Unknown`] or [`AgentEvent::Malformed`].
    pub(crate) fn read(&mut self, raw: &[u8], events: &mut Vec<AgentEvent>) -> Option<Incoming<A>> {
        let raw = raw.trim_ascii();
        if raw.is_empty() {
            return None;
        }
        let message = match serde_json::from_slice::<Value>(raw) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                events.push(unknown(raw));
                return None;
            }
        };
        let Ok(envelope) = Envelope::deserialize(&message) else {
            events.push(unknown(raw));
            return None;
        };
        let params = || message.get("params").cloned().unwrap_or(Value::Null);
        // A method that is not a string names none.
        let method = match envelope.method {
            Some(Value::String(m)) => Some(m),
            _ => None,
        };
        let incoming = match (envelope.id, method) {
            (Some(id), Some(method)) => Incoming::Request {
                params: params(),
                id,
                method,
            },
            (None, Some(method)) => Incoming::Notification {
                params: params(),
                method,
            },
            (Some(id), None) => match id.as_u64().and_then(|id| self.pending.remove(&id)) {
                Some(asked) => Incoming::Response { asked, message },
                None => {
                    events.push(unknown(raw));
                    return None;
                }
            },
            _ => {
                events.push(unknown(raw));
                return None;
            }
        };
        Some(incoming)
    }

    /// One message as a line, with the version first when this conversation names it.
    fn line<const N: usize>(&self, members: [(&str, Value); N]) -> Reply {
        let mut object = Map::new();
        if let Some(v) = self.version {
            object.insert("jsonrpc".into(), json!(v));
        }
        for (k, v) in members {
            object.insert(k.into(), v);
        }
        let mut bytes = serde_json::to_vec(&object).expect("a JSON object serializes");
        bytes.push(b'\n');
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(rpc: &mut Rpc<&'static str>, line: &str) -> (Option<Incoming<&'static str>>, usize) {
        let mut events = Vec::new();
        let incoming = rpc.read(line.as_bytes(), &mut events);
        (incoming, events.len())
    }

    #[test]
    fn requests_are_numbered_and_their_responses_matched_once() {
        let mut rpc = Rpc::new(Some("2.0"));
        let first: Value = serde_json::from_slice(&rpc.request("init", "initialize", json!({})))
            .expect("a JSON line");
        assert_eq!(
            first,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        );
        rpc.request("prompt", "session/prompt", json!({}));
        match read(&mut rpc, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#) {
            (Some(Incoming::Response { asked, .. }), 0) => assert_eq!(asked, "prompt"),
            other => panic!("{other:?}"),
        }
        // Answered already, or never asked: kept as unknown, not taken for a response.
        assert!(matches!(
            read(&mut rpc, r#"{"id":2,"result":{}}"#),
            (None, 1)
        ));
        assert!(matches!(
            read(&mut rpc, r#"{"id":9,"result":{}}"#),
            (None, 1)
        ));
        match read(&mut rpc, r#"{"id":1,"error":{"code":-1}}"#) {
            (Some(Incoming::Response { asked, message }), 0) => {
                assert_eq!(
                    (asked, message["error"]["code"].as_i64()),
                    ("init", Some(-1))
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn incoming_lines_are_sorted() {
        let mut rpc: Rpc<&'static str> = Rpc::new(None);
        match read(&mut rpc, r#"{"id":"a","method":"ask","params":{"x":1}}"#) {
            (Some(Incoming::Request { id, method, params }), 0) => {
                assert_eq!(
                    (id, method, params),
                    (json!("a"), "ask".into(), json!({"x": 1}))
                )
            }
            other => panic!("{other:?}"),
        }
        match read(&mut rpc, r#"{"method":"tell"}"#) {
            (Some(Incoming::Notification { method, params }), 0) => {
                assert_eq!((method, params), ("tell".into(), Value::Null))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(read(&mut rpc, "  "), (None, 0)));
        for stray in [
            "[1]",
            "not json",
            r#"{"x":1}"#,
            r#"{"method":7}"#,
            r#"{"id":1}"#,
        ] {
            assert!(matches!(read(&mut rpc, stray), (None, 1)), "{stray}");
        }
    }

    #[test]
    fn answers_carry_the_agents_id_and_the_version_when_named() {
        let rpc: Rpc<()> = Rpc::new(None);
        let refused: Value =
            serde_json::from_slice(&rpc.refuse(&json!(7), METHOD_NOT_FOUND, "no".into()))
                .expect("a JSON line");
        assert_eq!(
            refused,
            json!({"id": 7, "error": {"code": -32601, "message": "no"}})
        );
        let rpc: Rpc<()> = Rpc::new(Some("2.0"));
        let cancel = rpc.notify("session/cancel", Some(json!({"sessionId": "s"})));
        assert_eq!(cancel.iter().filter(|&&b| b == b'\n').count(), 1);
        let v: Value = serde_json::from_slice(&cancel).expect("a JSON line");
        assert_eq!(v["jsonrpc"], "2.0");
        assert!(v.get("id").is_none());
    }
}
