//! Taking up a session that failed only because its policy failed: a resume under a corrected
//! policy goes back into the phase the failed hook was asked in and makes the move that phase
//! was making, so the same question is asked of the new policy — and the worker's paid work is
//! kept.

use super::phase::{AuditRun, Phase};
use super::step::Step;

impl Step<'_> {
    /// FAILED by a policy error → `phase` (where the hook failed), then on as from there.
    pub(super) fn retake(&mut self, phase: Phase) {
        self.take_up(phase.clone());
        if self.s.state() != phase.state() {
            // The move back itself failed (an observer that fails closed failed again).
            return self.advance();
        }
        match phase {
            Phase::Created => self.begin(),
            Phase::Interrupted(_) => self.resume(),
            Phase::WorkerExecuting(run) => match (run.process, run.exited) {
                // The worker had ended and been inspected when a guard on its way out failed:
                // inspect again, and the guard is asked again.
                (_, Some(exit)) => self.inspect(run.stop_reason(exit), exit),
                (Some(_), None) => self.took_over(),
                (None, None) => self.advance(),
            },
            Phase::AuditorExecuting(AuditRun { run, .. }) => match (run.process, run.exited) {
                // Its answer is in the session: judge it again.
                (_, Some(exit)) if exit.success() && run.stopping.is_none() => self.judge(),
                (Some(_), None) => self.took_over(),
                _ => self.advance(),
            },
            _ => self.advance(),
        }
    }
}
