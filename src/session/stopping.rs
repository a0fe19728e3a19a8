//! Stopping a running process: a timer that ran out, the user's interrupt (graceful first,
//! a kill after). Each stop is journaled with its reason before it is asked for.

use super::Effect;
use super::step::Step;
use crate::process::{Role, StopReason};
use crate::session::record::{InterruptRecord, ProcessEvent, Record};

impl Step<'_> {
    /// A clock ran out while the process ran.
    pub(super) fn timed_out(&mut self, why: StopReason) {
        let Some(role) = self.s.phase.role() else {
            return;
        };
        let Some(run) = self.s.phase.run_mut() else {
            return;
        };
        // A timer that fires after the process ended or while a stop is under way is stale.
        if run.process.is_none() || run.exited.is_some() || run.stopping.is_some() {
            return;
        }
        run.stopping = Some(why);
        self.stop(role, why);
    }

    /// Journals the stop, then asks for it.
    pub(super) fn stop(&mut self, role: Role, why: StopReason) {
        self.journal();
        self.process(role, ProcessEvent::Stopping { reason: why });
        let grace = self.limits().grace_period;
        self.out.push(Effect::Stop { grace });
    }

    /// The user asked to stop: the first ask stops the running process gracefully, a later
    /// (or forced) one kills it.
    pub(super) fn interrupt(&mut self, force: bool) {
        self.s.interrupts += 1;
        let record = Record::Interrupt(InterruptRecord {
            ts: self.now,
            force,
        });
        self.record(record);
        let kill = force || self.s.interrupts > 1;
        let Some(role) = self.s.phase.role() else {
            // Nothing runs: advance() stops at the next checkpoint.
            return;
        };
        let Some(run) = self.s.phase.run_mut() else {
            return;
        };
        if run.process.is_none() || run.exited.is_some() {
            return;
        }
        if run.stopping.is_none() {
            run.stopping = Some(StopReason::Interrupted);
            if !kill {
                return self.stop(role, StopReason::Interrupted);
            }
            self.journal();
        } else if !kill {
            // A stop is under way already (a timeout): let it finish; the session pauses at
            // the next checkpoint.
            return;
        }
        self.process(role, ProcessEvent::Killed);
        self.out.push(Effect::Kill);
    }
}
