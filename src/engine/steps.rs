//! The checkpoint states: decisions between two processes.

use super::Engine;
use super::EngineError;
use crate::machine::{Event, Salvage};

impl Engine {
    /// AUDIT_PENDING: build the auditor's prompt (policy `audit_prompt` or the built-in), then
    /// start the auditor.
    pub(super) fn prepare_audit(&mut self) -> Result<(), EngineError> {
        match self.decide_audit_prompt()? {
            Ok(prompt) => {
                self.audit_prompt = Some(prompt);
                self.transition(Event::Next, None, None)
            }
            Err(e) => self.policy_failed(&e),
        }
    }

    /// REITERATION_PENDING: give up when the budget is spent, else start the worker again —
    /// on the same iteration and prompt after a pause, on the next one with the policy's
    /// `next_prompt` (feedback injection) otherwise.
    pub(super) fn reiterate(&mut self) -> Result<(), EngineError> {
        if self.file.rerun_iteration {
            self.file.rerun_iteration = false;
            return self.transition(Event::Next, Some("rerun after pause".into()), None);
        }
        let max = self.file.max_iterations;
        if self.file.iteration_count >= max {
            return self.transition(
                Event::MaxIterations,
                Some("max_iterations".into()),
                Some(format!(
                    "{max} of {max} iterations used without a DONE verdict"
                )),
            );
        }
        let prompt = match self.decide_next_prompt()? {
            Ok(p) => p,
            Err(e) => return self.policy_failed(&e),
        };
        self.file.iteration_count += 1;
        self.file.worker_prompt = prompt;
        self.transition(Event::Next, None, None)
    }

    /// RECOVERY_PENDING: ask the policy (or the built-in rule) what the evidence is worth.
    pub(super) fn salvage(&mut self) -> Result<(), EngineError> {
        let Some(evidence) = self.file.evidence.clone() else {
            // Journal order guarantees evidence is saved before RECOVERY_PENDING is entered;
            // a hand-edited file may still lack it.
            let e = self.gather_evidence(crate::executor::Stopped::oneshot_died());
            self.file.evidence = Some(e);
            return self.salvage();
        };
        let decision = match self.decide_salvage(&evidence)? {
            Ok(d) => d,
            Err(e) => return self.policy_failed(&e),
        };
        let paused = evidence.reason.is_some_and(|r| r.is_pause());
        if decision.salvage == Salvage::Partial && paused {
            self.file.rerun_iteration = true;
        }
        let reason = decision.reason.unwrap_or_else(|| {
            let what = match decision.salvage {
                Salvage::Success => "success",
                Salvage::Partial => "partial",
                Salvage::Nothing => "nothing",
            };
            let why = evidence.reason.map(|r| r.as_str()).unwrap_or("unknown");
            format!(
                "salvage {what} after {why} ({} changed files)",
                evidence.changed_files.len()
            )
        });
        self.transition(Event::Salvaged(decision.salvage), Some(reason), None)
    }
}
