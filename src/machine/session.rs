//! The transition table of seed 000 §2.2, plus the resume rows of §3.2 and the policy
//! fallback row of ARCHITECTURE.md.

use super::{Salvage, SessionState, Trigger, Verdict};

/// A trigger the table does not allow in that state. Never a silent no-op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("trigger {trigger:?} is not allowed in state {state}")]
pub struct Illegal {
    /// The state the session was in.
    pub state: SessionState,
    /// The trigger that has no row there.
    pub trigger: Trigger,
}

/// The next state for `trigger` in `state`, or [`Illegal`].
///
/// | from | trigger | to |
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
/// | FAILED (by a policy error) | retake under a corrected policy | the state the hook was asked in |
/// | any non-terminal but INTERRUPTED | a hook interrupted by the user | INTERRUPTED |
/// | INTERRUPTED (a hook interrupted) | resume | the state the hook was asked in |
///
/// The last three rows are not seed 000's. Where FAILED is final there, a session that failed
/// only because its policy failed keeps its paid work and asks the failed question again (issue
/// 19); and a Ctrl-C during a long hook pauses wherever the hook was asked, as one during an
/// agent run does, and the resume asks the hook again (issue 20). Only the session core knows
/// these causes, so it alone takes those rows.
pub fn next(state: SessionState, trigger: Trigger) -> Result<SessionState, Illegal> {
    use SessionState as S;
    use Trigger as T;
    let to = match (state, trigger) {
        (S::Created, T::Run) => S::WorkerExecuting,

        (S::WorkerExecuting, T::ExitedOk) => S::AuditPending,
        (S::WorkerExecuting, T::Timeout | T::ExitedErr) => S::RecoveryPending,
        (S::WorkerExecuting | S::AuditorExecuting, T::Interrupt) => S::Interrupted,

        (S::RecoveryPending, T::Salvaged(Salvage::Success)) => S::AuditPending,
        (S::RecoveryPending, T::Salvaged(Salvage::Partial)) => S::ReiterationPending,
        (S::RecoveryPending, T::Salvaged(Salvage::Nothing)) => S::Failed,

        (S::AuditPending, T::Next) => S::AuditorExecuting,

        (S::AuditorExecuting, T::Verdict(Verdict::Done)) => S::Completed,
        (S::AuditorExecuting, T::Verdict(Verdict::Retry)) => S::ReiterationPending,
        (S::AuditorExecuting, T::Verdict(Verdict::Impossible)) => S::Rejected,
        (S::AuditorExecuting, T::ExitedErr | T::Timeout) => S::Failed,

        (S::ReiterationPending, T::Next) => S::WorkerExecuting,
        (S::ReiterationPending, T::MaxIterations) => S::Failed,

        // Seed 000 §3.2: the interrupted worker might have finished its work, so inspect it;
        // an interrupted auditor is simply run again.
        (
            S::Interrupted,
            T::Resume {
                last_active: S::WorkerExecuting,
            },
        ) => S::RecoveryPending,
        (
            S::Interrupted,
            T::Resume {
                last_active: S::AuditorExecuting | S::AuditPending,
            },
        ) => S::AuditPending,

        (s, T::Abort) if !s.is_terminal() => S::Failed,

        (S::Failed, T::Retake { to }) if !to.is_terminal() => to,

        (s, T::HookInterrupted) if !s.is_terminal() && s != S::Interrupted => S::Interrupted,
        (S::Interrupted, T::Retake { to }) if !to.is_terminal() && to != S::Interrupted => to,

        _ => return Err(Illegal { state, trigger }),
    };
    Ok(to)
}

/// Every (from, to) pair some trigger can produce, for validating guard keys such as
/// `"AUDIT_PENDING -> AUDITOR_EXECUTING"`: a guard on a transition that never happens is a typo.
pub fn edges() -> Vec<(SessionState, SessionState)> {
    use crate::machine::{Salvage as Sv, Verdict as V};
    let mut events = vec![
        Trigger::Run,
        Trigger::ExitedOk,
        Trigger::ExitedErr,
        Trigger::Timeout,
        Trigger::Interrupt,
        Trigger::Next,
        Trigger::MaxIterations,
        Trigger::Abort,
    ];
    events.extend([Sv::Success, Sv::Partial, Sv::Nothing].map(Trigger::Salvaged));
    events.extend([V::Done, V::Retry, V::Impossible].map(Trigger::Verdict));
    events.extend(SessionState::ALL.map(|last_active| Trigger::Resume { last_active }));
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
