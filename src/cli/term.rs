//! The terminal face of a running session: agent output prefixed by role, transitions, and on
//! a terminal that can show it a live status line.
//!
//! The status line is drawn on stderr with `\r` and "erase line", so it is drawn only where it
//! can be erased again: stderr is a terminal that understands the sequences (not `TERM=dumb`)
//! *and* stdout goes to the same kind of place. With stdout piped and stderr a terminal, agent
//! lines go to the pipe while the status line stays on the screen, and oneshot's own lines
//! would glue onto it.

use super::account::{self, StderrBurst};
use super::color;
use super::sanitize::{clean, push_clean};
use super::statusline::{fit, status_line};
use oneshot::engine::Line;
use oneshot::engine::{Observer, Status, Update};
use oneshot::machine::SessionState;
use oneshot::session::Reason;
use oneshot::session::Role;
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// The width assumed when the terminal does not say.
const DEFAULT_WIDTH: usize = 80;

/// Writes agent output to stdout and everything else to stderr.
pub struct TerminalReporter {
    quiet: bool,
    /// `--raw`: an agent's protocol lines instead of its account.
    raw: bool,
    /// The agent's stderr shown so far in its current burst, and whose it is.
    burst: StderrBurst,
    burst_role: Role,
    /// A status line can be drawn (see the module doc).
    live: bool,
    /// Keep the agents' SGR colours: colour is on and stdout is a terminal too (a file or
    /// pipe gets plain text unless colour is forced).
    colour: bool,
    /// The terminal's width, read at each status tick (a resize shows within a second).
    width: usize,
    status_shown: bool,
    status: Option<Status>,
    /// Agent lines of the current batch, written to stdout in one go at its end.
    pending: Vec<u8>,
}

/// The width of the terminal on stderr, in columns.
pub fn terminal_width() -> usize {
    terminal_size::terminal_size_of(std::io::stderr())
        .map_or(DEFAULT_WIDTH, |(w, _)| usize::from(w.0))
}

/// Whether a status line can be drawn (and erased again): not quiet, stderr and stdout both a
/// terminal (see the module doc), and one that takes cursor control.
pub fn status_line_fits(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal() && std::io::stdout().is_terminal() && !dumb_term()
}

/// Whether the terminal cannot take cursor control: `TERM=dumb`, or no `TERM` at all.
pub fn dumb_term() -> bool {
    std::env::var_os("TERM").is_none_or(|t| t.is_empty() || t == "dumb")
}

impl TerminalReporter {
    /// A reporter for this process's terminal; `raw` shows an agent's protocol lines instead
    /// of its account.
    pub fn new(quiet: bool, raw: bool) -> Self {
        let live = status_line_fits(quiet);
        TerminalReporter {
            quiet,
            raw,
            burst: StderrBurst::default(),
            burst_role: Role::Worker,
            live,
            colour: color::forced() || (color::on() && std::io::stdout().is_terminal()),
            width: terminal_width(),
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
        if !self.live {
            return;
        }
        if let Some(s) = &self.status {
            let line = status_line(s);
            err!("\r\x1b[2K{}", fit(&line, self.width));
            self.status_shown = true;
        }
    }
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
                    process: None,
                });
                status.state = to;
                status.iteration = iteration;
                status.max_iterations = max_iterations;
                // The clocks were the last process's; the next tick brings the new one's.
                status.process = None;
                self.transition(from, to, reason.as_ref());
            }
            Update::Output { role, line } => self.line(role, &line),
            Update::Protocol { role, line } if self.raw => self.line(role, &line),
            // Its protocol is read into its account; its stderr (warnings, a crash) is shown, a
            // few lines a burst.
            Update::Protocol { role, line } if line.stream == oneshot::engine::Stream::Stderr => {
                self.burst_role = role;
                if self.burst.show() {
                    self.stderr_line(role, &line);
                }
            }
            Update::Protocol { .. } => {}
            Update::Account { .. } if self.raw => {}
            Update::Account { role, entry } => self.entry(role, &entry),
            Update::Status(status) => {
                self.width = terminal_width();
                self.status = Some(status);
                self.draw_status();
            }
            Update::Warning(message) => {
                self.clear_status();
                errln!("oneshot: {} {}", color::warning(), clean(&message));
                self.draw_status();
            }
            Update::Note(message) => {
                // Good news (a reload went in) ends whatever policy problem the line showed.
                if let Some(s) = &mut self.status {
                    s.policy = None;
                }
                if self.quiet {
                    return;
                }
                self.clear_status();
                errln!("oneshot: {}", clean(&message));
                self.draw_status();
            }
            // An update newer than this reporter: nothing it knows to show.
            _ => {}
        }
    }

    fn wants_status(&self) -> bool {
        self.live
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
        self.end_burst();
        self.clear_status();
        // A reason can quote an agent (a verdict's critique): no control sequences in it.
        let why = reason
            .map(|r| format!(" ({})", clean(&r.to_string())))
            .unwrap_or_default();
        errln!(
            "oneshot: {} -> {}{why}",
            color::state(from),
            color::state(to)
        );
        // After the last transition the outcome line follows; a status line would sit on it.
        if to.is_terminal() || to == SessionState::Interrupted {
            self.status = None;
        } else {
            self.draw_status();
        }
    }

    /// Queues one entry of an agent's account, cut to the width.
    fn entry(&mut self, role: Role, entry: &oneshot::agent::Entry) {
        if self.quiet {
            return;
        }
        self.end_burst();
        let line = account::line(role, role.as_str(), entry, self.colour, self.width);
        self.pending.extend_from_slice(line.as_bytes());
        self.pending.push(b'\n');
    }

    /// Says how much of an agent's stderr burst was left out.
    fn end_burst(&mut self) {
        if let Some(more) = self.burst.end("`oneshot log ID --raw` shows them") {
            let role = self.burst_role;
            let prefix = account::raw_prefix(role, role.as_str(), self.colour);
            let _ = writeln!(self.pending, "{prefix}{more}");
        }
    }

    /// Queues an agent line, without its terminal control sequences; [`Observer::flush`]
    /// prints the batch.
    /// Queues a line of an agent's stderr beside its account: one line, cut to the width.
    fn stderr_line(&mut self, role: Role, line: &Line) {
        if self.quiet {
            return;
        }
        let prefix = format!("[{role}] ");
        let room = self.width.saturating_sub(prefix.len()).max(10);
        let text = clean(&line.text);
        let _ = writeln!(
            self.pending,
            "{}{}",
            account::raw_prefix(role, role.as_str(), self.colour),
            fit(&text, room + 1)
        );
    }

    fn line(&mut self, role: Role, line: &Line) {
        if self.quiet {
            return;
        }
        let _ = write!(
            self.pending,
            "{}",
            account::raw_prefix(role, role.as_str(), self.colour)
        );
        push_clean(&mut self.pending, &line.text, self.colour);
        self.pending.push(b'\n');
    }
}

impl Drop for TerminalReporter {
    fn drop(&mut self) {
        Observer::flush(self);
        self.clear_status();
    }
}
