//! Picking a session up again: after a fence (the dead oneshot's agent is stopped, or was
//! gone), the run that was executing is recorded as what it really was, and the session resumes
//! as seed 000 §3.2 says.

use super::Reason;
use super::phase::{ExitStatus, Pause, Phase};
use super::step::{Awaiting, Step};
use crate::machine::{SessionState, Trigger};
use crate::process::{Role, StopReason};
use crate::session::record::ProcessEvent;

impl Step<'_> {
    pub(super) fn fenced(&mut self, outcome: String) {
        if self.s.awaiting != Some(Awaiting::Fence) {
            return self.unexpected("a fence result");
        }
        self.s.awaiting = None;
        let Some(role) = self.s.phase.role() else {
            return self.unexpected("a fence result");
        };
        self.process(role, ProcessEvent::Fenced { outcome });
        if let Some(run) = self.s.phase.run_mut() {
            run.process = None;
        }
        self.took_over();
    }

    /// The session was executing when this oneshot found it, and nothing of that run is left:
    /// record what it really was — a stop finishes as the stop it was, anything else was an
    /// interruption by oneshot's death — then resume as the seed says.
    pub(super) fn took_over(&mut self) {
        let Some(role) = self.s.phase.role() else {
            return;
        };
        let run = self.s.phase.run().cloned().unwrap_or_default();
        match (role, run.stopping) {
            (
                Role::Worker,
                Some(why @ (StopReason::InactivityTimeout | StopReason::WorkerTimeout)),
            ) => {
                self.inspect(Some(why), run.exited.unwrap_or_default());
            }
            (
                Role::Auditor,
                Some(why @ (StopReason::InactivityTimeout | StopReason::WorkerTimeout)),
            ) => {
                let reason = Some(Reason::TimedOut { role, why });
                self.transition(Trigger::Timeout, Phase::failed(), reason);
                self.advance();
            }
            (_, stopping) => {
                let (cause, reason) = match stopping {
                    Some(StopReason::Interrupted) => {
                        (StopReason::Interrupted, Reason::Interrupted { role })
                    }
                    _ => (StopReason::OneshotDied, Reason::OneshotDied { role }),
                };
                let pause = Pause {
                    during: role,
                    cause,
                    retake: None,
                };
                self.transition(Trigger::Interrupt, Phase::Interrupted(pause), Some(reason));
                if matches!(self.s.phase, Phase::Interrupted(_)) {
                    self.resume();
                } else {
                    self.advance();
                }
            }
        }
    }

    /// INTERRUPTED → seed 000 §3.2: an interrupted worker's leftovers are inspected; an
    /// interrupted auditor simply runs again.
    pub(super) fn resume(&mut self) {
        let Phase::Interrupted(pause) = self.s.phase.clone() else {
            return;
        };
        match pause.during {
            Role::Worker => self.inspect(Some(pause.cause), ExitStatus::default()),
            Role::Auditor => {
                let reason = Some(Reason::Resumed { after: pause.cause });
                let trigger = Trigger::Resume {
                    last_active: SessionState::AuditorExecuting,
                };
                self.transition(trigger, Phase::AuditPending, reason);
                self.advance();
            }
        }
    }
}
