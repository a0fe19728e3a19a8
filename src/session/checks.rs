//! AUDITOR_EXECUTING's first half: the checks (seed 003 §5.2's hybrid validator). The audit is
//! "checks, then the auditor": the seed's table does not change, the auditor's run is only
//! preceded by commands any machine can run in a second. A failing check is a RETRY made here,
//! with the checks' critique, and no auditor is paid for; when all pass, the auditor's prompt
//! ends with their results.

use super::Reason;
use super::phase::{Next, Pause, Phase};
use super::step::{Awaiting, Step};
use crate::check::{self, CheckResult};
use crate::machine::{Trigger, Verdict};
use crate::process::{Role, StopReason};
use crate::session::record::{CheckRecord, Record};

impl Step<'_> {
    /// The audit's checks: the policy's (asked now, so a hook can look at what changed), then
    /// the session's own; none goes straight to the auditor.
    pub(super) fn run_checks(&mut self) {
        let policy = if self.d.has_checks() {
            match self.ask_checks() {
                Ok(c) => c,
                Err(e) => {
                    self.policy_failed(e);
                    return self.advance();
                }
            }
        } else {
            Vec::new()
        };
        let checks = check::merge(&policy, &self.s.settings.checks);
        if checks.is_empty() {
            return self.checks_passed(Vec::new());
        }
        self.s.awaiting = Some(Awaiting::Checks);
        self.journal();
        self.out.push(super::Effect::Check {
            checks,
            iteration: self.s.iteration,
        });
    }

    /// What the checks found.
    pub(super) fn checked(&mut self, results: Vec<CheckResult>) {
        if self.s.awaiting != Some(Awaiting::Checks) {
            return self.unexpected("check results");
        }
        self.s.awaiting = None;
        if !matches!(self.s.phase, Phase::AuditorExecuting(_)) {
            return self.unexpected("check results");
        }
        for r in &results {
            let record = Record::Check(CheckRecord {
                ts: self.now,
                iteration: self.s.iteration,
                result: r.clone(),
            });
            self.record(record);
        }
        self.s.checks.clone_from(&results);
        if results.iter().any(CheckResult::interrupted) {
            return self.checks_interrupted();
        }
        if check::first_failure(&results).is_some() {
            return self.checks_failed(&results);
        }
        self.checks_passed(results);
    }

    /// Every check passed (or there were none): the auditor, told what they found.
    fn checks_passed(&mut self, results: Vec<CheckResult>) {
        let Phase::AuditorExecuting(audit) = &mut self.s.phase else {
            return self.unexpected("check results");
        };
        audit.checked = true;
        if !results.is_empty() {
            let section = check::prompt_section(&results);
            audit.prompt = format!("{}\n\n{section}", audit.prompt);
        }
        self.journal();
        self.advance();
    }

    /// A check failed: RETRY with the checks' critique, as an auditor's RETRY would be.
    fn checks_failed(&mut self, results: &[CheckResult]) {
        let critique = self.d.redact(&check::critique(results)).into_owned();
        let failed = results
            .iter()
            .filter(|r| !r.passed())
            .map(|r| format!("{} ({})", r.name, r.status()))
            .collect();
        self.s.last_verdict = Some(super::VerdictRecord {
            verdict: Verdict::Retry,
            reason: Some(critique),
            confidence: None,
            open_criteria: Vec::new(),
            open_criteria_streak: 0,
        });
        let next = Phase::ReiterationPending(Next::Iteration);
        let reason = Some(Reason::ChecksFailed { checks: failed });
        self.transition(Trigger::Verdict(Verdict::Retry), next, reason);
        self.advance();
    }

    /// The user stopped a check (the engine ran them and heard the interrupt; the check's
    /// record says so, so no `interrupt` record is written: replay would give it twice): the
    /// session pauses as an interrupted auditor does, and a resume audits again, checks first.
    fn checks_interrupted(&mut self) {
        self.s.interrupts += 1;
        let role = Role::Auditor;
        let pause = Pause {
            during: role,
            cause: StopReason::Interrupted,
            retake: None,
        };
        let reason = Some(Reason::Interrupted { role });
        self.transition(Trigger::Interrupt, Phase::Interrupted(pause), reason);
        self.advance();
    }
}
