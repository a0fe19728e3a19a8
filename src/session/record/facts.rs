//! The facts the decision core was given, recorded so replay can give them again: a session
//! created or resumed, and what happened to each process.

use crate::process::{ProcessIdentity, Role, StopReason};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `process`: one thing that happened to a worker or auditor process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    /// When.
    pub ts: u64,
    /// Worker or auditor.
    pub role: Role,
    /// The worker iteration.
    pub iteration: u32,
    /// What happened (`event` in the log).
    #[serde(flatten)]
    pub event: ProcessEvent,
}

/// What happened to a process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProcessEvent {
    /// It started with this prompt.
    Started {
        /// Its pid, group and start time.
        #[serde(flatten)]
        process: ProcessIdentity,
        /// The prompt it was given.
        prompt: String,
    },
    /// It could not be started.
    SpawnFailed {
        /// Why.
        error: String,
    },
    /// oneshot is stopping it (SIGTERM to its group, then SIGKILL after the grace period).
    Stopping {
        /// Why.
        reason: StopReason,
    },
    /// oneshot killed its group at once (a second interrupt).
    Killed,
    /// It ended.
    Exited {
        /// Its exit code, when it exited normally.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// The signal that ended it, when one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
        /// The end of its output, both streams (redacted): what hooks see as
        /// `worker_output`.
        tail: String,
        /// An auditor's stdout alone, when it differs from `tail` (it printed on stderr too):
        /// what hooks see as `auditor_output` and the verdict is read from. Absent: `tail`
        /// (also in logs written before it existed, whose verdicts were read from `tail`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stdout: Option<String>,
    },
    /// The agent named its own session (Claude session, Codex thread).
    AgentSession {
        /// The agent's session id and transcript.
        #[serde(flatten)]
        session: super::super::OwnSession,
    },
    /// What the agent reported using in this run.
    AgentUsage {
        /// Turns, tokens, dollars.
        #[serde(flatten)]
        spent: super::super::Spent,
    },
    /// What the agent had used so far in this run, while it ran.
    AgentProgress {
        /// Turns, tokens, dollars.
        #[serde(flatten)]
        spent: super::super::Spent,
    },
    /// The agent reported that its run failed.
    AgentFailed {
        /// The failure.
        #[serde(flatten)]
        failure: super::super::AgentFailure,
    },
    /// A process group left by a oneshot that died was stopped on resume.
    Fenced {
        /// What was found and done.
        outcome: String,
    },
}

/// `session`: a oneshot process began driving the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// When.
    pub ts: u64,
    /// The oneshot process driving it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The policy in force.
    pub policy_hash: String,
    /// Created or resumed (`event` in the log).
    #[serde(flatten)]
    pub event: SessionEvent,
}

/// How a oneshot process came to drive the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionEvent {
    /// The session is new; these are its facts.
    Created {
        /// The session id.
        session_id: String,
        /// The task.
        task: String,
        /// The workdir.
        workdir: PathBuf,
        /// The worker command line.
        worker_cmd: String,
        /// The auditor command line.
        auditor_cmd: String,
        /// Limits that replace the policy's (`--max-iterations` …), so a replay decides with
        /// them too; absent when there are none. (Boxed: most sessions have none.)
        #[serde(default, skip_serializing_if = "no_overrides")]
        limits: Box<super::super::LimitOverrides>,
    },
    /// An existing session is continued.
    Resumed,
}

/// Whether a `created` record has no limits to write.
fn no_overrides(limits: &super::super::LimitOverrides) -> bool {
    limits.is_empty()
}
