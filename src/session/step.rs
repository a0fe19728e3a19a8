//! The decision core: [`Session::step`] takes one [`Event`], decides, and returns the
//! [`Effect`]s that carry the decision out. Synchronous, no I/O, no clock (time comes in as
//! `now`), no knowledge of who answers the judgement calls ([`Decide`]).

use super::phase::{ExitStatus, Next, Pause, Phase, Run};
use super::{Decide, Effect, Event, Outcome, Reason, Report, Session};
use crate::machine::{SessionState, Trigger};
use crate::process::{Evidence, ProcessIdentity, Role, StopReason};
use crate::session::record::{
    EvidenceRecord, Message, ProcessEvent, ProcessRecord, Record, SessionEvent, SessionRecord,
};

/// What the core waits for after asking the outside world for something; kept in memory
/// only (a resume starts waiting for nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Awaiting {
    /// [`Effect::Spawn`] → [`Event::Spawned`] or [`Event::SpawnFailed`].
    Spawn,
    /// [`Effect::Inspect`] → [`Event::Inspected`].
    Inspect,
    /// [`Effect::Fence`] → [`Event::Fenced`].
    Fence,
    /// [`Effect::Check`] → [`Event::Checked`].
    Checks,
}

/// One step in progress: the session, who decides, the time, and the effects so far.
pub(super) struct Step<'a> {
    pub(super) s: &'a mut Session,
    pub(super) d: &'a mut dyn Decide,
    pub(super) now: u64,
    pub(super) out: Vec<Effect>,
    /// Set by [`Session::step_unrecorded`]: what a step for replay asks with and notes down.
    pub(super) unrecorded: Option<&'a mut super::unrecorded::Scratch>,
}

impl Session {
    /// Decides what `event` means for the session at time `now` (unix milliseconds), asking
    /// `decide` for the judgement calls, and returns what to do, in order.
    ///
    /// Every decision the seed's tables leave to judgement goes through `decide` and is
    /// recorded as a `decision` record; every transition goes through the table in
    /// [`crate::machine`], the policy's guard and observer, and is journaled before anything
    /// acts on it. An event that makes no sense in the current phase (a timer that fired
    /// after the process ended, say) changes nothing.
    pub fn step(&mut self, now: u64, event: Event, decide: &mut dyn Decide) -> Vec<Effect> {
        let mut step = Step {
            s: self,
            d: decide,
            now,
            out: Vec::new(),
            unrecorded: None,
        };
        step.on(event);
        step.out
    }
}

