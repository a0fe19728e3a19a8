//! What the decision core asks the outside world to do: the outputs of
//! [`Session::step`](super::Session::step), carried out in order by the async loop (or by the
//! replay and the tests).
//!
//! The order is the guarantee: a step that acts ([`Effect::Spawn`], [`Effect::Stop`],
//! [`Effect::Kill`], [`Effect::Fence`]) always asks for [`Effect::Journal`] first, so the state
//! file names the process (or the stop and its reason) before it happens, and a crash at any
//! point leaves a file that `resume` knows how to continue.

use super::{ExitStatus, Outcome, Reason};
use crate::machine::SessionState;
use crate::process::{ProcessIdentity, Role, StopReason};
use crate::session::record::Record;
use std::time::Duration;

/// One thing to do.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Effect {
    /// Write `oneshot.json` from the session as it stands after the step (atomically).
    Journal,
    /// Append a record to `oneshot-log.json` (redacting it, and moving long strings to blobs).
    Record(Record),
    /// Take the workdir's before-snapshot: a worker is about to start.
    Snapshot,
    /// Start a process; answer with [`Event::Spawned`](super::Event::Spawned) or
    /// [`Event::SpawnFailed`](super::Event::SpawnFailed), later [`Event::Exited`](super::Event::Exited).
    Spawn(Spawn),
    /// Stop the running process: SIGTERM to its group, SIGKILL after `grace`.
    Stop {
        /// Time between SIGTERM and SIGKILL.
        grace: Duration,
    },
    /// SIGKILL the running process's group now.
    Kill,
    /// Gather evidence about the worker that stopped (what changed since the snapshot);
    /// answer with [`Event::Inspected`](super::Event::Inspected).
    Inspect {
        /// Why it stopped; `None` for a clean exit.
        reason: Option<StopReason>,
        /// How it ended, as far as known.
        exit: ExitStatus,
    },
    /// Make sure a process group left running by a oneshot that died is gone; answer with
    /// [`Event::Fenced`](super::Event::Fenced).
    Fence {
        /// The process as journaled.
        process: ProcessIdentity,
        /// Time between SIGTERM and SIGKILL.
        grace: Duration,
    },
    /// Run the audit's checks in the workdir, in order; answer with
    /// [`Event::Checked`](super::Event::Checked). Comes after a journal, like every act.
    Check {
        /// The checks.
        checks: Vec<crate::check::Check>,
        /// The worker iteration they judge.
        iteration: u32,
    },
    /// Answer the running agent's tool-permission request.
    Permit {
        /// The request's id.
        request_id: String,
        /// The answer.
        allow: bool,
        /// Why (shown to the model on a deny).
        reason: Option<String>,
        /// The tool's input, given back with an allow.
        input: serde_json::Value,
    },
    /// Answer the egress proxy's question `ask`.
    Egress {
        /// The question's number.
        ask: u64,
        /// Whether the connection may be opened.
        allow: bool,
        /// The rule that decided, in words.
        rule: String,
        /// The rule names the host itself, so a private or loopback address it resolves to is
        /// allowed too.
        private_ok: bool,
    },
    /// Hand a human's message to the running worker; answer with
    /// [`Event::MessageDelivered`](super::Event::MessageDelivered).
    Deliver(crate::agent::Say),
    /// Ask the running worker to stop its background tasks (its `limits.background_wait` ran
    /// out); its run then ends.
    StopBackground,
    /// Tell the user.
    Report(Report),
    /// Driving is over for now: a terminal state, a pause, or nothing left to do.
    Finish(Outcome),
}

/// A process to start.
#[derive(Debug, Clone, PartialEq)]
pub struct Spawn {
    /// Worker or auditor.
    pub role: Role,
    /// The worker iteration.
    pub iteration: u32,
    /// Its prompt.
    pub prompt: String,
    /// Stop it after this long without output.
    pub inactivity_timeout: Duration,
    /// Stop it after this long in total.
    pub wall_timeout: Option<Duration>,
    /// The agent session to continue (the worker's own conversation), when there is one.
    pub resume: Option<String>,
    /// How long its run may wait on the agent's background tasks alone
    /// (`limits.background_wait`).
    pub background_wait: Duration,
    /// Wait this long before starting it: the backoff of a retry after a transient provider
    /// failure (zero otherwise). An interrupt cuts the wait short.
    pub delay: Duration,
}

/// Something for the user, as it happens.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Report {
    /// The session moved.
    Transition {
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
    /// Something that does not change the outcome but should be seen (a hook that failed
    /// open, a reload problem).
    Warning(String),
    /// Good news worth a line.
    Note(String),
}

impl Effect {
    /// Acts on the world outside oneshot's own files: must come after a journal.
    pub fn is_act(&self) -> bool {
        matches!(
            self,
            Effect::Spawn(_)
                | Effect::Stop { .. }
                | Effect::Kill
                | Effect::Fence { .. }
                | Effect::Check { .. }
        )
    }
}
