//! `oneshot.json`: the durable truth of one session (seed 000 §4.1, extended).

use crate::executor::{Evidence, Role, StopReason};
use crate::machine::{SessionState, Verdict};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The format version written by this build; a newer file is refused rather than misread.
pub const SCHEMA_VERSION: u32 = 1;

/// The state file. Field names follow seed 000 §4.1 (`oneshot_id`, `state`, `iteration_count`,
/// `max_iterations`, `created_at`, `updated_at`, `history`); the rest is what resume needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionFile {
    /// Format version ([`SCHEMA_VERSION`]).
    pub schema: u32,
    /// The session id (a UUID).
    pub oneshot_id: String,
    /// The current state.
    pub state: SessionState,
    /// The worker iteration in progress or last run (1-based; 0 before the first run).
    pub iteration_count: u32,
    /// The iteration budget in force (the policy's `limits.max_iterations`).
    pub max_iterations: u32,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// RFC 3339 time of the last write.
    pub updated_at: String,
    /// Creation time as unix milliseconds (for elapsed times without parsing).
    pub created_ms: u64,
    /// The task as the user gave it.
    pub task: String,
    /// The directory the agents run in.
    pub workdir: PathBuf,
    /// The worker command line, as given (`--worker-cmd`).
    pub worker_cmd: String,
    /// The auditor command line, as given (`--auditor-cmd`).
    pub auditor_cmd: String,
    /// The policy that drives the session.
    pub policy: PolicyRef,
    /// Every state the session has been in, oldest first.
    pub history: Vec<HistoryEntry>,
    /// The process running right now, written before it can do anything, so a resume after a
    /// crash can fence it off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_process: Option<ActiveProcess>,
    /// The worker's prompt for the current iteration.
    #[serde(default)]
    pub worker_prompt: String,
    /// Tail of the worker's last output (redacted).
    #[serde(default)]
    pub worker_output_tail: String,
    /// Tail of the auditor's last output (redacted).
    #[serde(default)]
    pub auditor_output_tail: String,
    /// The auditor's last verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_verdict: Option<VerdictRecord>,
    /// What recovery found about the last dead worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// The next worker run repeats the current iteration instead of starting a new one: set
    /// when the worker was paused (Ctrl-C, oneshot's death), which must not cost an iteration.
    #[serde(default)]
    pub rerun_iteration: bool,
}

/// Which policy decided, by path and content hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyRef {
    /// The policy file, absolute; `None` for the built-in policy.
    pub path: Option<PathBuf>,
    /// Its content hash when the session last loaded it.
    pub hash: String,
    /// How many times the policy was swapped for a changed version, plus one.
    #[serde(default = "first_generation")]
    pub generation: u32,
}

fn first_generation() -> u32 {
    1
}

/// One entry of `history`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The state entered.
    pub state: SessionState,
    /// When, as unix milliseconds.
    pub ts: u64,
    /// Why (`inactivity_timeout`, `exit_code 3`, `policy_error`, the auditor's reason, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Longer explanation, e.g. a policy error with file:line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The pid of the process running in this state, once started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// The worker iteration at the time.
    pub iteration: u32,
    /// Content hash of the policy that made the decision.
    pub policy_hash: String,
    /// The policy generation that made the decision.
    #[serde(default = "first_generation")]
    pub generation: u32,
}

/// A process oneshot started and has not yet seen end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveProcess {
    /// Worker or auditor.
    pub role: Role,
    /// Its pid.
    pub pid: i32,
    /// Its process group (it leads it).
    pub pgid: i32,
    /// Kernel start time (Linux `/proc/PID/stat` field 22), so a recycled pid is never taken
    /// for ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<u64>,
    /// Set (and journaled) just before oneshot stops the process, so a resume after a crash
    /// in the middle of the stop knows why it was being stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping: Option<StopReason>,
}

/// The auditor's verdict as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictRecord {
    /// Done, retry or impossible.
    pub verdict: Verdict,
    /// The auditor's reason or critique.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The auditor's confidence, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

impl SessionFile {
    /// The most recent history entry whose state is `WORKER_EXECUTING` or `AUDITOR_EXECUTING`
    /// before the last INTERRUPTED: what seed 000 §3.2 resumes from.
    pub fn last_active_state(&self) -> Option<SessionState> {
        self.history
            .iter()
            .rev()
            .map(|h| h.state)
            .find(|s| s.is_executing() || *s == SessionState::AuditPending)
    }
}
