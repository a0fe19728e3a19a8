//! What can happen to a session: the inputs of [`Session::step`](super::Session::step).
//!
//! The async loop turns I/O into these (a process started or ended, a timer fired, a signal
//! arrived, a reload happened, an effect it carried out came back with its result); the
//! replay and the tests make them up from a recorded log or a script.

use super::ExitStatus;
use crate::process::{Evidence, ProcessIdentity, StopReason};

/// One input to the decision core.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// Begin driving the session: a new one runs its first worker; a resumed one continues
    /// where it stopped (seed 000 §3).
    Start,
    /// The process asked for by [`Effect::Spawn`](super::Effect::Spawn) is running.
    Spawned(ProcessIdentity),
    /// It could not be started.
    SpawnFailed(String),
    /// It ended; `tail` is the end of its output, redacted.
    Exited {
        /// How it ended.
        exit: ExitStatus,
        /// The end of its output, both streams: the worker's output and the evidence.
        tail: String,
        /// The end of its stdout alone: the auditor's answer, which the verdict is read from
        /// (a verdict on stderr does not count). Only the auditor's is read.
        stdout: String,
    },
    /// A clock ran out while it ran: [`StopReason::InactivityTimeout`] or
    /// [`StopReason::WorkerTimeout`] (the role's wall-clock timeout).
    TimedOut(StopReason),
    /// The user asked to stop (Ctrl-C, SIGTERM, an interrupt handle): the first one stops the
    /// running process gracefully, any later one kills it.
    Interrupt,
    /// Kill the running process at once.
    Kill,
    /// What [`Effect::Inspect`](super::Effect::Inspect) found.
    Inspected(Evidence),
    /// What the checks asked for by [`Effect::Check`](super::Effect::Check) found, in order; a
    /// check the user stopped is the last (`stopped: "interrupted"`).
    Checked(Vec<crate::check::CheckResult>),
    /// What [`Effect::Fence`](super::Effect::Fence) did with a process group left by a dead
    /// oneshot.
    Fenced(String),
    /// The running agent named its own session (Claude session, Codex thread): journaled, so
    /// the next iteration can continue it.
    AgentSession(super::OwnSession),
    /// The running agent asks whether it may use a tool (Claude's `can_use_tool`); the
    /// answer is an [`Effect::Permit`](super::Effect::Permit).
    PermissionAsked {
        /// The id the answer must name.
        request_id: String,
        /// The tool.
        tool: String,
        /// The tool's input.
        input: serde_json::Value,
    },
    /// An agent asks the egress proxy for a connection; the answer is an
    /// [`Effect::Egress`](super::Effect::Egress) naming `ask`.
    EgressAsked {
        /// The question's number, which the answer names.
        ask: u64,
        /// The connection.
        query: crate::policy::EgressQuery,
    },
    /// The egress proxy refused an agent a connection (by the answer, or because the host
    /// resolved to an address the rule did not name): recorded, and in `ctx.egress`.
    EgressRefused(crate::session::record::EgressRefusal),
    /// What the running agent reported using in its run (sent once, when it ends).
    AgentUsage(super::Spent),
    /// What the running agent has used so far in its run (model turns counted as they happen):
    /// a run that spends the budget is stopped, not only refused the next one.
    AgentProgress(super::Spent),
    /// The running agent reported that its run failed; its exit follows.
    AgentFailed(super::AgentFailure),
    /// A new policy generation was swapped in: the core records it and applies its limits.
    PolicyChanged,
    /// A human said something to the session's worker (`oneshot say`, read from the session's
    /// inbox); a message already known by id is ignored.
    MessageSaid(super::Said),
    /// What the running worker's driver did with a message [`Effect::Deliver`](super::Effect::Deliver) handed it.
    MessageDelivered {
        /// The message.
        id: String,
        /// Sent, held, or left for the next prompt.
        delivery: crate::agent::Delivery,
    },
    /// The running worker took a message in.
    MessageTaken {
        /// The message.
        id: String,
    },
    /// The running agent's turn began or ended (a turn of its own, woken by a background task,
    /// or one of ours).
    AgentTurn(crate::agent::TurnChange),
    /// The agent's transcript held assistant messages its stream did not carry (by id): they
    /// were added to its run's account, and this says so.
    AgentReconciled {
        /// The messages added.
        added: Vec<String>,
    },
    /// The running worker has waited on its background tasks alone for the policy's
    /// `limits.background_wait`: they are to be stopped.
    BackgroundWaitOver,
}
