//! Continuing a session: fencing off what a crashed oneshot left running, and the resume rows
//! of seed 000 §3.2.

use super::Engine;
use super::EngineError;
use crate::executor::{ProcessIdentity, StopReason, Stopped, fence};
use crate::machine::{Event, SessionState};

impl Engine {
    /// A state file that says *_EXECUTING while we hold the lock means the oneshot that ran the
    /// process died (kill -9, crash, power loss). Kill whatever of its process group survived,
    /// then record the interruption it really was, so the ordinary resume rules apply.
    pub(super) async fn take_over_crashed_run(&mut self) -> Result<(), EngineError> {
        if !self.file.state.is_executing() {
            return Ok(());
        }
        let process = self.file.active_process.take();
        if let Some(p) = process {
            let identity = ProcessIdentity {
                pid: p.pid,
                pgid: p.pgid,
                start_time: p.start_time,
            };
            let grace = self.policy().limits().grace_period;
            match fence(&identity, grace).await {
                Ok(outcome) => {
                    let msg = format!(
                        "fenced the {} process group {} left by the previous oneshot: {outcome:?}",
                        p.role, p.pgid
                    );
                    self.note("recovery", &msg)?;
                }
                Err(e) => self.warn(&format!(
                    "could not fence the {} process group {}: {e}",
                    p.role, p.pgid
                ))?,
            }
        }
        let detail = Some("oneshot stopped while the process ran; found on resume".to_string());
        // A stop that was journaled but never recorded as done finishes as what it was.
        match process.and_then(|p| p.stopping) {
            Some(r @ (StopReason::InactivityTimeout | StopReason::WorkerTimeout)) => {
                if self.file.state == SessionState::WorkerExecuting {
                    self.file.evidence = Some(self.gather_evidence(Stopped {
                        reason: r,
                        exit_code: None,
                        signal: None,
                    }));
                }
                let reason = match self.file.state {
                    SessionState::AuditorExecuting => format!("auditor_{r}"),
                    _ => r.as_str().to_string(),
                };
                self.transition(Event::Timeout, Some(reason), detail)
            }
            Some(StopReason::Interrupted) => self.transition(
                Event::Interrupt,
                Some(StopReason::Interrupted.as_str().into()),
                detail,
            ),
            _ => self.transition(
                Event::Interrupt,
                Some(StopReason::OneshotDied.as_str().into()),
                detail,
            ),
        }
    }

    /// INTERRUPTED → the state the last active one resumes into (seed 000 §3.2): an
    /// interrupted worker may have finished its work, so its leftovers are inspected; an
    /// interrupted auditor simply runs again.
    pub(super) fn resume_interrupted(&mut self) -> Result<(), EngineError> {
        let last = self.file.last_active_state();
        match last {
            Some(SessionState::WorkerExecuting) => {
                let why = match self.file.history.last().and_then(|h| h.reason.as_deref()) {
                    Some("oneshot_died") => StopReason::OneshotDied,
                    _ => StopReason::Interrupted,
                };
                let evidence = self.gather_evidence(Stopped {
                    reason: why,
                    exit_code: None,
                    signal: None,
                });
                self.file.evidence = Some(evidence);
                self.transition(
                    Event::Resume {
                        last_active: SessionState::WorkerExecuting,
                    },
                    Some(format!("resumed after {}", why.as_str())),
                    None,
                )
            }
            Some(last_active) => {
                self.transition(Event::Resume { last_active }, Some("resumed".into()), None)
            }
            None => self.transition(
                Event::Abort,
                Some("cannot_resume".into()),
                Some("the history records no interrupted process to resume".into()),
            ),
        }
    }
}
