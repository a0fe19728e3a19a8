//! The two rules of a job's approval: the built-in answer when a policy gives none, and the
//! job core's bound whatever any judge answers.

use super::{Approval, ApprovalJob, ApprovalResult, ApproveDecision};

/// The built-in rule: a session that did not complete needs intervention, so does a job that
/// stopped making progress; anything else waits for a human. It never auto-approves: that is
/// a risk a policy must choose to take.
pub fn default_approve(result: &ApprovalResult, job: &ApprovalJob) -> ApproveDecision {
    let decide = |approval, reason: String| ApproveDecision {
        approval,
        reason: Some(reason),
    };
    if result.panel_passed == Some(false) {
        let reason = result
            .reason
            .clone()
            .unwrap_or_else(|| "the panel did not pass".into());
        return decide(Approval::Intervene, reason);
    }
    if !result.completed {
        let reason = match &result.reason {
            Some(why) => format!("the session ended {}: {why}", result.outcome),
            None => format!("the session ended {}", result.outcome),
        };
        return decide(Approval::Intervene, reason);
    }
    if let Some(signal) = no_progress(job) {
        return decide(Approval::Intervene, signal);
    }
    decide(
        Approval::Human,
        "a human signs off by default; a policy's approve hook may auto-approve".into(),
    )
}

/// The no-progress signal that fired, in words, or `None`.
fn no_progress(job: &ApprovalJob) -> Option<String> {
    let limit = job.no_progress_limit;
    if limit == 0 {
        return None;
    }
    if job.empty_diffs >= limit {
        return Some(format!(
            "no progress: {} empty diffs in a row (limit {limit})",
            job.empty_diffs
        ));
    }
    if job.same_findings >= limit {
        return Some(format!(
            "no progress: the same findings {} times in a row (limit {limit})",
            job.same_findings
        ));
    }
    None
}

/// Whether work can be approved without a human — the job core's bound, whatever a policy or
/// another judge says: only work that completed (its session completed and, with a panel, the
/// panel passed). `Err` says why not, as the end of a sentence.
pub fn auto_approvable(result: &ApprovalResult) -> Result<(), String> {
    if result.completed {
        return Ok(());
    }
    Err(if result.panel_passed == Some(false) {
        "the panel did not pass the work, which cannot be auto-approved".to_string()
    } else {
        format!(
            "a session that ended {} did not complete and cannot be auto-approved",
            result.outcome
        )
    })
}
