//! The transition table of seed 000 §2.2, plus the resume rows of §3.2 and the policy
//! fallback row of ARCHITECTURE.md.

use super::{Event, Salvage, SessionState, Verdict};

/// An event the table does not allow in that state. Never a silent no-op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("event {event:?} is not allowed in state {state}")]
pub struct Illegal {
    /// The state the session was in.
    pub state: SessionState,
    /// The event that has no row there.
    pub event: Event,
}

/// The next state for `event` in `state`, or [`Illegal`].
///
/// | from | event | to |
/// | --- | --- | --- |
/// | CREATED | run | WORKER_EXECUTING |
/// | WORKER_EXECUTING | exit 0 | AUDIT_PENDING |
/// | WORKER_EXECUTING | inactivity / timeout, exit ≠ 0 | RECOVERY_PENDING |
/// | WORKER_EXECUTING, AUDITOR_EXECUTING | interrupt | INTERRUPTED |
/// | RECOVERY_PENDING | salvage success / partial / nothing | AUDIT_PENDING / REITERATION_PENDING / FAILED |
/// | AUDIT_PENDING | next | AUDITOR_EXECUTING |
/// | AUDITOR_EXECUTING | verdict done / retry / impossible | COMPLETED / REITERATION_PENDING / REJECTED |
/// | AUDITOR_EXECUTING | exit ≠ 0, timeout | FAILED |
/// | REITERATION_PENDING | next / max iterations | WORKER_EXECUTING / FAILED |
/// | INTERRUPTED | resume (last active WORKER_EXECUTING / AUDITOR_EXECUTING) | RECOVERY_PENDING / AUDIT_PENDING |
/// | any non-terminal | abort (guard veto, policy error) | FAILED |
pub fn next(state: SessionState, event: Event) -> Result<SessionState, Illegal> {
    use Event as E;
    use SessionState as S;
    let to = match (state, event) {
        (S::Created, E::Run) => S::WorkerExecuting,

        (S::WorkerExecuting, E::ExitedOk) => S::AuditPending,
        (S::WorkerExecuting, E::Timeout | E::ExitedErr) => S::RecoveryPending,
        (S::WorkerExecuting | S::AuditorExecuting, E::Interrupt) => S::Interrupted,

        (S::RecoveryPending, E::Salvaged(Salvage::Success)) => S::AuditPending,
        (S::RecoveryPending, E::Salvaged(Salvage::Partial)) => S::ReiterationPending,
        (S::RecoveryPending, E::Salvaged(Salvage::Nothing)) => S::Failed,

        (S::AuditPending, E::Next) => S::AuditorExecuting,

        (S::AuditorExecuting, E::Verdict(Verdict::Done)) => S::Completed,
        (S::AuditorExecuting, E::Verdict(Verdict::Retry)) => S::ReiterationPending,
        (S::AuditorExecuting, E::Verdict(Verdict::Impossible)) => S::Rejected,
        (S::AuditorExecuting, E::ExitedErr | E::Timeout) => S::Failed,

        (S::ReiterationPending, E::Next) => S::WorkerExecuting,
        (S::ReiterationPending, E::MaxIterations) => S::Failed,

        // Seed 000 §3.2: the interrupted worker might have finished its work, so inspect it;
        // an interrupted auditor is simply run again.
        (
            S::Interrupted,
            E::Resume {
                last_active: S::WorkerExecuting,
            },
        ) => S::RecoveryPending,
        (
            S::Interrupted,
            E::Resume {
                last_active: S::AuditorExecuting | S::AuditPending,
            },
        ) => S::AuditPending,

        (s, E::Abort) if !s.is_terminal() => S::Failed,

        _ => return Err(Illegal { state, event }),
    };
    Ok(to)
}

/// Every (from, to) pair some event can produce, for validating guard keys such as
/// `"AUDIT_PENDING -> AUDITOR_EXECUTING"`: a guard on a transition that never happens is a typo.
pub fn edges() -> Vec<(SessionState, SessionState)> {
    use crate::machine::{Salvage as Sv, Verdict as V};
    let mut events = vec![
        Event::Run,
        Event::ExitedOk,
        Event::ExitedErr,
        Event::Timeout,
        Event::Interrupt,
        Event::Next,
        Event::MaxIterations,
        Event::Abort,
    ];
    events.extend([Sv::Success, Sv::Partial, Sv::Nothing].map(Event::Salvaged));
    events.extend([V::Done, V::Retry, V::Impossible].map(Event::Verdict));
    events.extend(SessionState::ALL.map(|last_active| Event::Resume { last_active }));
    let mut out = Vec::new();
    for from in SessionState::ALL {
        for &ev in &events {
            if let Ok(to) = next(from, ev)
                && !out.contains(&(from, to))
            {
                out.push((from, to));
            }
        }
    }
    out
}
