//! `oneshot run --json`: the session as NDJSON on stdout, one object per line, for CI and
//! dashboards. The shape is documented in docs/run-json.md; every object has a `type`.
//!
//! Agent output is not in the stream (the observer does not ask for it, so it costs nothing):
//! it stays in the session's log, `oneshot log ID --json`. Lines are written as they happen
//! and write errors are ignored — a reader that went away must not stop a running session,
//! whose record is its state file and log.

use super::out::redact;
use oneshot::engine::{Observer, Update};
use oneshot::{Outcome, Reason};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// Writes one object as a line on stdout (redacted, as everything oneshot prints).
fn emit(value: Value) {
    let line = format!("{value}\n");
    let mut out = std::io::stdout().lock();
    let _ = out
        .write_all(redact(&line).as_bytes())
        .and_then(|()| out.flush());
}

/// RFC 3339 UTC with milliseconds, the time a line is written.
fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// The reason as data (`{"kind": …}`, as in the state file's history) and as a sentence.
fn reason_fields(reason: Option<&Reason>) -> (Value, Value) {
    match reason {
        Some(r) => (json!(r), json!(r.to_string())),
        None => (Value::Null, Value::Null),
    }
}

/// The first line: which session, where.
pub fn session(id: &str, workdir: &Path) {
    emit(json!({
        "type": "session",
        "id": id,
        "workdir": workdir,
        "at": now(),
    }));
}

/// The last line: how it ended.
pub fn outcome(o: &Outcome, session: &oneshot::session::Session, exit_code: i32) {
    let (reason, reason_text) = reason_fields(o.reason.as_ref());
    let (cause, cause_text) = reason_fields(super::outcome::cause(session));
    emit(json!({
        "type": "outcome",
        "id": o.session_id,
        "state": o.state,
        "reason": reason,
        "reason_text": reason_text,
        "cause": cause,
        "cause_text": cause_text,
        "iterations": session.iteration,
        "max_iterations": session.max_iterations,
        "elapsed_ms": super::outcome::elapsed(session).as_millis() as u64,
        "exit_code": exit_code,
        "at": now(),
    }));
}

/// Transitions, warnings and notes as they happen.
pub struct JsonReporter;

impl Observer for JsonReporter {
    fn update(&mut self, update: Update) {
        match update {
            Update::Transition {
                session_id,
                from,
                to,
                iteration,
                max_iterations,
                reason,
            } => {
                let (reason, reason_text) = reason_fields(reason.as_ref());
                emit(json!({
                    "type": "transition",
                    "id": session_id,
                    "from": from,
                    "to": to,
                    "reason": reason,
                    "reason_text": reason_text,
                    "iteration": iteration,
                    "max_iterations": max_iterations,
                    "at": now(),
                }));
            }
            Update::Warning(message) => {
                emit(json!({"type": "warning", "message": message, "at": now()}));
            }
            Update::Note(message) => {
                emit(json!({"type": "note", "message": message, "at": now()}));
            }
            Update::Output { .. } | Update::Status(_) => {}
        }
    }

    fn wants_output(&self) -> bool {
        false
    }
}
