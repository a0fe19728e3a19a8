//! What can happen to a session, and the decisions a policy contributes.

use super::SessionState;
use serde::{Deserialize, Serialize};

/// The auditor's judgement, parsed from its output by the policy's `verdict` hook or the
/// built-in parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The task is complete.
    Done,
    /// Try again with the auditor's critique.
    Retry,
    /// The task cannot be done; the session is rejected.
    Impossible,
}

/// What `recover()` plus the policy's `salvage` hook concluded about a dead worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Salvage {
    /// The work is finished after all ("zombie success"): audit it.
    Success,
    /// Some work is worth keeping: run the worker again.
    Partial,
    /// Nothing to keep: the session fails.
    Nothing,
}

/// What moves the session machine. Each variant names a row (or a family of rows) of the seed's
/// transition table; the state it applies in is checked by [`super::next`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "trigger", rename_all = "snake_case")]
pub enum Trigger {
    /// `run()` called on a new session.
    Run,
    /// The running process exited with code 0. For the auditor this always comes with a
    /// verdict, so the auditor uses [`Trigger::Verdict`] instead.
    ExitedOk,
    /// The running process exited non-zero, was killed by a signal, or could not be started.
    ExitedErr,
    /// No output for the inactivity timeout (or the role's wall-clock timeout ran out).
    Timeout,
    /// The user (SIGINT/SIGTERM) or oneshot's own death interrupted the running process.
    Interrupt,
    /// The user interrupted a policy hook while it ran (issue 20): any non-terminal state pauses,
    /// and a resume asks the hook again ([`Trigger::Retake`]).
    HookInterrupted,
    /// The salvage decision for a dead worker.
    Salvaged(Salvage),
    /// The auditor exited 0 and its verdict was read.
    Verdict(Verdict),
    /// `next()`: start the due process.
    Next,
    /// In REITERATION_PENDING: the iteration budget is spent.
    MaxIterations,
    /// Resume an INTERRUPTED session; `last_active` is the state it was interrupted in
    /// (seed 000 §3.2).
    Resume {
        /// The executing state recorded before INTERRUPTED.
        last_active: SessionState,
    },
    /// A session that failed only because a policy hook failed is resumed under a corrected
    /// policy, or one whose hook the user interrupted is resumed: it goes back to `to`, the
    /// state the hook was asked in, to ask it again.
    Retake {
        /// The state the failed hook was asked in.
        to: SessionState,
    },
    /// A guard vetoed the next transition, a policy hook failed, or an internal error makes
    /// going on pointless. Sends any non-terminal state to its fallback, FAILED
    /// (ARCHITECTURE.md, "the one rule").
    Abort,
}
