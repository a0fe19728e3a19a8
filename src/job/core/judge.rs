//! The judgement calls the job core asks for — the policy's `approve` hook and `limits.retry`
//! — behind one trait: the job's policy (loaded, or served on a thread of its own) in the
//! runner, a script in tests, nothing at all for a human's verb.

use crate::policy::{ApprovalJob, ApprovalResult, ApproveDecision, RetryLimits};

/// The judgement calls a step needs: the policy's, in the runner; scripted, in tests.
pub trait JobJudge {
    /// The `approve(result, job)` hook. An error is a policy error: the job goes to
    /// INTERVENTION_REQUIRED with it.
    fn approve(
        &mut self,
        result: &ApprovalResult,
        job: &ApprovalJob,
    ) -> Result<ApproveDecision, String>;

    /// How transient failures are retried (the policy's `limits.retry`).
    fn retry(&self) -> RetryLimits;

    /// The content hash of the policy judging, for the decision records (`None`: unknown,
    /// or it does not load).
    fn policy_hash(&self) -> Option<String> {
        None
    }
}

/// A judge for what needs none (a human's verb): asked anything, it fails, so a verb that
/// would need a judgement cannot be taken silently.
pub struct NoJudge;

impl JobJudge for NoJudge {
    fn approve(&mut self, _: &ApprovalResult, _: &ApprovalJob) -> Result<ApproveDecision, String> {
        Err("no policy was given to judge this".into())
    }
    fn retry(&self) -> RetryLimits {
        RetryLimits {
            attempts: 0,
            ..RetryLimits::default()
        }
    }
}
