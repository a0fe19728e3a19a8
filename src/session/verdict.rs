//! AUDITOR_EXECUTING's end: the auditor's answer read into a verdict (through the policy's
//! `verdict` hook), or — when it held none — the auditor asked again within
//! `limits.verdict_reasks`.

use super::Reason;
use super::phase::{Next, Phase, Run};
use super::step::Step;
use crate::machine::Trigger;

impl Step<'_> {
    /// AUDITOR_EXECUTING after a clean exit: the verdict.
    pub(super) fn judge(&mut self) {
        use crate::machine::Verdict;
        let output = self.s.auditor_output.clone();
        let structured = self.structured_verdict(&output);
        let open = open_criteria(structured.as_ref());
        let streak = match &self.s.last_verdict {
            _ if open.is_empty() => 0,
            Some(last) if last.open_criteria == open => last.open_criteria_streak + 1,
            _ => 1,
        };
        match self.ask_verdict(&output, structured, streak) {
            Ok(v) => {
                let reason = v.reason.map(|r| self.d.redact(&r).into_owned());
                let Some(verdict) = v.verdict else {
                    return self.no_verdict(reason);
                };
                self.s.last_verdict = Some(super::VerdictRecord {
                    verdict,
                    reason: reason.clone(),
                    confidence: v.confidence,
                    open_criteria: open,
                    open_criteria_streak: streak,
                });
                let next = match verdict {
                    Verdict::Done => Phase::Completed,
                    Verdict::Retry => Phase::ReiterationPending(Next::Iteration),
                    Verdict::Impossible => Phase::Rejected,
                };
                let reason = Some(Reason::Verdict { verdict, reason });
                self.transition(Trigger::Verdict(verdict), next, reason);
            }
            Err(e) => self.policy_failed(e),
        }
        self.advance();
    }

    /// The auditor's answer held no verdict: it is asked again, with a note of what was
    /// missing, while `limits.verdict_reasks` allows — the worker's work is judged, not redone,
    /// and no iteration is spent. When the re-asks are spent too, the session fails
    /// `no_verdict`.
    fn no_verdict(&mut self, reason: Option<String>) {
        let allowed = self.limits().verdict_reasks;
        let empty = self.s.auditor_output.trim().is_empty();
        let Phase::AuditorExecuting(audit) = &mut self.s.phase else {
            return self.unexpected("an answer without a verdict");
        };
        let what = match reason {
            _ if empty => "its answer on stdout was empty".to_string(),
            Some(r) => r,
            None => crate::policy::NO_VERDICT_REASON.to_string(),
        };
        if audit.reasks >= allowed {
            let reason = Reason::NoVerdict {
                answers: audit.reasks + 1,
                reason: Some(what),
            };
            self.transition(Trigger::Abort, Phase::failed(), Some(reason));
            return self.advance();
        }
        audit.reasks += 1;
        audit.note = Some(format!(
            "Your previous answer to the request below held no verdict ({what}). Read the \
             request again and answer it, giving your verdict as it asks."
        ));
        audit.run = Run::default();
        let n = audit.reasks;
        self.note(&format!(
            "the auditor gave no verdict ({what}); asking it again ({n} of {allowed}, \
             limits.verdict_reasks)"
        ));
        self.journal();
        self.advance();
    }
}

/// The `open_criteria` of a structured verdict, as strings (redaction happens where verdicts are
/// kept: these come from an answer already redacted).
fn open_criteria(structured: Option<&serde_json::Value>) -> Vec<String> {
    structured
        .and_then(|v| v["open_criteria"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect()
}
