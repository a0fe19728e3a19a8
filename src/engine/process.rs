//! The executing states: run the worker or the auditor through the pipeline and turn how it
//! ended into the next event.

use super::Engine;
use super::EngineError;
use super::Reporter;
use super::Status;
use super::ctx::now_ms;
use super::records::ProcessRecord;
use super::reload::record_reload_event;
use crate::executor::{Invocation, OutputSink, Role, RunOutcome, StopReason, Stopped};
use crate::machine::Event;
use crate::pipeline::Redactor;
use crate::pipeline::{Line, Pipeline, RunMeta, Stream};
use crate::policy::ReloadingPolicy;
use crate::store::{ActiveProcess, LogWriter, SessionDir, SessionFile, StoreError, VerdictRecord};
use std::time::Duration;

/// How a process run ended, from the engine's point of view.
enum Ended {
    /// It could not be started at all.
    NotStarted(String),
    /// It ran; `tail` is the redacted end of its output.
    Ran { outcome: RunOutcome, tail: String },
}

/// Feeds a process's output through the pipeline into the log and the reporter, and
/// journals a stop before the executor signals the process.
struct Sink<'a> {
    pipeline: Pipeline,
    log: &'a mut LogWriter,
    reporter: &'a mut dyn Reporter,
    dir: &'a SessionDir,
    file: &'a mut SessionFile,
    role: Role,
    lines: Vec<Line>,
    status: Status,
    slot: &'a mut ReloadingPolicy,
    redactor: &'a Redactor,
    error: Option<std::io::Error>,
    store_error: Option<StoreError>,
}

impl Sink<'_> {
    fn relay(&mut self) {
        for line in self.lines.drain(..) {
            self.reporter.line(self.role, &line);
        }
    }
}

impl OutputSink for Sink<'_> {
    fn output(&mut self, stream: Stream, bytes: &[u8]) {
        if let Err(e) = self
            .pipeline
            .push(stream, bytes, now_ms(), self.log, &mut self.lines)
        {
            self.error.get_or_insert(e);
        }
        self.relay();
    }

    fn tick(&mut self, idle: Duration) {
        // `oneshot log --follow` reads the file: let it see output within a second.
        if let Err(e) = self.log.flush() {
            self.error.get_or_insert(e);
        }
        // No hook runs while a process does, so polling here is safe; a broken edit shows at
        // once instead of at the next transition.
        for ev in self.slot.poll() {
            if let Err(e) = record_reload_event(&ev, self.log, self.reporter, self.redactor) {
                self.error.get_or_insert(e);
            }
        }
        self.status.policy = self.slot.outstanding().first().map(|e| e.to_string());
        self.status.idle = idle;
        self.status.elapsed += Duration::from_secs(1);
        self.reporter.tick(&self.status);
    }

    fn stopping(&mut self, reason: StopReason) {
        if let Some(p) = self.file.active_process.as_mut() {
            p.stopping = Some(reason);
        }
        if let Err(e) = self.dir.write_state(self.file) {
            self.store_error.get_or_insert(e);
        }
    }
}

impl Engine {
    /// WORKER_EXECUTING: snapshot the workdir, run the worker, judge how it ended.
    pub(super) async fn run_worker(&mut self) -> Result<(), EngineError> {
        self.snapshot_workdir()?;
        let prompt = self.file.worker_prompt.clone();
        let ended = self.run_process(Role::Worker, prompt).await?;
        let (event, reason, detail, codes) = match ended {
            Ended::NotStarted(msg) => (
                Event::ExitedErr,
                StopReason::ExitCode,
                Some(format!("worker could not start: {msg}")),
                (None, None),
            ),
            Ended::Ran { outcome, tail } => {
                self.file.worker_output_tail = tail;
                let codes = (outcome.exit_code, outcome.signal);
                match outcome.stop {
                    Some(StopReason::Interrupted) => {
                        return self.transition(
                            Event::Interrupt,
                            Some(StopReason::Interrupted.as_str().into()),
                            None,
                        );
                    }
                    Some(stop @ (StopReason::InactivityTimeout | StopReason::WorkerTimeout)) => {
                        (Event::Timeout, stop, None, codes)
                    }
                    Some(stop) => (Event::ExitedErr, stop, None, codes),
                    None if outcome.success() => {
                        // Kept for ctx.changed_files; `reason: None` marks a clean exit.
                        let ev = self.gather_evidence(Stopped::from(&outcome));
                        self.file.evidence = Some(crate::executor::Evidence { reason: None, ..ev });
                        return self.transition(Event::ExitedOk, None, None);
                    }
                    None => (
                        Event::ExitedErr,
                        StopReason::ExitCode,
                        Some(describe_exit(&outcome)),
                        codes,
                    ),
                }
            }
        };
        let evidence = self.gather_evidence(Stopped {
            reason,
            exit_code: codes.0,
            signal: codes.1,
        });
        self.file.evidence = Some(evidence);
        self.transition(event, Some(reason.as_str().into()), detail)
    }

