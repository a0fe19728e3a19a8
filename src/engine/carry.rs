//! Carrying out what the decision core decided, in order.

use super::{Engine, EngineError, Observer, Update};
use crate::executor::{Control, FenceOutcome, fence};
use crate::session::{Effect, Event, Outcome, Report};
use std::collections::VecDeque;

/// How long an agent asked to stop through its protocol gets before its group is signalled.
const PROTOCOL_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Engine {
    /// Carries out one step's effects. Events they produce (a process started, an inspection
    /// came back) join `queue`; the outcome is returned when the core finished.
    ///
    /// Journals are written (atomically: temp file and rename) before the act that follows
    /// them, so a crash of oneshot at any instant leaves a state file naming what was under
    /// way; consecutive journals become one write. The fsyncs that make them survive a power
    /// loss come after the act, at the end of the step, so they never delay an agent's start
    /// or stop (a power loss ends the agents too).
    pub(super) async fn carry_out(
        &mut self,
        effects: Vec<Effect>,
        queue: &mut VecDeque<Event>,
        observer: &mut dyn Observer,
    ) -> Result<Option<Outcome>, EngineError> {
        let mut outcome = None;
        for effect in effects {
            match effect {
                Effect::Journal => self.dirty = true,
                Effect::Record(record) => self.write_record(record)?,
                Effect::Egress {
                    ask,
                    allow,
                    rule,
                    private_ok,
                } => {
                    let answer = super::egress::answer(allow, rule, private_ok);
                    self.egress.answer(ask, answer);
                }
                Effect::Snapshot => self.snapshot_workdir(observer)?,
                Effect::Spawn(spawn) => {
                    self.persist()?;
                    let mut cut_short = if spawn.delay.is_zero() {
                        None
                    } else {
                        self.back_off(spawn.delay, observer).await?
                    };
                    if cut_short.is_none() {
                        cut_short = self.keep_reserve(spawn.role, observer).await?;
                    }
                    let event = self.spawn(spawn, observer)?;
                    queue.push_back(event);
                    // After the start, so the core stops the process it now knows about.
                    queue.extend(cut_short);
                }
                Effect::Stop { grace } => {
                    self.persist()?;
                    self.control(Control::Stop(grace));
                    // The grace period can be long: the status line says `stopping…` now,
                    // not at the next tick.
                    self.report_status(observer);
                }
                Effect::Kill => {
                    self.persist()?;
                    self.control(Control::Kill);
                }
                Effect::Inspect { reason, exit } => {
                    queue.push_back(Event::Inspected(self.gather_evidence(reason, exit)));
                }
                Effect::Fence { process, grace } => {
                    self.persist()?;
                    let fenced = fence(&process, grace).await;
                    // And whatever that run started outside its group.
                    crate::executor::sweep(&self.session.id);
                    let what = match fenced {
                        Ok(FenceOutcome::AlreadyGone) => format!(
                            "the process group {} left by the previous oneshot was already gone",
                            process.pgid
                        ),
                        Ok(FenceOutcome::Killed { pgid }) => format!(
                            "stopped the process group {pgid} left running by the previous oneshot"
                        ),
                        Err(e) => {
                            let m = format!(
                                "{}; the process group left by the previous oneshot may still \
                                 be running",
                                crate::error::failure(&e)
                            );
                            self.warn_out_of_band(&m, observer)?;
                            m
                        }
                    };
                    queue.push_back(Event::Fenced(what));
                }
                Effect::Permit {
                    request_id,
                    allow,
                    reason,
                    input,
                } => {
                    if let Some(p) = self.process.as_mut() {
                        p.permit(&request_id, allow, reason.as_deref(), &input);
                    }
                }
                Effect::Check { checks, iteration } => {
                    self.persist()?;
                    let results = self.run_checks(checks, iteration, observer).await?;
                    queue.push_back(Event::Checked(results));
                }
                Effect::Deliver(say) => {
                    let delivery = match self.process.as_mut() {
                        Some(p) => p.say(&say),
                        None => crate::agent::Delivery::NextPrompt,
                    };
                    queue.push_back(Event::MessageDelivered {
                        id: say.id,
                        delivery,
                    });
                }
                Effect::StopBackground => {
                    if let Some(p) = self.process.as_mut() {
                        p.stop_background();
                    }
                }
                Effect::Report(report) => observer.update(self.update(report)),
                Effect::Finish(o) => outcome = Some(o),
            }
        }
        self.durable()?;
        Ok(outcome)
    }

    /// Before an act: the state file (if the session changed) and the log records so far
    /// reach the file system, so a crash of oneshot from here on leaves them behind.
    pub(super) fn persist(&mut self) -> Result<(), EngineError> {
        if std::mem::take(&mut self.dirty) {
            let sealed = self
                .redactor
                .seal(&self.session)
                .map_err(|e| self.sealing(e))?;
            self.dir.replace_state(&sealed)?;
            self.unsynced = true;
        }
        self.log.flush().map_err(|e| self.log_error(e))
    }

    /// The session could not be redacted for its state file: a bug, said as one.
    pub(super) fn sealing(&self, e: crate::redact::SealError) -> EngineError {
        EngineError::Internal {
            id: self.session.id.clone(),
            message: crate::error::failure(&e),
        }
    }

    /// At the end of a step: everything decided so far also survives a power loss.
    pub(super) fn durable(&mut self) -> Result<(), EngineError> {
        let wrote = self.dirty || self.unsynced;
        self.persist()?;
        if std::mem::take(&mut self.unsynced) {
            self.dir.sync_state()?;
        }
        if wrote {
            self.log.sync().map_err(|e| self.log_error(e))?;
        }
        Ok(())
    }

    /// Waits out a retry's backoff. An interrupt ends the wait and is returned, for the core
    /// to stop the run that starts next (the same path as any interrupt).
    async fn back_off(
        &mut self,
        delay: std::time::Duration,
        observer: &mut dyn Observer,
    ) -> Result<Option<Event>, EngineError> {
        self.durable()?;
        self.report_status(observer);
        Ok(self.wait_or_interrupt(delay).await)
    }

    /// Waits `delay`, unless an interrupt comes first: its event is returned then.
    pub(super) async fn wait_or_interrupt(&mut self, delay: std::time::Duration) -> Option<Event> {
        let until = tokio::time::Instant::now() + delay;
        tokio::select! {
            _ = tokio::time::sleep_until(until) => None,
            ask = self.interrupts.recv() => match ask {
                Some(ask) => Some(ask.event()),
                // Nobody can ask any more: only the clock ends the wait.
                None => {
                    tokio::time::sleep_until(until).await;
                    None
                }
            },
        }
    }

    fn control(&mut self, c: Control) {
        if let Some(p) = self.process.as_mut() {
            p.stopping = true;
            match c {
                // An agent with a protocol is asked first (Claude kills its own tools, ends
                // the turn and exits when its input closes); the group's SIGTERM follows if
                // it has not ended in a moment.
                Control::Stop(grace) if p.interrupt_by_protocol() => {
                    p.term_at = Some((tokio::time::Instant::now() + PROTOCOL_WAIT, grace));
                }
                c => {
                    p.term_at = None;
                    p.supervised.control(c);
                }
            }
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
