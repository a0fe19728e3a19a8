//! The loop: wait for something to happen, turn it into an event, step, carry out.

use super::{Engine, EngineError, Observer, ProcessClock, Status, Update};
use crate::pipeline::now_ms;
use crate::process::StopReason;
use crate::session::{Effect, Event, Outcome};
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::{Instant, sleep_until};

/// How often the status line refreshes.
const TICK: Duration = Duration::from_secs(1);

/// How soon output reaches the log file after it arrived — for `oneshot log --follow`, and for
/// the runner's shipment to the job store that a dashboard streams (its line → browser figure
/// counts this wait, after the executor's gathering of a trickle, 50 ms). Writes are batched up to it: one write for a burst, not one a line.
const FLUSH: Duration = Duration::from_millis(20);

impl Engine {
    /// Runs the session until it reaches a terminal state or is interrupted, telling
    /// `observer` what happens. Works on any tokio runtime (time and I/O enabled): agents are
    /// spawned from the thread polling this future, which lives as long as the runtime, so
    /// their parent-death signal fires only when oneshot really goes.
    pub async fn run(&mut self, observer: &mut dyn Observer) -> Result<Outcome, EngineError> {
        for w in std::mem::take(&mut self.warnings) {
            self.warn_out_of_band(&w, observer)?;
        }
        for n in std::mem::take(&mut self.notes) {
            self.tell_out_of_band(&n, false, observer)?;
        }
        let mut queue = VecDeque::new();
        // Messages said while nobody drove the session come first: its first worker's prompt
        // carries them.
        self.read_inbox(&mut queue, observer)?;
        queue.push_back(Event::Start);
        let mut flush_at: Option<Instant> = None;
        let mut tick_at = Instant::now() + TICK;
        loop {
            while let Some(event) = queue.pop_front() {
                if self.poll_policy(observer)? {
                    let effects = self.step(Event::PolicyChanged);
                    self.carry_out(effects, &mut queue, observer).await?;
                }
                let effects = self.step(event);
                if let Some(outcome) = self.carry_out(effects, &mut queue, observer).await? {
                    self.durable()?;
                    self.clear_inbox();
                    return Ok(outcome);
                }
                self.clear_inbox();
            }
            let Some(p) = self.process.as_mut() else {
                // The core always asks for something or finishes; waiting here would hang.
                return Err(EngineError::Internal {
                    id: self.session.id.clone(),
                    message: format!(
                        "the session waits for nothing in state {}",
                        self.session.state()
                    ),
                });
            };
            let term = p.term_at.map(|(at, _)| at);
            let idle = p.idle_deadline();
            let wall = p.wall_deadline();
            let background = p.background_deadline();
            let ticking = observer.wants_status()
                || self.slot.pending_untrusted().is_some()
                || self.inbox.polled();
            let reload = self.slot.signal();
            let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
            tokio::select! {
                ev = p.supervised.events.recv() => {
                    self.on_process(ev, observer, &mut queue)?;
                    // Whether or not the event made work for the core: output that made some
                    // (an agent's progress) must reach the file as soon as output that did not.
                    if flush_at.is_none() {
                        flush_at = Some(Instant::now() + FLUSH);
                    }
                }
                Some(ask) = self.egress.asks.recv() => {
                    queue.push_back(self.egress.asked(ask));
                }
                Some(report) = self.egress.events.recv() => {
                    queue.extend(self.egress.reported(report, now_ms()));
                }
                Some(()) = self.inbox.changed.recv() => {
                    self.read_inbox(&mut queue, observer)?;
                }
                // The engine holds a sender itself, so the channel never closes.
                Some(ask) = self.interrupts.recv() => queue.push_back(ask.event()),
                _ = sleep_until(idle.unwrap_or(far)), if idle.is_some() => {
                    queue.push_back(Event::TimedOut(StopReason::InactivityTimeout));
                }
                _ = sleep_until(wall.unwrap_or(far)), if wall.is_some() => {
                    queue.push_back(Event::TimedOut(StopReason::WorkerTimeout));
                }
                _ = sleep_until(background.unwrap_or(far)), if background.is_some() => {
                    if let Some(p) = self.process.as_mut() {
                        // Timed once: the core decides, and the stop it asks for ends the wait.
                        p.background_over = true;
                    }
                    queue.push_back(Event::BackgroundWaitOver);
                }
                _ = sleep_until(term.unwrap_or(far)), if term.is_some() => {
                    if let Some(p) = self.process.as_mut() {
                        p.protocol_stop_expired();
                    }
                }
                _ = sleep_until(flush_at.unwrap_or(far)), if flush_at.is_some() => {
                    flush_at = None;
                    self.log.flush().map_err(|e| self.log_error(e))?;
                }
                _ = sleep_until(tick_at), if ticking => {
                    tick_at = Instant::now() + TICK;
                    self.tick(observer, &mut queue)?;
                }
                _ = reload.changed() => {
                    if self.poll_policy(observer)? {
                        let effects = self.step(Event::PolicyChanged);
                        self.carry_out(effects, &mut queue, observer).await?;
                    }
                }
            }
        }
    }

    /// [`Engine::run`] on a runtime of its own, for programs that have none: spawns happen on
    /// the calling thread, which lives as long as the session.
    pub fn run_blocking(&mut self, mut observer: impl Observer) -> Result<Outcome, EngineError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| EngineError::Runtime(e.to_string()))?;
        rt.block_on(self.run(&mut observer))
    }

    /// One step of the decision core, with the live policy deciding.
    fn step(&mut self, event: Event) -> Vec<Effect> {
        super::Core {
            session: &mut self.session,
            slot: &self.slot,
            redactor: &self.redactor,
        }
        .step(event)
    }

    /// The status line's refresh: also the moment a change waiting for trust is looked at again.
    fn tick(
        &mut self,
        observer: &mut dyn Observer,
        queue: &mut VecDeque<Event>,
    ) -> Result<(), EngineError> {
        if self.slot.pending_untrusted().is_some() {
            self.poll_policy(observer)?;
        }
        if self.inbox.polled() {
            self.read_inbox(queue, observer)?;
        }
        self.report_status(observer);
        Ok(())
    }

    /// Tells an observer that wants ticks where things stand, with the running process's
    /// clocks measured to the deadlines the loop's timers fire at.
    pub(super) fn report_status(&self, observer: &mut dyn Observer) {
        if !observer.wants_status() {
            return;
        }
        let now = Instant::now();
        let process = self.process.as_ref().map(|p| ProcessClock {
            role: p.role,
            running: now.saturating_duration_since(p.started),
            idle: now.saturating_duration_since(p.last_output),
            inactivity_left: p.idle_deadline().map(|d| d.saturating_duration_since(now)),
            wall_left: p.wall_deadline().map(|d| d.saturating_duration_since(now)),
            stopping: p.stopping,
            turn: p.tap.as_ref().map(|t| t.owner()),
        });
        let idle = process.as_ref().map_or(Duration::ZERO, |p| p.idle);
        let s = &self.session;
        observer.update(Update::Status(Status {
            session_id: s.id.clone(),
            state: s.state(),
            iteration: s.iteration,
            max_iterations: s.max_iterations,
            elapsed: Duration::from_millis(now_ms().saturating_sub(s.created_ms)),
            idle,
            policy: self.slot.outstanding().first().map(|e| e.to_string()),
            process,
        }));
    }
}
