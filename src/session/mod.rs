//! The decision core of a session.
//!
//! # How it works
//!
//! A [`Session`] is a value: its facts, its [`Phase`] (the state of seed 000 §2 plus the data
//! that only exists in that state) and its history. [`Session::step`] takes one [`Event`] —
//! a process started or ended, a timer fired, the user interrupted, an inspection came back —
//! asks a [`Decide`] for the judgement calls (verdict, salvage, guards, prompts, observer),
//! moves the session through the table in [`crate::machine`], and returns the [`Effect`]s to
//! carry out, in order: journal the state file, append log records, start or stop a process,
//! inspect the workdir, tell the user, finish.
//!
//! It is synchronous and does no I/O. The engine's async loop turns I/O into events and
//! carries out the effects; `oneshot policy replay` feeds the recorded events back in with
//! another policy deciding; the tests feed scripted events. All of them run these rules —
//! there is no second copy.

mod agent_events;
mod agents;
mod ask;
mod checks;
mod ctx;
mod decide;
mod effect;
mod egress;
pub(crate) use egress::{hook_answer as egress_hook_answer, listed as egress_listed};
mod event;
mod history;
mod outcome;
mod overrides;
mod phase;
mod reason;
pub mod record;
mod retake;
mod said;
mod settings;
mod step;
mod stopping;
mod takeover;
mod transition;
mod unrecorded;
mod value;
mod verdict;

#[cfg(test)]
pub(crate) mod tests;

pub use agents::Agents;
pub(crate) use agents::hear_end;
// The agent's nouns, which a session records.
pub use crate::agent::{AgentFailure, OwnSession, Spent};
pub use decide::{Answer, Decide, HookError, PolicyJudge};
pub use effect::{Effect, Report, Spawn};
pub use event::Event;
pub use history::{HistoryEntry, PolicyRef, VerdictRecord};
pub use outcome::Outcome;
pub use overrides::{LimitOverrides, Override};
pub use phase::{AuditRun, ExitStatus, Failed, Next, Pause, Phase, Run};
pub use reason::Reason;
pub use said::{MessageStatus, Said, short_id};
pub use settings::SessionSettings;
pub use value::{NewSession, Session};

pub(crate) use unrecorded::StepBuffers;
pub(crate) use value::SCHEMA_VERSION;

// The process nouns a session is made of (defined below the decision core, in
// `crate::process`), re-exported so a program reading a session finds them here too.
pub use crate::process::{Evidence, ProcessIdentity, Role, Sandbox, StopReason};
