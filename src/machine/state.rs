//! The ten session states (seed 000 §2.1).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where a session is in its worker → auditor → retry loop.
///
/// Serialized as the seed's SCREAMING_SNAKE_CASE names (`"WORKER_EXECUTING"`), which are also
/// the names policies use in guard keys such as `"AUDIT_PENDING -> AUDITOR_EXECUTING"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SessionState {
    /// Session initialised; no work started.
    Created,
    /// The worker process is running.
    WorkerExecuting,
    /// The worker exited 0; the auditor is due.
    AuditPending,
    /// The auditor process is running.
    AuditorExecuting,
    /// The auditor asked for another attempt (or partial work was salvaged); the worker is due.
    ReiterationPending,
    /// The worker died, hung or was stopped; its leftovers are to be inspected.
    RecoveryPending,
    /// Terminal: the auditor said the task is done.
    Completed,
    /// Terminal: iterations exhausted, the auditor crashed, nothing salvageable, or a policy
    /// veto/error.
    Failed,
    /// Terminal: the auditor judged the task impossible. Resume is refused (seed 000 §3.3).
    Rejected,
    /// Paused by the user (Ctrl-C / SIGTERM) or by oneshot's own death; resumable.
    Interrupted,
}

impl SessionState {
    /// Every state, in table order.
    pub const ALL: [SessionState; 10] = [
        SessionState::Created,
        SessionState::WorkerExecuting,
        SessionState::AuditPending,
        SessionState::AuditorExecuting,
        SessionState::ReiterationPending,
        SessionState::RecoveryPending,
        SessionState::Completed,
        SessionState::Failed,
        SessionState::Rejected,
        SessionState::Interrupted,
    ];

    /// The seed's name, e.g. `"AUDIT_PENDING"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            SessionState::Created => "CREATED",
            SessionState::WorkerExecuting => "WORKER_EXECUTING",
            SessionState::AuditPending => "AUDIT_PENDING",
            SessionState::AuditorExecuting => "AUDITOR_EXECUTING",
            SessionState::ReiterationPending => "REITERATION_PENDING",
            SessionState::RecoveryPending => "RECOVERY_PENDING",
            SessionState::Completed => "COMPLETED",
            SessionState::Failed => "FAILED",
            SessionState::Rejected => "REJECTED",
            SessionState::Interrupted => "INTERRUPTED",
        }
    }

    /// No transition leaves a terminal state.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            SessionState::Completed | SessionState::Failed | SessionState::Rejected
        )
    }

    /// A process runs in this state ("hot" states).
    pub const fn is_executing(self) -> bool {
        matches!(
            self,
            SessionState::WorkerExecuting | SessionState::AuditorExecuting
        )
    }
}

impl fmt::Display for SessionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown state name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown session state `{0}`")]
pub struct UnknownState(pub String);

impl FromStr for SessionState {
    type Err = UnknownState;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SessionState::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownState(s.to_string()))
    }
}
