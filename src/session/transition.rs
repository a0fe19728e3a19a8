//! One transition: the table says whether it exists, the policy's guard whether it is wise,
//! then it is journaled and the observer told. Failures go to the fallback (FAILED) with the
//! reason recorded, as ARCHITECTURE.md's one rule says.

use super::step::Step;
use super::{Effect, HookError, Phase, Reason, Report};
use crate::machine::{SessionState, Trigger, next};
use crate::policy::{FailMode, GuardOutcome};
use crate::session::record::{Record, StateChange};

impl Step<'_> {
    /// Moves the session by `trigger` into `phase`. A guard veto, a failing guard or observer
    /// (when it fails closed), or a move the table does not have ends in FAILED instead.
    /// Moves to FAILED (the fallback) and INTERRUPTED (the user's pause) are never asked about:
    /// a guard can stop progress, but not a stop.
    pub(super) fn transition(&mut self, trigger: Trigger, phase: Phase, reason: Option<Reason>) {
        let from = self.s.state();
        let to = match next(from, trigger) {
            Ok(to) if to == phase.state() => to,
            Ok(to) => {
                return self.internal(format!(
                    "{trigger:?} leads from {from} to {to}, not to {}",
                    phase.state()
                ));
            }
            Err(e) => return self.internal(e.to_string()),
        };
        if to != SessionState::Failed && to != SessionState::Interrupted {
            match self.ask_guard(from, to) {
                Ok(GuardOutcome::Allow) => {}
                Ok(GuardOutcome::Veto(why)) => {
                    let why = self.d.redact(&why).into_owned();
                    return self.enter(Phase::failed(), Some(Reason::GuardVeto { from, to, why }));
                }
                Err(e) if e.interrupted() => return self.hook_interrupted(e.hook),
                Err(e) if self.d.fail_mode(&e.hook) == FailMode::Open => {
                    self.warn(&format!(
                        "{}; the guard fails open (on_error), so {from} -> {to} goes ahead",
                        e.message
                    ));
                }
                Err(e) => return self.policy_failed(e),
            }
        }
        self.enter(phase, reason);
    }

    /// Commits `phase` and tells the observer. An observer fails open by default: it cannot
    /// undo a transition that happened, and its failure must not end a healthy session; a
    /// policy that declares `on_error = { on_transition = "closed" }` wants it to.
    fn enter(&mut self, phase: Phase, reason: Option<Reason>) {
        let from = self.s.state();
        self.commit(phase, reason);
        let to = self.s.state();
        if let Err(e) = self.ask_on_transition(from, to) {
            if e.interrupted() {
                // The move happened; the pause comes after it, and a resume goes on from here.
                return self.hook_interrupted(e.hook);
            }
            if self.d.fail_mode("on_transition") == FailMode::Closed && !to.is_terminal() {
                self.policy_failed(e);
            } else {
                let then = if to.is_terminal() {
                    "the session has ended anyway"
                } else {
                    "on_transition fails open, so the session goes on"
                };
                self.warn(&format!("after {from} -> {to}: {}; {then}", e.message));
            }
        }
    }

    /// A hook broke its contract: FAILED with reason `policy_error`, remembering the phase the
    /// hook was asked in, so a resume under a corrected policy can ask again there.
    pub(super) fn policy_failed(&mut self, e: HookError) {
        if e.interrupted() {
            return self.hook_interrupted(e.hook);
        }
        if self.s.state().is_terminal() {
            return self.warn(&format!("{} (after the session ended)", e.message));
        }
        let reason = Reason::PolicyError {
            hook: e.hook,
            error_kind: e.kind,
            message: self.d.redact(&e.message).into_owned(),
        };
        let retake = Some(Box::new(self.s.phase.clone()));
        self.enter(Phase::Failed(super::Failed { retake }), Some(reason));
    }

    /// The user interrupted `hook` while it ran (Ctrl-C): nothing was decided, so the session
    /// pauses in INTERRUPTED remembering the phase the hook was asked in, and a resume asks it
    /// again there — as a Ctrl-C during an agent run pauses, not fails.
    pub(super) fn hook_interrupted(&mut self, hook: String) {
        let state = self.s.state();
        if state.is_terminal() || state == SessionState::Interrupted {
            // Already paused or ended: nothing to go back to.
            return self.warn(&format!("hook {hook} was interrupted while it ran"));
        }
        if let Err(e) = next(state, Trigger::HookInterrupted) {
            return self.internal(e.to_string());
        }
        let here = self.s.phase.clone();
        let during = match &here {
            Phase::AuditPending | Phase::AuditorExecuting(_) => crate::process::Role::Auditor,
            _ => crate::process::Role::Worker,
        };
        let pause = super::Pause {
            during,
            cause: crate::process::StopReason::Interrupted,
            retake: Some(Box::new(here)),
        };
        self.enter(
            Phase::Interrupted(pause),
            Some(Reason::HookInterrupted { hook }),
        );
    }

    /// FAILED by a policy error, now driven under another policy (or INTERRUPTED in a hook, now
    /// resumed): back into the phase the hook was asked in (the table's retake row; no guard is asked — the user chose
    /// this), recorded with the hook that is asked again.
    pub(super) fn take_up(&mut self, phase: Phase) {
        let from = self.s.state();
        let to = phase.state();
        if let Err(e) = next(from, Trigger::Retake { to }) {
            return self.internal(e.to_string());
        }
        let hook = match self.s.last_reason() {
            Some(Reason::PolicyError { hook, .. } | Reason::HookInterrupted { hook }) => {
                hook.clone()
            }
            _ => "the policy".to_string(),
        };
        let policy = self.d.policy().hash;
        self.enter(phase, Some(Reason::Retake { hook, policy }));
    }

    /// A move the core itself got wrong: reported, and the session fails rather than going on
    /// in a state nobody designed.
    fn internal(&mut self, message: String) {
        self.warn(&format!("internal error: {message}"));
        if !self.s.state().is_terminal() {
            self.commit(Phase::failed(), Some(Reason::Internal { message }));
        }
    }

    /// Journals `phase`: history entry, state file, `state_change` record, report.
    fn commit(&mut self, phase: Phase, reason: Option<Reason>) {
        let from = self.s.state();
        let to = phase.state();
        let policy = self.d.policy();
        self.s.phase = phase;
        self.s.updated_ms = self.now;
        self.s.history.push(super::HistoryEntry {
            state: to,
            ts: self.now,
            reason: reason.clone(),
            pid: None,
            iteration: self.s.iteration,
            policy_hash: policy.hash.clone(),
            generation: policy.generation,
        });
        self.journal();
        if let Some(scratch) = self.unrecorded.as_deref_mut() {
            scratch.moves.push(scratch.asked);
        } else {
            self.record(Record::StateChange(StateChange {
                ts: self.now,
                from,
                to,
                iteration: self.s.iteration,
                reason: reason.clone(),
                policy_hash: policy.hash,
                generation: policy.generation,
            }));
        }
        self.out.push(Effect::Report(Report::Transition {
            from,
            to,
            iteration: self.s.iteration,
            max_iterations: self.s.max_iterations,
            reason,
        }));
    }
}
