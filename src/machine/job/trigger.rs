//! What moves a job: a human's verb, or what the runner found.

use serde::{Deserialize, Serialize};
use std::fmt;

// Defined below the job core (the policy's `approve` answer maps to it); a job's trigger here.
pub use crate::approval::Harvest;

/// One row (or family of rows) of seed 001's transition matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "trigger", rename_all = "snake_case")]
pub enum JobTrigger {
    /// `job activate`: DRAFT → PENDING.
    Activate,
    /// `job step` (or `job run` picking it): PENDING → PROVISIONING.
    Step,
    /// The workspace is ready: PROVISIONING → EXECUTING.
    Provisioned,
    /// The workspace could not be made: PROVISIONING → INTERVENTION_REQUIRED.
    ProvisionFailed,
    /// The agents signalled completion: EXECUTING → HARVESTING.
    Completed,
    /// The execution timed out or got stuck: EXECUTING → RECOVERING.
    TimedOut,
    /// Recovery succeeded (with updated inputs): RECOVERING → EXECUTING.
    Recovered,
    /// Recovery cannot help: RECOVERING → INTERVENTION_REQUIRED.
    RecoveryFailed,
    /// HARVESTING's outcome.
    Harvested(Harvest),
    /// `job approve`: APPROVAL_REQUIRED → SUCCESS.
    Approve,
    /// `job reject --feedback`: APPROVAL_REQUIRED → PENDING.
    Reject,
    /// `job resubmit`: INTERVENTION_REQUIRED → PENDING.
    Resubmit,
    /// `job suspend`.
    Suspend,
    /// `job resume`: SUSPENDED → PENDING.
    Resume,
    /// `job cancel`.
    Cancel,
    /// `job land`: SUCCESS stays SUCCESS (the work landed); INTERVENTION_REQUIRED after a
    /// failed land → SUCCESS.
    Land,
    /// A land that did not land (a conflict, a failing check, a changed source): SUCCESS (or
    /// INTERVENTION_REQUIRED after a failed land) → INTERVENTION_REQUIRED.
    LandFailed,
}

impl JobTrigger {
    /// Every trigger, harvest outcomes included.
    pub const ALL: [JobTrigger; 19] = [
        JobTrigger::Activate,
        JobTrigger::Step,
        JobTrigger::Provisioned,
        JobTrigger::ProvisionFailed,
        JobTrigger::Completed,
        JobTrigger::TimedOut,
        JobTrigger::Recovered,
        JobTrigger::RecoveryFailed,
        JobTrigger::Harvested(Harvest::Success),
        JobTrigger::Harvested(Harvest::ApprovalRequired),
        JobTrigger::Harvested(Harvest::InterventionRequired),
        JobTrigger::Approve,
        JobTrigger::Reject,
        JobTrigger::Resubmit,
        JobTrigger::Suspend,
        JobTrigger::Resume,
        JobTrigger::Cancel,
        JobTrigger::Land,
        JobTrigger::LandFailed,
    ];

    /// The name a person uses: a verb of `oneshot job` (`approve`), or what the runner found
    /// (`provisioned`, `harvested: approval_required`).
    pub const fn name(self) -> &'static str {
        match self {
            JobTrigger::Activate => "activate",
            JobTrigger::Step => "step",
            JobTrigger::Provisioned => "provisioned",
            JobTrigger::ProvisionFailed => "provision failed",
            JobTrigger::Completed => "completed",
            JobTrigger::TimedOut => "timed out",
            JobTrigger::Recovered => "recovered",
            JobTrigger::RecoveryFailed => "recovery failed",
            JobTrigger::Harvested(Harvest::Success) => "harvested: success",
            JobTrigger::Harvested(Harvest::ApprovalRequired) => "harvested: approval required",
            JobTrigger::Harvested(Harvest::InterventionRequired) => {
                "harvested: intervention required"
            }
            JobTrigger::Approve => "approve",
            JobTrigger::Reject => "reject",
            JobTrigger::Resubmit => "resubmit",
            JobTrigger::Suspend => "suspend",
            JobTrigger::Resume => "resume",
            JobTrigger::Cancel => "cancel",
            JobTrigger::Land => "land",
            JobTrigger::LandFailed => "land failed",
        }
    }

    /// Whether a human gives this trigger (a verb of `oneshot job`), rather than the runner.
    pub const fn is_verb(self) -> bool {
        matches!(
            self,
            JobTrigger::Activate
                | JobTrigger::Step
                | JobTrigger::Approve
                | JobTrigger::Reject
                | JobTrigger::Resubmit
                | JobTrigger::Suspend
                | JobTrigger::Resume
                | JobTrigger::Cancel
                | JobTrigger::Land
        )
    }
}

impl fmt::Display for JobTrigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
