//! The terminal face of a running session: agent output prefixed by role, transitions, and on
//! a TTY a live status line.

use oneshot::engine::{Reporter, Status};
use oneshot::executor::Role;
use oneshot::machine::SessionState;
use oneshot::pipeline::Line;
use std::io::{IsTerminal, Write};

/// Writes agent output to stdout and everything else to stderr.
pub struct TerminalReporter {
    quiet: bool,
    tty: bool,
    status_shown: bool,
    status: Option<Status>,
}

impl TerminalReporter {
    /// A reporter for this process's terminal.
    pub fn new(quiet: bool) -> Self {
        TerminalReporter {
            quiet,
            tty: std::io::stderr().is_terminal(),
            status_shown: false,
            status: None,
        }
    }

    fn clear_status(&mut self) {
        if self.status_shown {
            eprint!("\r\x1b[2K");
            self.status_shown = false;
        }
    }

    fn draw_status(&mut self) {
        if !self.tty || self.quiet {
            return;
        }
        if let Some(s) = &self.status {
            eprint!("\r\x1b[2K{}", status_line(s));
            let _ = std::io::stderr().flush();
            self.status_shown = true;
        }
    }
}

/// `oneshot 1a2b3c4d · WORKER_EXECUTING · iteration 1/5 · 12s · last output 3s ago`
pub fn status_line(s: &Status) -> String {
    let mut line = format!(
        "oneshot {} · {} · iteration {}/{} · {}s · last output {}s ago",
        short_id(&s.session_id),
        s.state,
        s.iteration,
        s.max_iterations,
        s.elapsed.as_secs(),
        s.idle.as_secs()
    );
    if let Some(problem) = &s.policy {
        let short: String = problem.chars().take(80).collect();
        line.push_str(&format!(" · policy: {short}"));
    }
    line
}

/// The first 8 characters of a session id, enough to type.
pub fn short_id(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

impl Reporter for TerminalReporter {
    fn transition(
        &mut self,
        status: &Status,
        from: SessionState,
        to: SessionState,
        reason: Option<&str>,
    ) {
        self.status = Some(status.clone());
        if self.quiet {
            return;
        }
        self.clear_status();
        let why = reason.map(|r| format!(" ({r})")).unwrap_or_default();
        eprintln!("oneshot: {from} -> {to}{why}");
        // After the last transition the outcome line follows; a status line would sit on it.
        if to.is_terminal() || to == SessionState::Interrupted {
            self.status = None;
        } else {
            self.draw_status();
        }
    }

    fn line(&mut self, role: Role, line: &Line) {
        if self.quiet {
            return;
        }
        self.clear_status();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "[{role}] {}", line.text);
        let _ = out.flush();
        drop(out);
        self.draw_status();
    }

    fn tick(&mut self, status: &Status) {
        self.status = Some(status.clone());
        self.draw_status();
    }

    fn warn(&mut self, message: &str) {
        self.clear_status();
        eprintln!("oneshot: warning: {message}");
        self.draw_status();
    }

    fn note(&mut self, message: &str) {
        if self.quiet {
            return;
        }
        self.clear_status();
        eprintln!("oneshot: {message}");
        self.draw_status();
    }
}

impl Drop for TerminalReporter {
    fn drop(&mut self) {
        self.clear_status();
    }
}
