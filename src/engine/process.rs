//! The process running now, as the loop sees it: its supervising task, the pipeline its output
//! goes through, and the clocks the core's timeouts are measured on.

use super::{Engine, EngineError, Observer, Update};
use crate::executor::{Invocation, ProcessEvent, Role, Supervised};
use crate::pipeline::{Line, Pipeline, RunMeta, now_ms};
use crate::session::{Event, ExitStatus, Spawn};
use std::time::Duration;
use tokio::time::Instant;

/// A running process.
pub(super) struct Proc {
    pub role: Role,
    pub supervised: Supervised,
    pub pipeline: Pipeline,
    pub lines: Vec<Line>,
    pub started: Instant,
    pub last_output: Instant,
    pub inactivity: Duration,
    pub wall: Option<Duration>,
    /// A stop or kill was asked for: the timers are off.
    pub stopping: bool,
}

impl Proc {
    /// When the inactivity timeout fires, unless output arrives first.
    pub fn idle_deadline(&self) -> Option<Instant> {
        (!self.stopping).then(|| self.last_output + self.inactivity)
    }

    /// When the wall-clock timeout fires.
    pub fn wall_deadline(&self) -> Option<Instant> {
        self.wall
            .filter(|_| !self.stopping)
            .map(|w| self.started + w)
    }
}

impl Engine {
    /// Starts the process the core asked for and reports how that went.
    pub(super) fn spawn(
        &mut self,
        spawn: Spawn,
        observer: &mut dyn Observer,
    ) -> Result<Event, EngineError> {
        let invocation = Invocation {
            role: spawn.role,
            command: match spawn.role {
                Role::Worker => self.worker_cmd.clone(),
                Role::Auditor => self.auditor_cmd.clone(),
            },
            prompt: spawn.prompt,
            session_id: self.session.id.clone(),
            iteration: spawn.iteration,
            workdir: self.session.workdir.clone(),
            env: Vec::new(),
        };
        if invocation.prompt_replaced_in_argv() {
            // The task fits (checked when the session was made); this prompt also carries
            // output or critique. The agent still gets all of it: on stdin and in the file.
            let message = format!(
                "the {} prompt is {} bytes, more than {{prompt}} can carry in argv ({} bytes); \
                 the command gets a line pointing to $ONESHOT_PROMPT_FILE instead, and the whole \
                 prompt on stdin and in that file",
                spawn.role,
                invocation.prompt.len(),
                crate::executor::PROMPT_INLINE_MAX
            );
            self.warn_out_of_band(&message, observer)?;
        }
        Ok(match invocation.spawn() {
            Ok(running) => {
                let identity = running.identity();
                let now = Instant::now();
                let meta = RunMeta {
                    role: spawn.role.as_str(),
                    iteration: spawn.iteration,
                    executor: "command".to_string(),
                };
                self.process = Some(Proc {
                    role: spawn.role,
                    supervised: running.supervise(),
                    pipeline: Pipeline::new(meta, self.redactor.clone()),
                    lines: Vec::new(),
                    started: now,
                    last_output: now,
                    inactivity: spawn.inactivity_timeout,
                    wall: spawn.wall_timeout,
                    stopping: false,
                });
                Event::Spawned(identity)
            }
            Err(e) => Event::SpawnFailed(crate::error::failure(&e)),
        })
    }

    /// One report from the running process: output goes through the pipeline (redaction,
    /// log, observer); its exit becomes the core's event.
    pub(super) fn on_process(
        &mut self,
        ev: Option<ProcessEvent>,
        observer: &mut dyn Observer,
    ) -> Result<Option<Event>, EngineError> {
        let Some(p) = self.process.as_mut() else {
            return Ok(None);
        };
        let lines = observer.wants_output().then_some(&mut p.lines);
        let result = match ev {
            Some(ProcessEvent::Output(stream, bytes)) => {
                p.last_output = Instant::now();
                let pushed = p
                    .pipeline
                    .push(stream, &bytes, now_ms(), &mut self.log, lines);
                p.supervised.recycle(bytes);
                pushed.map(|()| None)
            }
            // A task that ended without saying how the process did (it cannot, short of a
            // panic) is reported as an exit without status, never as a hang.
            ended => {
                let (code, signal) = match ended {
                    Some(ProcessEvent::Exited { code, signal }) => (code, signal),
                    _ => (None, None),
                };
                p.pipeline.finish(now_ms(), &mut self.log, lines).map(|()| {
                    Some(Event::Exited {
                        exit: ExitStatus { code, signal },
                        tail: p.pipeline.tail().to_string(),
                        stdout: p.pipeline.stdout_tail().to_string(),
                    })
                })
            }
        };
        let role = p.role;
        if !p.lines.is_empty() {
            for line in p.lines.drain(..) {
                observer.update(Update::Output { role, line });
            }
            observer.flush();
        }
        let event = result.map_err(|source| self.log_error(source))?;
        if event.is_some() {
            self.process = None;
        }
        Ok(event)
    }
}
