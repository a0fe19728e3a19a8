//! What a running session tells the program that drives it: the event stream.

use crate::machine::SessionState;
use crate::pipeline::Line;
use crate::process::Role;
use crate::session::Reason;
use std::time::Duration;

/// One thing that happened, in order. The CLI draws these on a terminal; an embedding program
/// receives them through its [`Observer`] (or the channel of [`channel_observer`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Update {
    /// The session moved from one state to another.
    Transition {
        /// The session id.
        session_id: String,
        /// The state left.
        from: SessionState,
        /// The state entered.
        to: SessionState,
        /// The worker iteration.
        iteration: u32,
        /// The iteration budget.
        max_iterations: u32,
        /// Why.
        reason: Option<Reason>,
    },
    /// A command (not an agent CLI) printed a (redacted) line.
    Output {
        /// Who printed it.
        role: Role,
        /// The line.
        line: Line,
    },
    /// An agent CLI printed a (redacted) line: on stdout its protocol (JSON), on stderr its
    /// warnings. What it did comes as [`Update::Account`]; a terminal shows these raw lines
    /// only when asked (`--raw`).
    Protocol {
        /// Which agent.
        role: Role,
        /// The line.
        line: Line,
    },
    /// One entry of an agent's account — what it said, a tool it ran, how that went — read
    /// from its protocol and redacted.
    Account {
        /// Which agent.
        role: Role,
        /// The entry.
        entry: crate::agent::Entry,
    },
    /// About once a second while a process runs (only when the observer asks for ticks).
    Status(Status),
    /// Something the user should know that does not change the outcome: a hook that failed
    /// open, a reload that was refused, a snapshot that could not be taken.
    Warning(String),
    /// Good news worth a line (a policy reload).
    Note(String),
}

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
    /// A policy problem in effect (a broken or untrusted edit), for the status line. `None`
    /// once the file on disk is the running generation again (reloaded or restored).
    pub policy: Option<String>,
    /// The process running now, if any, with its clocks.
    pub process: Option<ProcessClock>,
}

/// The clocks of the running process, as the loop's own timers see them: the time left is
/// measured to the very deadlines the inactivity and wall-clock timeouts fire at.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessClock {
    /// Worker or auditor.
    pub role: Role,
    /// Time since it started.
    pub running: Duration,
    /// Time since it last printed anything.
    pub idle: Duration,
    /// Time left before the inactivity timeout stops it (unless it prints first); `None`
    /// while it is being stopped.
    pub inactivity_left: Option<Duration>,
    /// Time left before its wall-clock timeout stops it; `None` without one, or while it is
    /// being stopped.
    pub wall_left: Option<Duration>,
    /// A stop was asked for (an interrupt, a timeout, a veto): the process has its grace
    /// period to exit before it is killed.
    pub stopping: bool,
    /// Whose turn the agent runs: a turn of ours (foreground), one of its own woken by a
    /// background task (autonomous), or none while it waits on background tasks (idle);
    /// `None` for a command.
    pub turn: Option<crate::agent::Owner>,
}

/// Receives a session's [`Update`]s as they happen.
pub trait Observer {
    /// One update.
    fn update(&mut self, update: Update);

    /// Whether [`Update::Status`] is wanted; without it the loop never wakes up just to tick.
    fn wants_status(&self) -> bool {
        false
    }

    /// Whether [`Update::Output`], [`Update::Protocol`] and [`Update::Account`] are wanted.
    /// Without it the pipeline still logs and redacts every line, but never builds a `String`
    /// for one (a quiet run at a million lines a second does not pay for lines nobody reads).
    fn wants_output(&self) -> bool {
        true
    }

    /// The end of a batch of updates (say, the lines of one chunk of output): an observer that
    /// buffers what it prints flushes here.
    fn flush(&mut self) {}
}

impl<F: FnMut(Update)> Observer for F {
    fn update(&mut self, update: Update) {
        self(update)
    }
}

/// Wants nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Observer for Silent {
    fn update(&mut self, _: Update) {}

    fn wants_output(&self) -> bool {
        false
    }
}

/// An observer that forwards every update to a channel, and the receiving end: the stream a
/// dashboard or another thread reads. Updates sent after the receiver is gone are dropped.
pub fn channel_observer() -> (
    impl Observer + Send + 'static,
    std::sync::mpsc::Receiver<Update>,
) {
    let (tx, rx) = std::sync::mpsc::channel();
    (
        move |u: Update| {
            let _ = tx.send(u);
        },
        rx,
    )
}