    /// AUDITOR_EXECUTING: run the auditor and read its verdict through the policy.
    pub(super) async fn run_auditor(&mut self) -> Result<(), EngineError> {
        let prompt = match self.audit_prompt.take() {
            Some(p) => p,
            None => match self.decide_audit_prompt()? {
                Ok(p) => p,
                Err(e) => return self.policy_failed(&e),
            },
        };
        let (outcome, tail) = match self.run_process(Role::Auditor, prompt).await? {
            Ended::NotStarted(msg) => {
                return self.transition(
                    Event::ExitedErr,
                    Some("auditor_failed".into()),
                    Some(format!("auditor could not start: {msg}")),
                );
            }
            Ended::Ran { outcome, tail } => (outcome, tail),
        };
        self.file.auditor_output_tail = tail;
        match outcome.stop {
            Some(StopReason::Interrupted) => self.transition(
                Event::Interrupt,
                Some(StopReason::Interrupted.as_str().into()),
                None,
            ),
            Some(stop) => self.transition(
                Event::Timeout,
                Some(format!("auditor_{}", stop.as_str())),
                Some("the auditor was stopped; an auditor timeout is fatal (seed 000 §2.2)".into()),
            ),
            None if outcome.success() => {
                let output = self.file.auditor_output_tail.clone();
                match self.decide_verdict(&output)? {
                    Ok(d) => {
                        let reason = d
                            .reason
                            .as_deref()
                            .map(|r| self.redactor.redact(r).into_owned());
                        self.file.last_verdict = Some(VerdictRecord {
                            verdict: d.verdict,
                            reason: reason.clone(),
                            confidence: d.confidence,
                        });
                        self.transition(Event::Verdict(d.verdict), reason, None)
                    }
                    Err(e) => self.policy_failed(&e),
                }
            }
            None => self.transition(
                Event::ExitedErr,
                Some("auditor_failed".into()),
                Some(format!("auditor {}", describe_exit(&outcome))),
            ),
        }
    }

    /// Spawns `role` with `prompt`, records the process in the state file before it can do
    /// anything that matters, and drives it to the end.
    async fn run_process(&mut self, role: Role, prompt: String) -> Result<Ended, EngineError> {
        let limits = *self.policy().limits();
        let invocation = Invocation {
            role,
            command: match role {
                Role::Worker => self.worker_cmd.clone(),
                Role::Auditor => self.auditor_cmd.clone(),
            },
            prompt,
            session_id: self.file.oneshot_id.clone(),
            iteration: self.file.iteration_count,
            workdir: self.file.workdir.clone(),
            env: Vec::new(),
            inactivity_timeout: limits.inactivity_timeout,
            wall_timeout: match role {
                Role::Worker => limits.worker_timeout,
                Role::Auditor => limits.auditor_timeout,
            },
            grace: limits.grace_period,
        };
        let mut running = match invocation.spawn() {
            Ok(r) => r,
            Err(e) => {
                let msg = e.to_string();
                self.process_record(role, "spawn_failed", None, None, Some(&msg))?;
                return Ok(Ended::NotStarted(msg));
            }
        };
        let id = running.identity();
        self.file.active_process = Some(ActiveProcess {
            role,
            pid: id.pid,
            pgid: id.pgid,
            start_time: id.start_time,
            stopping: None,
        });
        if let Some(h) = self.file.history.last_mut() {
            h.pid = Some(id.pid);
        }
        self.save()?;
        self.process_record(role, "started", Some(id.pid), None, None)?;

        let status = self.status(Duration::ZERO);
        let mut sink = Sink {
            pipeline: Pipeline::new(
                RunMeta {
                    role: role.as_str(),
                    iteration: self.file.iteration_count,
                    executor: "command".to_string(),
                },
                self.redactor.clone(),
            ),
            log: &mut self.log,
            reporter: &mut *self.reporter,
            dir: &self.dir,
            file: &mut self.file,
            role,
            lines: Vec::new(),
            status,
            slot: &mut self.slot,
            redactor: &self.redactor,
            error: None,
            store_error: None,
        };
        let outcome = running.drive(&mut sink, &mut self.interrupts).await;
        let finished = sink.pipeline.finish(now_ms(), sink.log, &mut sink.lines);
        sink.relay();
        let tail = sink.pipeline.tail().to_string();
        let write_error = sink.error.take().or(finished.err());
        let store_error = sink.store_error.take();
        drop(sink);
        drop(running);
        if let Some(e) = write_error {
            return Err(self.log_error(e));
        }
        if let Some(e) = store_error {
            return Err(e.into());
        }
        self.file.active_process = None;
        self.process_record(role, "exited", Some(id.pid), Some(&outcome), None)?;
        Ok(Ended::Ran { outcome, tail })
    }

    fn process_record(
        &mut self,
        role: Role,
        event: &'static str,
        pid: Option<i32>,
        outcome: Option<&RunOutcome>,
        error: Option<&str>,
    ) -> Result<(), EngineError> {
        let error = error.map(|e| self.redactor.redact(e).into_owned());
        let record = ProcessRecord {
            ts: now_ms(),
            kind: "process",
            event,
            role,
            iteration: self.file.iteration_count,
            pid,
            exit_code: outcome.and_then(|o| o.exit_code),
            signal: outcome.and_then(|o| o.signal),
            stop: outcome.and_then(|o| o.stop).map(|s| s.as_str()),
            error: error.as_deref(),
        };
        self.log
            .append(&record)
            .and_then(|()| self.log.sync())
            .map_err(|source| self.log_error(source))
    }
}

/// "exited with code 3" / "was killed by signal 9".
fn describe_exit(outcome: &RunOutcome) -> String {
    match (outcome.exit_code, outcome.signal) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        (None, None) => "ended without an exit status".to_string(),
    }
}