impl Step<'_> {
    pub(super) fn on(&mut self, event: Event) {
        match event {
            Event::Start => self.start(),
            Event::Spawned(process) => self.spawned(process),
            Event::SpawnFailed(error) => self.spawn_failed(error),
            Event::Exited { exit, tail, stdout } => self.exited(exit, tail, stdout),
            Event::TimedOut(why) => self.timed_out(why),
            Event::Interrupt => self.interrupt(false),
            Event::Kill => self.interrupt(true),
            Event::Inspected(evidence) => self.inspected(evidence),
            Event::Fenced(outcome) => self.fenced(outcome),
            Event::Checked(results) => self.checked(results),
            Event::PolicyChanged => {
                self.sync_policy();
                self.journal();
            }
            Event::AgentSession(id) => self.agent_session(id),
            Event::AgentFailed(failure) => self.agent_failed(failure),
            Event::AgentUsage(spent) => self.agent_usage(spent),
            Event::AgentProgress(spent) => self.agent_progress(spent),
            Event::PermissionAsked {
                request_id,
                tool,
                input,
            } => self.permission(request_id, tool, input),
            Event::EgressAsked { ask, query } => self.egress_asked(ask, query),
            Event::EgressRefused(refusal) => self.egress_refused(refusal),
            Event::MessageSaid(said) => self.message_said(said),
            Event::MessageDelivered { id, delivery } => self.message_delivered(&id, delivery),
            Event::MessageTaken { id } => self.message_taken(&id),
            Event::AgentTurn(change) => self.agent_turn(change),
            Event::BackgroundWaitOver => self.background_wait_over(),
            Event::AgentReconciled { added } => self.agent_reconciled(&added),
        }
    }

    /// A oneshot process begins driving the session: run a new one, or continue a resumed
    /// one where it stopped.
    fn start(&mut self) {
        // What an earlier driver asked for is not this one's to hear about: a resume waits for
        // nothing (a late answer to it is ignored as unexpected, never taken as this run's).
        self.s.awaiting = None;
        let created = matches!(self.s.phase, Phase::Created);
        let event = if created {
            SessionEvent::Created {
                session_id: self.s.id.clone(),
                task: self.s.task.clone(),
                workdir: self.s.workdir.clone(),
                worker_cmd: self.s.worker_cmd.clone(),
                auditor_cmd: self.s.auditor_cmd.clone(),
                limits: Box::new(self.s.settings.limits.clone()),
            }
        } else {
            SessionEvent::Resumed
        };
        let changed = self.sync_policy();
        let record = Record::Session(SessionRecord {
            ts: self.now,
            pid: None,
            policy_hash: self.s.policy.hash.clone(),
            event,
        });
        self.record(record);
        if let Some(overridden) = self.s.settings.limits.describe() {
            self.note(&format!("limits overridden for this session: {overridden}"));
        }
        if changed && !created {
            self.note(
                "the policy changed since this session last ran; decisions from now on use \
                 the new one",
            );
        }
        if let Some(phase) = self.s.phase.retake() {
            return self.retake(phase.clone());
        }
        match &self.s.phase {
            Phase::Created => self.begin(),
            Phase::WorkerExecuting(run) | Phase::AuditorExecuting(super::AuditRun { run, .. }) => {
                // Executing before this oneshot started anything: the one that ran it died.
                match run.process.filter(|_| run.exited.is_none()) {
                    Some(process) => {
                        self.s.awaiting = Some(Awaiting::Fence);
                        self.journal();
                        let grace = self.limits().grace_period;
                        self.out.push(Effect::Fence { process, grace });
                    }
                    None => self.took_over(),
                }
            }
            Phase::Interrupted(_) => self.resume(),
            _ => {
                self.journal();
                self.advance();
            }
        }
    }

    /// CREATED → the first worker run.
    pub(super) fn begin(&mut self) {
        self.s.iteration = 1;
        self.s.worker_prompt = self.s.task.clone();
        self.transition(Trigger::Run, Phase::WorkerExecuting(Run::default()), None);
        self.advance();
    }

    /// Adopts the answering policy (a reload, or a different policy on resume) and the
    /// iteration budget in force (its own, or the session's override).
    /// Returns whether its content differs from the one recorded.
    fn sync_policy(&mut self) -> bool {
        self.s.max_iterations = self.limits().max_iterations;
        let policy = self.d.policy();
        if policy == self.s.policy {
            return false;
        }
        let changed = policy.hash != self.s.policy.hash;
        self.s.policy = policy;
        changed
    }

    /// The limits in force: the answering policy's, with the session's overrides applied
    /// (the only place they are).
    pub(super) fn limits(&self) -> crate::policy::Limits {
        self.s.settings.limits.apply(self.d.limits())
    }

    fn spawned(&mut self, process: ProcessIdentity) {
        if self.s.awaiting != Some(Awaiting::Spawn) {
            return self.unexpected("a process start");
        }
        self.s.awaiting = None;
        let Some(role) = self.s.phase.role() else {
            return self.unexpected("a process start");
        };
        if let Some(run) = self.s.phase.run_mut() {
            run.process = Some(process);
        }
        if let Some(h) = self.s.history.last_mut() {
            h.pid = Some(process.pid);
        }
        self.journal();
        self.deliver_waiting();
        if self.recording() {
            let prompt = match &self.s.phase {
                Phase::AuditorExecuting(a) => a.full_prompt(),
                _ => self.s.worker_prompt.clone(),
            };
            self.process(role, ProcessEvent::Started { process, prompt });
        }
    }

    fn spawn_failed(&mut self, error: String) {
        if self.s.awaiting != Some(Awaiting::Spawn) {
            return self.unexpected("a failed process start");
        }
        self.s.awaiting = None;
        let Some(role) = self.s.phase.role() else {
            return self.unexpected("a failed process start");
        };
        let error = self.d.redact(&error).into_owned();
        self.process(
            role,
            ProcessEvent::SpawnFailed {
                error: error.clone(),
            },
        );
        self.s.exit_code = None;
        let reason = Some(Reason::SpawnFailed { role, error });
        match role {
            Role::Worker => {
                // Nothing ran, so nothing changed: no inspection needed.
                self.s.changed_files.clear();
                let evidence = Evidence {
                    reason: Some(StopReason::ExitCode),
                    changes_source: "unavailable".into(),
                    ..Evidence::default()
                };
                let next = Phase::RecoveryPending(Box::new(evidence));
                self.transition(Trigger::ExitedErr, next, reason);
            }
            Role::Auditor => self.transition(Trigger::ExitedErr, Phase::failed(), reason),
        }
        self.advance();
    }

    /// A process ended. The worker's output is both streams (the auditor and salvage judge
    /// all of it); the auditor's is its stdout alone, its answer: a verdict is never read from
    /// stderr. Both streams stay in the log either way.
    fn exited(&mut self, exit: ExitStatus, tail: String, stdout: String) {
        let Some(role) = self.s.phase.role() else {
            return self.unexpected("a process exit");
        };
        let Some(run) = self.s.phase.run_mut() else {
            return self.unexpected("a process exit");
        };
        if run.process.is_none() || run.exited.is_some() {
            return self.unexpected("a process exit");
        }
        run.exited = Some(exit);
        if role == Role::Worker {
            self.messages_not_taken();
        }
        let Some(run) = self.s.phase.run_mut() else {
            return self.unexpected("a process exit");
        };
        let stopping = run.stopping;
        let failure = run.failure.clone();
        let why_stopped = run.stop_reason(exit);
        self.s.exit_code = exit.code;
        let stdout = match role {
            Role::Worker => {
                self.s.worker_output.clone_from(&tail);
                None
            }
            Role::Auditor => {
                self.s.auditor_output.clone_from(&stdout);
                (stdout != tail).then_some(stdout)
            }
        };
        self.process(
            role,
            ProcessEvent::Exited {
                exit_code: exit.code,
                signal: exit.signal,
                tail,
                stdout,
            },
        );
        if stopping == Some(StopReason::BudgetExceeded) && self.budget_stop_ended(role) {
            return;
        }
        if stopping.is_none() && self.agent_ended(role, failure.as_ref()) {
            return;
        }
        match (role, stopping) {
            (_, Some(StopReason::Interrupted)) => {
                let pause = Pause {
                    during: role,
                    cause: StopReason::Interrupted,
                    retake: None,
                };
                let reason = Some(Reason::Interrupted { role });
                self.transition(Trigger::Interrupt, Phase::Interrupted(pause), reason);
                self.advance();
            }
            (Role::Worker, _) => self.inspect(why_stopped, exit),
            (Role::Auditor, Some(why)) => {
                let reason = Some(Reason::TimedOut { role, why });
                self.transition(Trigger::Timeout, Phase::failed(), reason);
                self.advance();
            }
            (Role::Auditor, None) if exit.success() => self.judge(),
            (Role::Auditor, None) => {
                let reason = Some(Reason::Exited {
                    role,
                    code: exit.code,
                    signal: exit.signal,
                });
                self.transition(Trigger::ExitedErr, Phase::failed(), reason);
                self.advance();
            }
        }
    }

    /// Asks for the evidence a stopped worker left.
    pub(super) fn inspect(&mut self, reason: Option<StopReason>, exit: ExitStatus) {
        self.s.awaiting = Some(Awaiting::Inspect);
        self.out.push(Effect::Inspect { reason, exit });
    }

    fn inspected(&mut self, evidence: Evidence) {
        if self.s.awaiting != Some(Awaiting::Inspect) {
            return self.unexpected("an inspection");
        }
        self.s.awaiting = None;
        if self.recording() {
            let record = Record::Evidence(EvidenceRecord {
                ts: self.now,
                iteration: self.s.iteration,
                evidence: evidence.clone(),
            });
            self.record(record);
        }
        self.s.changed_files.clone_from(&evidence.changed_files);
        if let Phase::Interrupted(pause) = &self.s.phase {
            // Seed 000 §3.2: an interrupted worker might have finished its work; inspect it.
            let reason = Some(Reason::Resumed { after: pause.cause });
            let trigger = Trigger::Resume {
                last_active: SessionState::WorkerExecuting,
            };
            self.transition(trigger, Phase::RecoveryPending(Box::new(evidence)), reason);
            return self.advance();
        }
        let role = Role::Worker;
        match evidence.reason {
            None => self.transition(Trigger::ExitedOk, Phase::AuditPending, None),
            // oneshot stopped it (a limit reached is the kernel's or the watch's stop, which
            // the core asked to be carried out): recovery says why in those words.
            Some(
                why @ (StopReason::InactivityTimeout
                | StopReason::WorkerTimeout
                | StopReason::LimitReached),
            ) => {
                let reason = Some(Reason::TimedOut { role, why });
                let next = Phase::RecoveryPending(Box::new(evidence));
                self.transition(Trigger::Timeout, next, reason);
            }
            Some(_) => {
                let reason = Some(Reason::Exited {
                    role,
                    code: evidence.exit_code,
                    signal: evidence.signal,
                });
                let next = Phase::RecoveryPending(Box::new(evidence));
                self.transition(Trigger::ExitedErr, next, reason);
            }
        }
        self.advance();
    }

    /// Does what the current phase calls for: start its process, make its checkpoint's
    /// decision, or finish.
    pub(super) fn advance(&mut self) {
        let paused = self.s.interrupts > 0;
        match self.s.phase.clone() {
            Phase::Created => {}
            Phase::AuditorExecuting(super::AuditRun {
                checked: false,
                run,
                ..
            }) if run.process.is_none() && run.exited.is_none() && self.s.awaiting.is_none() => {
                self.run_checks();
            }
            Phase::WorkerExecuting(run) | Phase::AuditorExecuting(super::AuditRun { run, .. }) => {
                if run.process.is_none() && run.exited.is_none() && self.s.awaiting.is_none() {
                    self.spawn();
                }
            }
            Phase::AuditPending | Phase::ReiterationPending(_) | Phase::RecoveryPending(_)
                if paused =>
            {
                self.finish();
            }
            Phase::AuditPending => self.prepare_audit(),
            Phase::ReiterationPending(next) => self.reiterate(next),
            Phase::RecoveryPending(evidence) => self.salvage(*evidence),
            Phase::Interrupted(_) | Phase::Completed | Phase::Failed(_) | Phase::Rejected => {
                self.finish()
            }
        }
    }

    /// Asks for the executing phase's process (after the transition that entered it was
    /// journaled).
    pub(super) fn spawn(&mut self) {
        let Some(role) = self.s.phase.role() else {
            return;
        };
        let limits = self.limits();
        let attempt = self.s.phase.run().map_or(0, |r| r.attempt);
        let (prompt, wall_timeout) = match &self.s.phase {
            Phase::AuditorExecuting(a) => (a.full_prompt(), limits.auditor_timeout),
            _ => {
                // A retry keeps the first try's snapshot: what the failed try changed is part
                // of this iteration's work.
                if attempt == 0 {
                    self.out.push(Effect::Snapshot);
                }
                self.messages_into_prompt();
                (self.s.worker_prompt.clone(), limits.worker_timeout)
            }
        };
        let delay = if attempt == 0 {
            std::time::Duration::ZERO
        } else {
            limits.retry.delay(attempt)
        };
        self.s.awaiting = Some(Awaiting::Spawn);
        // The worker continues its own conversation, so the critique arrives in context; an
        // audit starts fresh, to judge the work rather than its story.
        let resume = match role {
            Role::Worker if self.d.continue_conversation() => self.s.agents.worker_session.clone(),
            _ => None,
        };
        self.out.push(Effect::Spawn(super::Spawn {
            role,
            iteration: self.s.iteration,
            prompt,
            inactivity_timeout: limits.inactivity_timeout,
            wall_timeout,
            resume,
            delay,
            background_wait: limits.background_wait,
        }));
    }

    /// AUDIT_PENDING: the auditor's prompt, then the auditor.
    fn prepare_audit(&mut self) {
        match self.ask_audit_prompt() {
            Ok(prompt) => {
                // What an agent is given is what is stored: without a secret the policy put in.
                let prompt = self.d.redact(&prompt).into_owned();
                let next = Phase::AuditorExecuting(super::AuditRun {
                    prompt,
                    ..super::AuditRun::default()
                });
                self.transition(Trigger::Next, next, None);
            }
            Err(e) => self.policy_failed(e),
        }
        self.advance();
    }

    /// REITERATION_PENDING: the same iteration again after a pause; else the budget, the
    /// next prompt (feedback injection), the next iteration.
    fn reiterate(&mut self, next: Next) {
        let worker = Phase::WorkerExecuting(Run::default());
        match next {
            Next::Rerun => self.transition(Trigger::Next, worker, Some(Reason::Rerun)),
            Next::Iteration if self.s.iteration >= self.s.max_iterations => {
                let reason = Some(Reason::MaxIterations {
                    max: self.s.max_iterations,
                });
                self.transition(Trigger::MaxIterations, Phase::failed(), reason);
            }
            Next::Iteration => match self.ask_next_prompt() {
                Ok(prompt) => {
                    self.s.iteration += 1;
                    // What the worker is given is what is stored: without a secret the policy
                    // put in (the task was redacted when the session was made).
                    self.s.worker_prompt = self.d.redact(&prompt).into_owned();
                    self.transition(Trigger::Next, worker, None);
                }
                Err(e) => self.policy_failed(e),
            },
        }
        self.advance();
    }

    /// RECOVERY_PENDING: what the evidence is worth.
    fn salvage(&mut self, evidence: Evidence) {
        use crate::machine::Salvage;
        match self.ask_salvage(&evidence) {
            Ok(d) => {
                let paused = evidence.reason.is_some_and(|r| r.is_pause());
                let next = match d.salvage {
                    Salvage::Success => Phase::AuditPending,
                    Salvage::Partial if paused => Phase::ReiterationPending(Next::Rerun),
                    Salvage::Partial => Phase::ReiterationPending(Next::Iteration),
                    Salvage::Nothing => Phase::failed(),
                };
                let reason = Some(Reason::Salvaged {
                    salvage: d.salvage,
                    reason: d.reason.map(|r| self.d.redact(&r).into_owned()),
                });
                self.transition(Trigger::Salvaged(d.salvage), next, reason);
            }
            Err(e) => self.policy_failed(e),
        }
        self.advance();
    }

    /// Driving is over for now.
    fn finish(&mut self) {
        if self.out.iter().any(|e| matches!(e, Effect::Finish(_))) {
            return;
        }
        self.messages_left_unheard();
        let state = self.s.state();
        self.out.push(Effect::Finish(Outcome {
            session_id: self.s.id.clone(),
            state,
            reason: self.s.last_reason().cloned(),
            paused: !state.is_terminal(),
        }));
    }

    pub(super) fn journal(&mut self) {
        self.out.push(Effect::Journal);
    }

    pub(super) fn record(&mut self, record: Record) {
        if self.recording() {
            self.out.push(Effect::Record(record));
        }
    }

    pub(super) fn process(&mut self, role: Role, event: ProcessEvent) {
        let record = Record::Process(ProcessRecord {
            ts: self.now,
            role,
            iteration: self.s.iteration,
            event,
        });
        self.record(record);
    }

    pub(super) fn warn(&mut self, message: &str) {
        let message = self.d.redact(message).into_owned();
        let record = Record::Warning(Message {
            ts: self.now,
            message: message.clone(),
        });
        self.record(record);
        self.out.push(Effect::Report(Report::Warning(message)));
    }

    pub(super) fn note(&mut self, message: &str) {
        let record = Record::Note(Message {
            ts: self.now,
            message: message.to_string(),
        });
        self.record(record);
        self.out
            .push(Effect::Report(Report::Note(message.to_string())));
    }

    /// An event that does not belong to the current phase: said, and otherwise ignored.
    pub(super) fn unexpected(&mut self, what: &str) {
        let state = self.s.state();
        self.warn(&format!(
            "ignored {what} that does not belong to state {state}"
        ));
    }
}
