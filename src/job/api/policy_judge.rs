//! The job's policy as the core's judge ([`crate::job::step::JobJudge`]): a loaded policy, or
//! one served on a thread of its own. Here, not in the core, because it runs Lua.

use crate::job::step::JobJudge;
use crate::policy::{ApprovalJob, ApprovalResult, ApproveDecision, RetryLimits};

/// A loaded policy judges as the job's policy does: its `approve` hook and `limits.retry`.
impl JobJudge for crate::policy::PolicyHost {
    fn approve(
        &mut self,
        result: &ApprovalResult,
        job: &ApprovalJob,
    ) -> Result<ApproveDecision, String> {
        crate::policy::PolicyHost::approve(self, result, job).map_err(|e| e.to_string())
    }

    fn retry(&self) -> RetryLimits {
        self.limits().retry
    }

    fn policy_hash(&self) -> Option<String> {
        Some(self.hash().to_string())
    }
}

/// A policy served on a thread of its own judges as the job's policy does; each question waits
/// on the caller's thread for the answer (the core is synchronous).
impl JobJudge for crate::policy::PolicyService {
    fn approve(
        &mut self,
        result: &ApprovalResult,
        job: &ApprovalJob,
    ) -> Result<ApproveDecision, String> {
        let (result, job) = (result.clone(), job.clone());
        self.call_blocking("approve", move |h| h.approve(&result, &job))
            .map_err(|e| e.to_string())
    }

    fn retry(&self) -> RetryLimits {
        self.call_blocking("limits", |h| Ok(h.limits().retry))
            .unwrap_or_default()
    }

    fn policy_hash(&self) -> Option<String> {
        Some(self.hash().to_string())
    }
}
