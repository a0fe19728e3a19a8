//! How the engine tells a user interface what is happening, without knowing about terminals.

use crate::executor::Role;
use crate::machine::SessionState;
use crate::pipeline::Line;
use std::time::Duration;

/// A snapshot for a status line.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The session id.
    pub session_id: String,
    /// The current state.
    pub state: SessionState,
    /// The iteration in progress.
    pub iteration: u32,
    /// The iteration budget.
    pub max_iterations: u32,
    /// Time since the session was created.
    pub elapsed: Duration,
    /// Time since the running process last printed anything.
    pub idle: Duration,
    /// A policy problem in effect (a broken or untrusted edit), for the status line.
    pub policy: Option<String>,
}

/// Receives what a session does as it happens. Every method has an empty default.
pub trait Reporter {
    /// The session moved from one state to another.
    fn transition(
        &mut self,
        status: &Status,
        from: SessionState,
        to: SessionState,
        reason: Option<&str>,
    ) {
        let _ = (status, from, to, reason);
    }

    /// A process printed a (redacted) line.
    fn line(&mut self, role: Role, line: &Line) {
        let _ = (role, line);
    }

    /// About once a second while a process runs.
    fn tick(&mut self, status: &Status) {
        let _ = status;
    }

    /// Something the user should know that does not change the outcome.
    fn warn(&mut self, message: &str) {
        let _ = message;
    }

    /// Good news worth a line (e.g. a policy reload).
    fn note(&mut self, message: &str) {
        let _ = message;
    }
}

/// Reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullReporter;

impl Reporter for NullReporter {}
