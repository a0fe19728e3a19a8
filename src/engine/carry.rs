//! Carrying out what the decision core decided, in order.

use super::{Engine, EngineError, Observer, Update};
use crate::executor::{Control, FenceOutcome, fence};
use crate::session::{Effect, Event, Outcome, Report};
use std::collections::VecDeque;

impl Engine {
    /// Carries out one step's effects. Events they produce (a process started, an inspection
    /// came back) join `queue`; the outcome is returned when the core finished.
    ///
    /// Consecutive journals are written once, before the next act or at the end of the step:
    /// only the state as of the act matters for a crash, and each write costs two fsyncs.
    pub(super) async fn carry_out(
        &mut self,
        effects: Vec<Effect>,
        queue: &mut VecDeque<Event>,
        observer: &mut dyn Observer,
    ) -> Result<Option<Outcome>, EngineError> {
        let mut outcome = None;
        let mut sync = false;
        for effect in effects {
            match effect {
                Effect::Journal => {
                    self.dirty = true;
                    sync = true;
                }
                Effect::Record(record) => self.write_record(record)?,
                Effect::Snapshot => self.snapshot_workdir(observer)?,
                Effect::Spawn(spawn) => {
                    self.durable()?;
                    sync = false;
                    queue.push_back(self.spawn(spawn));
                }
                Effect::Stop { grace } => {
                    self.durable()?;
                    sync = false;
                    self.control(Control::Stop(grace));
                }
                Effect::Kill => {
                    self.durable()?;
                    sync = false;
                    self.control(Control::Kill);
                }
                Effect::Inspect { reason, exit } => {
                    queue.push_back(Event::Inspected(self.gather_evidence(reason, exit)));
                }
                Effect::Fence { process, grace } => {
                    self.durable()?;
                    sync = false;
                    let what = match fence(&process, grace).await {
                        Ok(FenceOutcome::AlreadyGone) => format!(
                            "the process group {} left by the previous oneshot was already gone",
                            process.pgid
                        ),
                        Ok(FenceOutcome::Killed { pgid }) => format!(
                            "stopped the process group {pgid} left running by the previous oneshot"
                        ),
                        Err(e) => {
                            let m = format!(
                                "could not stop the process group {} left by the previous \
                                 oneshot: {e}",
                                process.pgid
                            );
                            self.warn_out_of_band(&m, observer)?;
                            m
                        }
                    };
                    queue.push_back(Event::Fenced(what));
                }
                Effect::Report(report) => observer.update(self.update(report)),
                Effect::Finish(o) => outcome = Some(o),
            }
        }
        if sync {
            self.durable()?;
        }
        Ok(outcome)
    }

    /// Writes the state file if the session changed, and syncs the log: everything decided
    /// so far survives a crash.
    pub(super) fn durable(&mut self) -> Result<(), EngineError> {
        if std::mem::take(&mut self.dirty) {
            self.dir.write_state(&self.session)?;
        }
        self.log.sync().map_err(|e| self.log_error(e))
    }

    fn control(&mut self, c: Control) {
        if let Some(p) = self.process.as_mut() {
            p.stopping = true;
            p.supervised.control(c);
        }
    }

    fn update(&self, report: Report) -> Update {
        match report {
            Report::Transition {
                from,
                to,
                iteration,
                max_iterations,
                reason,
            } => Update::Transition {
                session_id: self.session.id.clone(),
                from,
                to,
                iteration,
                max_iterations,
                reason,
            },
            Report::Warning(w) => Update::Warning(w),
            Report::Note(n) => Update::Note(n),
        }
    }
}
