//! The terminal face of a running session: agent output prefixed by role, transitions, and on
//! a TTY a live status line.

use oneshot::engine::Line;
use oneshot::engine::{Observer, Status, Update};
use oneshot::machine::SessionState;
use oneshot::session::Reason;
use oneshot::session::Role;
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Writes agent output to stdout and everything else to stderr.
pub struct TerminalReporter {
    quiet: bool,
    tty: bool,
    status_shown: bool,
    status: Option<Status>,
    /// Agent lines of the current batch, written to stdout in one go at its end.
    pending: Vec<u8>,
}

impl TerminalReporter {
    /// A reporter for this process's terminal.
    pub fn new(quiet: bool) -> Self {
        TerminalReporter {
            quiet,
            tty: std::io::stderr().is_terminal(),
            status_shown: false,
            status: None,
            pending: Vec::new(),
        }
    }

    fn clear_status(&mut self) {
        if self.status_shown {
            err!("\r\x1b[2K");
            self.status_shown = false;
        }
    }

    fn draw_status(&mut self) {
        if !self.tty || self.quiet {
            return;
        }
        if let Some(s) = &self.status {
            err!("\r\x1b[2K{}", status_line(s));
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

impl Observer for TerminalReporter {
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
                let status = self.status.get_or_insert(Status {
                    session_id,
                    state: to,
                    iteration,
                    max_iterations,
                    elapsed: Duration::ZERO,
                    idle: Duration::ZERO,
                    policy: None,
                });
                status.state = to;
                status.iteration = iteration;
                status.max_iterations = max_iterations;
                self.transition(from, to, reason.as_ref());
            }
            Update::Output { role, line } => self.line(role, &line),
            Update::Status(status) => {
                self.status = Some(status);
                self.draw_status();
            }
            Update::Warning(message) => {
                self.clear_status();
                errln!("oneshot: warning: {message}");
                self.draw_status();
            }
            Update::Note(message) => {
                if self.quiet {
                    return;
                }
                self.clear_status();
                errln!("oneshot: {message}");
                self.draw_status();
            }
        }
    }

    fn wants_status(&self) -> bool {
        self.tty && !self.quiet
    }

    fn wants_output(&self) -> bool {
        !self.quiet
    }

    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.clear_status();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&self.pending);
        let _ = out.flush();
        drop(out);
        self.pending.clear();
        // One chunk of a fast stream can be large; do not keep that much around.
        self.pending.shrink_to(64 * 1024);
        self.draw_status();
    }
}

impl TerminalReporter {
    fn transition(&mut self, from: SessionState, to: SessionState, reason: Option<&Reason>) {
        if self.quiet {
            return;
        }
        self.clear_status();
        let why = reason.map(|r| format!(" ({r})")).unwrap_or_default();
        errln!("oneshot: {from} -> {to}{why}");
        // After the last transition the outcome line follows; a status line would sit on it.
        if to.is_terminal() || to == SessionState::Interrupted {
            self.status = None;
        } else {
            self.draw_status();
        }
    }

    /// Queues an agent line; [`Observer::flush`] prints the batch.
    fn line(&mut self, role: Role, line: &Line) {
        if self.quiet {
            return;
        }
        let _ = writeln!(self.pending, "[{role}] {}", line.text);
    }
}

impl Drop for TerminalReporter {
    fn drop(&mut self) {
        Observer::flush(self);
        self.clear_status();
    }
}
