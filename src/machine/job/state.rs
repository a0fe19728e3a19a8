//! The eleven job states (seed 001 §State Definitions).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where a job is in its lifecycle. A session (the worker/auditor loop) runs inside EXECUTING.
///
/// Serialized as the seed's SCREAMING_SNAKE_CASE names (`"APPROVAL_REQUIRED"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    /// Created, being configured.
    Draft,
    /// Ready for its next step; the scheduler picks it up.
    Pending,
    /// Transient: the runner sets up its workspace.
    Provisioning,
    /// Transient: the agents run (a session).
    Executing,
    /// Transient: the runner restarts a stuck execution.
    Recovering,
    /// Transient: the runner collects the outcome, the diff, the verdict.
    Harvesting,
    /// Terminal: done.
    Success,
    /// A human must approve the result (or reject it with feedback).
    ApprovalRequired,
    /// A human must fix something and resubmit.
    InterventionRequired,
    /// Paused; `resume` makes it PENDING again.
    Suspended,
    /// Terminal: stopped by a human.
    Canceled,
}

impl JobState {
    /// Every state, in the seed's order.
    pub const ALL: [JobState; 11] = [
        JobState::Draft,
        JobState::Pending,
        JobState::Provisioning,
        JobState::Executing,
        JobState::Recovering,
        JobState::Harvesting,
        JobState::Success,
        JobState::ApprovalRequired,
        JobState::InterventionRequired,
        JobState::Suspended,
        JobState::Canceled,
    ];

    /// The seed's name (`"APPROVAL_REQUIRED"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            JobState::Draft => "DRAFT",
            JobState::Pending => "PENDING",
            JobState::Provisioning => "PROVISIONING",
            JobState::Executing => "EXECUTING",
            JobState::Recovering => "RECOVERING",
            JobState::Harvesting => "HARVESTING",
            JobState::Success => "SUCCESS",
            JobState::ApprovalRequired => "APPROVAL_REQUIRED",
            JobState::InterventionRequired => "INTERVENTION_REQUIRED",
            JobState::Suspended => "SUSPENDED",
            JobState::Canceled => "CANCELED",
        }
    }

    /// A resting state: the job waits here (for the scheduler, a human, or nothing: terminal)
    /// and holds no lease. The others are transient: a step passes through them.
    pub const fn is_resting(self) -> bool {
        !matches!(
            self,
            JobState::Provisioning
                | JobState::Executing
                | JobState::Recovering
                | JobState::Harvesting
        )
    }

    /// SUCCESS or CANCELED: nothing moves the job any more.
    pub const fn is_terminal(self) -> bool {
        matches!(self, JobState::Success | JobState::Canceled)
    }

    /// A human must act before the job goes on (approve or reject, fix and resubmit, resume).
    pub const fn awaits_human(self) -> bool {
        matches!(
            self,
            JobState::ApprovalRequired | JobState::InterventionRequired | JobState::Suspended
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no job state (nor a legacy one: see [`super::migrate()`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown job state {0:?}; the states are {names}", names = JobState::ALL.map(JobState::as_str).join(", "))]
pub struct UnknownJobState(pub String);

impl FromStr for JobState {
    type Err = UnknownJobState;

    /// The seed's name, any case.
    fn from_str(s: &str) -> Result<JobState, UnknownJobState> {
        let upper = s.trim().to_ascii_uppercase();
        JobState::ALL
            .into_iter()
            .find(|st| st.as_str() == upper)
            .ok_or_else(|| UnknownJobState(s.to_string()))
    }
}
