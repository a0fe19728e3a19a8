//! Seed 001's state transition matrix: the only legal moves of a job.

use super::{Harvest, JobState, JobTrigger};

/// A trigger the matrix does not allow in that state. Says what is allowed there instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{trigger} is not allowed in {state}; {}", allowed_text(*.state))]
pub struct Refused {
    /// The job's state.
    pub state: JobState,
    /// What was asked.
    pub trigger: JobTrigger,
}

fn allowed_text(state: JobState) -> String {
    let verbs: Vec<&str> = allowed(state)
        .into_iter()
        .filter(|t| t.is_verb())
        .map(JobTrigger::name)
        .collect();
    match (state.is_terminal(), verbs.is_empty()) {
        (true, true) => format!("{state} is terminal"),
        (true, false) => format!("{state} is terminal; it allows only: {}", verbs.join(", ")),
        (false, true) => {
            format!("{state} is passed through by a running step; only the runner moves it")
        }
        (false, false) => format!("{state} allows: {}", verbs.join(", ")),
    }
}

/// The next state for `trigger` in `state`, or [`Refused`].
///
/// | from | trigger | to |
/// | --- | --- | --- |
/// | DRAFT | activate, suspend, cancel | PENDING, SUSPENDED, CANCELED |
/// | PENDING | step, suspend, cancel | PROVISIONING, SUSPENDED, CANCELED |
/// | PROVISIONING | provisioned, provision failed, cancel | EXECUTING, INTERVENTION_REQUIRED, CANCELED |
/// | EXECUTING | completed, timed out, cancel | HARVESTING, RECOVERING, CANCELED |
/// | RECOVERING | recovered, recovery failed | EXECUTING, INTERVENTION_REQUIRED |
/// | HARVESTING | harvested: success / approval / intervention | SUCCESS, APPROVAL_REQUIRED, INTERVENTION_REQUIRED |
/// | INTERVENTION_REQUIRED | resubmit, cancel | PENDING, CANCELED |
/// | APPROVAL_REQUIRED | approve, reject, cancel | SUCCESS, PENDING, CANCELED |
/// | SUSPENDED | resume, cancel | PENDING, CANCELED |
/// | SUCCESS | land, land failed | SUCCESS (no move: the land is recorded), INTERVENTION_REQUIRED |
/// | INTERVENTION_REQUIRED | land, land failed (after a failed land only) | SUCCESS, INTERVENTION_REQUIRED |
/// | CANCELED | — (terminal) | |
///
/// Where the seed's diagram says "any state → suspend / cancel" and its matrix is narrower,
/// the matrix wins (the rule): a job is suspended only while it waits (DRAFT,
/// PENDING), and RECOVERING and HARVESTING, seconds long, cannot be canceled mid-way.
/// RECOVERING → INTERVENTION_REQUIRED is the addition to the seed (a recovery that
/// cannot help). The rows of `land` and `land failed` are the too (issue 22): a SUCCESS
/// job's work lands in its source, and a land that cannot (a conflict, a failing check) needs a
/// human; the job core allows `land` from INTERVENTION_REQUIRED only when a failed land sent
/// the job there ([`crate::job::land::may_land`]).
pub fn next(state: JobState, trigger: JobTrigger) -> Result<JobState, Refused> {
    use JobState as S;
    use JobTrigger as T;
    let to = match (state, trigger) {
        (S::Draft, T::Activate) => S::Pending,
        (S::Pending, T::Step) => S::Provisioning,
        (S::Draft | S::Pending, T::Suspend) => S::Suspended,

        (S::Provisioning, T::Provisioned) => S::Executing,
        (S::Provisioning, T::ProvisionFailed) => S::InterventionRequired,

        (S::Executing, T::Completed) => S::Harvesting,
        (S::Executing, T::TimedOut) => S::Recovering,

        (S::Recovering, T::Recovered) => S::Executing,
        (S::Recovering, T::RecoveryFailed) => S::InterventionRequired,

        (S::Harvesting, T::Harvested(Harvest::Success)) => S::Success,
        (S::Harvesting, T::Harvested(Harvest::ApprovalRequired)) => S::ApprovalRequired,
        (S::Harvesting, T::Harvested(Harvest::InterventionRequired)) => S::InterventionRequired,

        (S::InterventionRequired, T::Resubmit) => S::Pending,
        (S::ApprovalRequired, T::Approve) => S::Success,
        (S::ApprovalRequired, T::Reject) => S::Pending,
        (S::Suspended, T::Resume) => S::Pending,

        (S::Success | S::InterventionRequired, T::Land) => S::Success,
        (S::Success | S::InterventionRequired, T::LandFailed) => S::InterventionRequired,

        (
            S::Draft
            | S::Pending
            | S::Provisioning
            | S::Executing
            | S::InterventionRequired
            | S::ApprovalRequired
            | S::Suspended,
            T::Cancel,
        ) => S::Canceled,

        _ => return Err(Refused { state, trigger }),
    };
    Ok(to)
}

/// The triggers `state` allows, in [`JobTrigger::ALL`]'s order.
pub fn allowed(state: JobState) -> Vec<JobTrigger> {
    JobTrigger::ALL
        .into_iter()
        .filter(|t| next(state, *t).is_ok())
        .collect()
}
