//! One transition: table check, guard, journal (state file + log, fsynced), observer.

use super::Engine;
use super::EngineError;
use super::ctx::{now_ms, rfc3339_now};
use super::records::StateChange;
use crate::machine::{Event, SessionState, next};
use crate::policy::{FailMode, GuardOutcome, PolicyError};
use crate::store::HistoryEntry;

impl Engine {
    /// Moves the session by `event`. The table decides whether the move exists; the policy's
    /// guard may veto it, which sends the session to FAILED instead. Moves to FAILED (the
    /// fallback) and INTERRUPTED (the user's Ctrl-C) are never asked about: a guard can stop
    /// progress, but not a stop.
    pub(super) fn transition(
        &mut self,
        event: Event,
        reason: Option<String>,
        detail: Option<String>,
    ) -> Result<(), EngineError> {
        let from = self.file.state;
        let to = next(from, event).map_err(|source| EngineError::Illegal {
            id: self.file.oneshot_id.clone(),
            source,
        })?;
        // A transition boundary: the guard and the observer are asked by the newest policy.
        self.refresh_policy()?;
        if to != SessionState::Failed && to != SessionState::Interrupted {
            match self.decide_guard(from, to)? {
                Ok(GuardOutcome::Allow) => {}
                Ok(GuardOutcome::Veto(why)) => {
                    let why = format!("guard vetoed {from} -> {to}: {why}");
                    return self.commit(SessionState::Failed, Some(why), None);
                }
                Err(e)
                    if self.policy().fail_mode(e.hook().unwrap_or("guard")) == FailMode::Open =>
                {
                    self.warn(&format!(
                        "guard {from} -> {to} failed and fails open (on_error): {e}"
                    ))?;
                }
                Err(e) => return self.policy_failed(&e),
            }
        }
        self.commit(to, reason, detail)?;
        if let Err(e) = self.observe_transition(from, to)? {
            // An observer fails open by default: it cannot undo a transition that happened,
            // and its failure must not end a healthy session. A policy that declares
            // `on_error = { on_transition = "closed" }` wants the session stopped instead.
            if self.policy().fail_mode("on_transition") == FailMode::Closed && !to.is_terminal() {
                return self.policy_failed(&e);
            }
            self.warn(&format!("on_transition failed after {from} -> {to}: {e}"))?;
        }
        Ok(())
    }

    /// A hook broke its contract: FAILED with reason `policy_error` and the message (which
    /// carries file:line) as detail.
    pub(super) fn policy_failed(&mut self, e: &PolicyError) -> Result<(), EngineError> {
        let to = next(self.file.state, Event::Abort).map_err(|source| EngineError::Illegal {
            id: self.file.oneshot_id.clone(),
            source,
        })?;
        self.commit(to, Some("policy_error".into()), Some(e.to_string()))
    }

    /// Journals `to`: the state file first (atomic), then the log record, fsynced.
    fn commit(
        &mut self,
        to: SessionState,
        reason: Option<String>,
        detail: Option<String>,
    ) -> Result<(), EngineError> {
        let from = self.file.state;
        let reason = reason.map(|r| self.redactor.redact(&r).into_owned());
        let detail = detail.map(|d| self.redactor.redact(&d).into_owned());
        let ts = now_ms();
        self.file.state = to;
        self.file.updated_at = rfc3339_now();
        self.file.history.push(HistoryEntry {
            state: to,
            ts,
            reason: reason.clone(),
            detail: detail.clone(),
            pid: None,
            iteration: self.file.iteration_count,
            policy_hash: self.policy().hash().to_string(),
            generation: self.slot.generation(),
        });
        self.save()?;
        let record = StateChange {
            ts,
            kind: "state_change",
            from,
            to,
            iteration: self.file.iteration_count,
            reason: reason.as_deref(),
            detail: detail.as_deref(),
            policy_hash: self.slot.current().hash(),
            generation: self.slot.generation(),
        };
        self.log
            .append(&record)
            .and_then(|()| self.log.sync())
            .map_err(|source| self.log_error(source))?;
        let status = self.status(std::time::Duration::ZERO);
        self.reporter
            .transition(&status, from, to, reason.as_deref());
        Ok(())
    }
}
