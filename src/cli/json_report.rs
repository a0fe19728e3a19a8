//! `oneshot run --json`: the session as NDJSON on stdout, one object per line, for CI and
//! dashboards. The shape is documented in docs/run-json.md; every object has a `type`.
//!
//! Agent output is not in the stream (the observer does not ask for it, so it costs nothing):
//! it stays in the session's log, `oneshot log ID --json`. Lines are written as they happen
//! and write errors are ignored — a reader that went away must not stop a running session,
//! whose record is its state file and log.

use super::out::redact;
use oneshot::engine::{Observer, Update};
use oneshot::machine::SessionState;
use oneshot::session::Session;
use oneshot::{Outcome, Reason};
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// One line of the stream. Internally tagged, so `type` comes first on every line.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line<'a> {
    Session {
        session_id: &'a str,
        workdir: &'a Path,
        at: String,
    },
    Transition {
        session_id: &'a str,
        from: SessionState,
        to: SessionState,
        reason: Option<&'a Reason>,
        reason_text: Option<String>,
        iteration: u32,
        max_iterations: u32,
        at: String,
    },
    Warning {
        message: &'a str,
        at: String,
    },
    Note {
        message: &'a str,
        at: String,
    },
    Outcome {
        session_id: &'a str,
        state: SessionState,
        reason: Option<&'a Reason>,
        reason_text: Option<String>,
        cause: Option<&'a Reason>,
        cause_text: Option<String>,
        iteration_count: u32,
        max_iterations: u32,
        elapsed_ms: u64,
        exit_code: i32,
        at: String,
    },
}

/// Writes one line on stdout (redacted, as everything oneshot prints).
fn emit(line: &Line) {
    let Ok(mut text) = serde_json::to_string(line) else {
        return;
    };
    text.push('\n');
    let mut out = std::io::stdout().lock();
    let _ = out
        .write_all(redact(&text).as_bytes())
        .and_then(|()| out.flush());
}

/// RFC 3339 UTC with milliseconds, the time a line is written.
fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// The first line: which session, where.
pub fn session(id: &str, workdir: &Path) {
    emit(&Line::Session {
        session_id: id,
        workdir,
        at: now(),
    });
}

/// The last line: how it ended.
pub fn outcome(o: &Outcome, session: &Session, exit_code: i32) {
    let cause = super::outcome::cause(session);
    emit(&Line::Outcome {
        session_id: &o.session_id,
        state: o.state,
        reason: o.reason.as_ref(),
        reason_text: o.reason.as_ref().map(Reason::to_string),
        cause,
        cause_text: cause.map(Reason::to_string),
        iteration_count: session.iteration,
        max_iterations: session.max_iterations,
        elapsed_ms: super::outcome::elapsed(session).as_millis() as u64,
        exit_code,
        at: now(),
    });
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
            } => emit(&Line::Transition {
                session_id: &session_id,
                from,
                to,
                reason: reason.as_ref(),
                reason_text: reason.as_ref().map(Reason::to_string),
                iteration,
                max_iterations,
                at: now(),
            }),
            Update::Warning(message) => emit(&Line::Warning {
                message: &message,
                at: now(),
            }),
            Update::Note(message) => emit(&Line::Note {
                message: &message,
                at: now(),
            }),
            Update::Output { .. }
            | Update::Protocol { .. }
            | Update::Account { .. }
            | Update::Status(_) => {}
            // An update newer than this reporter: not part of its stream.
            _ => {}
        }
    }

    fn wants_output(&self) -> bool {
        false
    }
}
