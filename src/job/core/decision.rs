//! The policy's judgements about a job, as records: what the `approve` hook was shown and
//! answered, where the core sent the job after Rust's bounds, and how a transient failure was
//! retried — written before the move they lead to, like a session's decision records, so that
//! `oneshot job replay` can ask another policy the same questions through the same rules.

use crate::job::Harvest;
use crate::policy::{ApprovalJob, ApprovalResult, ApproveDecision};
use serde::{Deserialize, Serialize};

/// One judgement of the job's policy, in the step it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobDecision {
    /// Position among the job's decisions (the store assigns it; 1, 2, …).
    #[serde(default)]
    pub seq: u64,
    /// The job (`job_id`: `job` is the `approve` hook's view of it, beside it in the record).
    pub job_id: String,
    /// The step it was made in (1: the job's first).
    pub step: u32,
    /// When (ms since the epoch).
    pub at_ms: u64,
    /// The content hash of the policy that judged (`None`: it did not load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_hash: Option<String>,
    /// What was judged and how.
    #[serde(flatten)]
    pub judgement: Judgement,
}

/// A question the job's policy answered, with its answer and what followed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// A handful per step, each moved once: boxing would buy nothing measurable.
#[allow(clippy::large_enum_variant)]
#[serde(tag = "hook", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Judgement {
    /// `approve(result, job)` at harvest.
    Approve {
        /// The hook's `result`.
        result: ApprovalResult,
        /// The hook's `job`.
        job: ApprovalJob,
        /// What it answered; `None` when it failed (see `error`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<ApproveDecision>,
        /// Why the hook failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Where the job went, Rust's bounds applied ([`settle`]).
        outcome: Harvest,
        /// Why, as the transition says.
        reason: String,
    },
    /// `limits.retry` after a transient failure.
    Retry {
        /// What failed.
        failure: String,
        /// Retries made in this step before this one.
        retries: u32,
        /// `limits.retry.attempts` as the policy gave it.
        attempts: u32,
        /// The wait before the retry (ms); `None`: the retries were spent, a human must look.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_ms: Option<u64>,
    },
}

impl Judgement {
    /// The hook's name (`approve`, `retry`).
    pub fn hook(&self) -> &'static str {
        match self {
            Judgement::Approve { .. } => "approve",
            Judgement::Retry { .. } => "retry",
        }
    }
}

/// Where HARVESTING sends a job, given what the `approve` hook answered about `result` and
/// `job`: the one place the job's Rust bounds apply to a judge's answer, in a step and in a
/// replay alike.
///
/// - Work that did not complete (a failed session, a panel that did not pass) is never
///   approved without a human, whatever the judge says ([`auto_approvable`]).
/// - A hook that failed sends the job to a human to fix it.
/// - Past `limits.max_loops` only an approval ends the step anywhere but with a human fixing
///   things. The max_loops-th step itself ends as usual, so a human may still approve it
///   (with max_loops = 1, the first attempt).
pub fn settle(
    result: &ApprovalResult,
    job: &ApprovalJob,
    answer: &Result<ApproveDecision, String>,
) -> (Harvest, String) {
    let (harvest, why) = match answer {
        Ok(d) if d.approval == crate::policy::Approval::Approve => match auto_approvable(result) {
            Ok(()) => (Harvest::Success, d.reason.clone()),
            Err(why) => (
                Harvest::InterventionRequired,
                Some(format!("the policy approved, but {why}; a human must look")),
            ),
        },
        Ok(d) => (d.approval.harvest(), d.reason.clone()),
        Err(e) => (
            Harvest::InterventionRequired,
            Some(format!("policy error in approve: {e}")),
        ),
    };
    let (harvest, why) = if harvest != Harvest::Success && job.step > job.max_loops {
        (
            Harvest::InterventionRequired,
            Some(format!(
                "max loops passed: {} steps since creation or the last resubmit \
                 (limits.max_loops = {}){}",
                job.step,
                job.max_loops,
                why.map(|w| format!("; {w}")).unwrap_or_default()
            )),
        )
    } else {
        (harvest, why)
    };
    let why = why.unwrap_or_else(|| match harvest {
        Harvest::Success => "approved by the policy".into(),
        Harvest::ApprovalRequired => "a human signs off".into(),
        Harvest::InterventionRequired => "a human must intervene".into(),
    });
    (harvest, why)
}

/// Whether work can be approved without a human: the job core's bound, in the module below
/// both the core and the policy host that asks it.
pub use crate::approval::auto_approvable;

/// What `limits.retry` makes of a transient failure after `retries` retries in this step: the
/// wait before the next one, or `None` when they are spent.
pub fn retry_after(
    limits: &crate::policy::RetryLimits,
    retries: u32,
) -> Option<std::time::Duration> {
    (retries < limits.attempts).then(|| limits.delay(retries + 1))
}
