//! Every kind of record in `oneshot-log.json`, as one type.
//!
//! They are defined here, beside the decision core whose steps emit most of them, so that the
//! core depends on nothing that stores them: the store's log writes and reads them (and
//! re-exports them as `store::Record`…), never the other way round. The engine writes these, `oneshot log` renders them, replay reads the facts and decisions
//! back out of them, and the tests round-trip them — all through [`Record`]. The one exception
//! is the hot path: the pipeline encodes `activity` records straight into bytes, and a test
//! checks that what it writes reads back as [`Record::Activity`].
//!
//! Long strings inside [`Record::is_blobbed`] records travel as `{"$blob": "sha256:…"}`
//! references to a [`Record::Blob`] written earlier in the log ([`blob`]); readers resolve them
//! before decoding, so the types below always hold the text.

pub mod blob;
mod decision;
mod egress;
mod facts;

pub use decision::{DecisionInput, DecisionRecord, DecisionResult, Hook};
pub use egress::{EgressRefusal, allow_hint, egress_line};
pub use facts::{ProcessEvent, ProcessRecord, SessionEvent, SessionRecord};

use super::Reason;
use crate::machine::SessionState;
use crate::pipeline::Stream;
use crate::process::{Evidence, Role};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One line of `oneshot-log.json`. Every record has `ts` (unix milliseconds) and `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Record {
    /// One line of agent output (redacted before it was written).
    Activity(Activity),
    /// A transition, fsynced together with `oneshot.json`.
    StateChange(StateChange),
    /// A process started, could not start, was stopped, ended, or was fenced after a crash.
    Process(ProcessRecord),
    /// What a stopped or finished worker left in the workdir.
    Evidence(EvidenceRecord),
    /// An interrupt reached the session (Ctrl-C, SIGTERM, an embedder's handle).
    Interrupt(InterruptRecord),
    /// One policy hook call, or the built-in default standing in for a missing hook.
    Decision(DecisionRecord),
    /// Text referenced by `{"$blob": HASH}` in later records.
    Blob(Blob),
    /// The session was created (with its facts) or resumed by a oneshot process.
    Session(SessionRecord),
    /// Something the user should know that does not change the outcome.
    Warning(Message),
    /// Information worth keeping (e.g. the policy changed while the session was paused).
    Note(Message),
    /// A changed policy was swapped in.
    PolicyReload(PolicyReload),
    /// A changed policy failed to load or validate; the running generation goes on.
    PolicyReloadFailed(PolicyReloadFailed),
    /// A changed policy inside the workdir waits for `oneshot policy trust`.
    PolicyUntrusted(PolicyUntrusted),
    /// What a hook said through `oneshot.log()`, after its `decision` record.
    PolicyLog(PolicyLog),
    /// What one check of an audit found (its output is in the audit's `activity` records).
    Check(CheckRecord),
    /// A human's message to the worker (`oneshot say`), each time its delivery moves.
    Message(MessageRecord),
    /// The running agent's turn began or ended: one of ours, or one of its own.
    Turn(TurnRecord),
    /// The egress proxy refused an agent a connection (allowed ones are not recorded).
    Egress(EgressRefusal),
    /// A record type this oneshot does not know (written by a newer one): skipped.
    #[serde(other)]
    Unknown,
}

/// `activity`: one line of output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    /// Ingestion time.
    pub ts: u64,
    /// Who printed it.
    pub role: Role,
    /// The worker iteration.
    pub iteration: u32,
    /// Executor name (`command`, `claude`, …).
    pub executor: String,
    /// Which pipe.
    pub stream: Stream,
    /// A piece of a line longer than the pipeline's limit; `data` is then always a string.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The line as JSON when it is a JSON object or array, else the line as a string.
    pub data: Value,
}

/// `state_change`: a transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateChange {
    /// When.
    pub ts: u64,
    /// The state left.
    pub from: SessionState,
    /// The state entered.
    pub to: SessionState,
    /// The worker iteration after the transition.
    pub iteration: u32,
    /// Why, when the transition had a cause worth recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// The policy in force.
    pub policy_hash: String,
    /// Its generation.
    pub generation: u32,
}

/// `evidence`: what `recover()` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceRecord {
    /// When.
    pub ts: u64,
    /// The worker iteration it is about.
    pub iteration: u32,
    /// The evidence.
    pub evidence: Evidence,
}

/// `check`: one check of an audit, as it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRecord {
    /// When it ended.
    pub ts: u64,
    /// The worker iteration it judged.
    pub iteration: u32,
    /// What it found.
    #[serde(flatten)]
    pub result: crate::check::CheckResult,
}

/// `interrupt`: the user asked to stop (`force`: kill at once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptRecord {
    /// When.
    pub ts: u64,
    /// Kill now instead of stopping gracefully (a second Ctrl-C).
    #[serde(default)]
    pub force: bool,
}

/// `blob`: text referenced by hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blob {
    /// When.
    pub ts: u64,
    /// `sha256:<64 hex>` of the text.
    pub sha256: String,
    /// The text (redacted).
    pub text: String,
}

/// `warning` and `note`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// When.
    pub ts: u64,
    /// What.
    pub message: String,
}

/// `policy_reload`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyReload {
    /// When.
    pub ts: u64,
    /// The new generation.
    pub generation: u32,
    /// Its content hash.
    pub policy_hash: String,
    /// The files that changed.
    pub files: Vec<String>,
}

/// `policy_reload_failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyReloadFailed {
    /// When.
    pub ts: u64,
    /// Why (with `file:line` where known).
    pub message: String,
    /// The generation that keeps running.
    pub generation: u32,
    /// The files that changed.
    pub files: Vec<String>,
}

/// `policy_untrusted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyUntrusted {
    /// When.
    pub ts: u64,
    /// The changed file an agent could have written.
    pub file: String,
    /// Its content hash.
    pub hash: String,
    /// What to do (`run oneshot policy trust FILE`).
    pub message: String,
}

/// `policy_log`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyLog {
    /// When.
    pub ts: u64,
    /// The hook that logged (`verdict`, `guards[A -> B]`, …).
    pub hook: String,
    /// `debug`, `info`, `warn` or `error`.
    pub level: String,
    /// The message (redacted).
    pub message: String,
}

impl Record {
    /// The record's `ts`; `None` for [`Record::Unknown`].
    pub fn ts(&self) -> Option<u64> {
        Some(match self {
            Record::Activity(r) => r.ts,
            Record::StateChange(r) => r.ts,
            Record::Process(r) => r.ts,
            Record::Evidence(r) => r.ts,
            Record::Interrupt(r) => r.ts,
            Record::Decision(r) => r.ts,
            Record::Blob(r) => r.ts,
            Record::Session(r) => r.ts,
            Record::Warning(r) | Record::Note(r) => r.ts,
            Record::PolicyReload(r) => r.ts,
            Record::PolicyReloadFailed(r) => r.ts,
            Record::PolicyUntrusted(r) => r.ts,
            Record::PolicyLog(r) => r.ts,
            Record::Check(r) => r.ts,
            Record::Message(r) => r.ts,
            Record::Turn(r) => r.ts,
            Record::Egress(r) => r.ts,
            Record::Unknown => return None,
        })
    }

    /// The `type` it is written with.
    pub fn kind(&self) -> &'static str {
        match self {
            Record::Activity(_) => "activity",
            Record::StateChange(_) => "state_change",
            Record::Process(_) => "process",
            Record::Evidence(_) => "evidence",
            Record::Interrupt(_) => "interrupt",
            Record::Decision(_) => "decision",
            Record::Blob(_) => "blob",
            Record::Session(_) => "session",
            Record::Warning(_) => "warning",
            Record::Note(_) => "note",
            Record::PolicyReload(_) => "policy_reload",
            Record::PolicyReloadFailed(_) => "policy_reload_failed",
            Record::PolicyUntrusted(_) => "policy_untrusted",
            Record::PolicyLog(_) => "policy_log",
            Record::Check(_) => "check",
            Record::Message(_) => "message",
            Record::Turn(_) => "turn",
            Record::Egress(_) => "egress",
            Record::Unknown => "unknown",
        }
    }

    /// Records whose long strings are moved into [`Record::Blob`]s when written: those that
    /// carry agent output, prompts and hook inputs.
    pub fn is_blobbed(&self) -> bool {
        matches!(
            self,
            Record::Decision(_)
                | Record::Process(_)
                | Record::Evidence(_)
                | Record::Session(_)
                | Record::Check(_)
                | Record::Message(_)
        )
    }
}

#[cfg(test)]
mod tests;

/// `message`: a human's message to the worker, when it arrives (with its text) and each time
/// its delivery moves (without).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageRecord {
    /// When.
    pub ts: u64,
    /// The message's id.
    pub id: String,
    /// Who said it.
    pub actor: String,
    /// The text (redacted), on the record of its arrival; empty on later ones.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// It was to preempt the running turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub now: bool,
    /// When it was said (unix milliseconds), on the record of its arrival: what the prompt
    /// that carries it shows, so a replay gives the same prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub said_ms: Option<u64>,
    /// Where it stands now.
    pub status: crate::session::MessageStatus,
    /// The worker iteration.
    pub iteration: u32,
}

/// `turn`: the running agent's turn began or ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// When.
    pub ts: u64,
    /// The agent's role.
    pub role: Role,
    /// The worker iteration.
    pub iteration: u32,
    /// `began` or `ended`.
    pub event: TurnEvent,
    /// Whose turn: `foreground` (a prompt or message of ours) or `autonomous` (the agent's
    /// own, woken by a background task).
    pub owner: crate::agent::Owner,
    /// It was cut short (an interrupt, a preempting message).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// What happened to a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TurnEvent {
    /// It began.
    Began,
    /// It ended.
    Ended,
}

/// A `message` record in a line for people (`oneshot log`, the dashboard): who said what, or
/// where the message went.
pub fn message_line(m: &MessageRecord) -> String {
    use crate::session::MessageStatus as S;
    let id = super::short_id(&m.id);
    let now = if m.now { " (now)" } else { "" };
    match m.status {
        S::Received => format!("message {id} from {}{now}: {}", m.actor, m.text),
        S::Sent => format!("message {id} sent to the running worker"),
        S::Held => format!("message {id} held until the worker's running turn ends"),
        S::NextPrompt => format!("message {id} kept for the next worker prompt"),
        S::Taken => format!("message {id} taken in by the worker"),
        S::InPrompt => format!(
            "message {id} carried by the worker prompt (iteration {})",
            m.iteration
        ),
    }
}

/// A `turn` record in a line for people.
pub fn turn_line(t: &TurnRecord) -> String {
    let whose = match t.owner {
        crate::agent::Owner::Autonomous => "its own turn (a background task woke it)",
        _ => "a turn",
    };
    match t.event {
        TurnEvent::Began => format!("{} began {whose}", t.role),
        TurnEvent::Ended if t.interrupted => format!("{} ended {whose}, interrupted", t.role),
        TurnEvent::Ended => format!("{} ended {whose}", t.role),
    }
}
