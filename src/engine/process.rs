//! The process running now, as the loop sees it: its supervising task, the pipeline its output
//! goes through, and the clocks the core's timeouts are measured on.

use super::{Engine, EngineError, Observer, Update};
use crate::agent::{AnswerSchema, SchemaFile, VERDICT_SCHEMA, VERDICT_SCHEMA_FILE};
use crate::agent::{Seen, Tap};
use crate::executor::{CommandTemplate, Invocation, ProcessEvent, StdinMode, Supervised};
use crate::pipeline::{Line, Pipeline, RunMeta, Stream, now_ms};
use crate::process::Role;
use crate::session::{Event, ExitStatus, Spawn};
use std::collections::VecDeque;
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
    /// The agent's protocol reader, when an agent CLI runs (not a command).
    pub tap: Option<Tap>,
    /// An interrupt went through the agent's protocol; the group gets SIGTERM at this time if
    /// the agent has not ended by then.
    pub term_at: Option<(Instant, Duration)>,
    /// Since when the run has waited on its agent's background tasks alone (no turn running
    /// or owed): inactivity does not count then, `background_wait` does.
    pub background_since: Option<Instant>,
    /// How long it may wait so (`limits.background_wait`).
    pub background_wait: Duration,
    /// The background tasks were asked to stop: the wait is not timed again.
    pub background_over: bool,
}

impl Proc {
    /// When the inactivity timeout fires, unless output arrives first.
    pub fn idle_deadline(&self) -> Option<Instant> {
        (!self.stopping && self.background_since.is_none())
            .then(|| self.last_output + self.inactivity)
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
        let agent = self.session.agents.spec(spawn.role).cloned();
        if spawn.role == Role::Auditor && agent.is_some() && self.schema_file.is_none() {
            // Best effort: without it Codex fails to start, which the session reports.
            match SchemaFile::write(VERDICT_SCHEMA) {
                Ok(f) => self.schema_file = Some(f),
                Err(e) => {
                    let m =
                        format!("could not write the verdict schema to the temp directory: {e}");
                    self.warn_out_of_band(&m, observer)?;
                }
            }
        }
        let schema_file = self.schema_file.as_ref().map_or_else(
            || std::path::PathBuf::from(VERDICT_SCHEMA_FILE),
            |f| f.path().to_path_buf(),
        );
        let resume = spawn
            .resume
            .clone()
            .filter(|_| agent.as_ref().is_some_and(|a| a.can_resume()));
        let launch = agent.as_ref().map(|a| {
            let verdict = AnswerSchema {
                text: VERDICT_SCHEMA,
                file: &schema_file,
            };
            a.launch(spawn.role, resume.as_deref(), Some(verdict))
        });
        let command = match &launch {
            Some(l) => CommandTemplate::from_argv(l.argv.clone())
                .map_err(|e| EngineError::Usage(crate::error::failure(&e)))?,
            None => match spawn.role {
                Role::Worker => self.worker_cmd.clone(),
                Role::Auditor => self.auditor_cmd.clone(),
            },
        };
        let launch_env = launch.as_ref().map(|l| l.env.clone()).unwrap_or_default();
        // What the agent starts from: its key held by the proxy when oneshot's environment has
        // one for its API, its environment filtered, its local model server forwarded.
        let vars: Vec<_> = std::env::vars_os().collect();
        let argv = command.words().to_vec();
        let own_dir = agent.as_ref().and_then(|a| a.own_dir(&vars));
        let outfit = {
            let policy = self.slot.current();
            crate::sandbox::outfit::outfit(
                crate::sandbox::outfit::Wearer {
                    api: agent.as_ref().and_then(|a| a.kind.model_api()),
                    credential_vars: agent.as_ref().map_or(&[], |a| a.kind.credential_vars()),
                    words: crate::sandbox::pointing::AgentWords {
                        argv: &argv,
                        user_args: agent.as_ref().map_or(&[], |a| &a.args[..]),
                        program_len: agent.as_ref().map_or(0, |a| a.argv().len()),
                        own_dir: own_dir.as_deref(),
                    },
                    extra_env: &launch_env,
                },
                &vars,
                policy.env_rules(),
                policy.network_rules(),
                self.egress.on(),
                self.confine.is_some(),
            )
        };
        let base_env = if self.confine.is_some() {
            let dropped = outfit.dropped.clone();
            // Said once a session (and whenever the list changes, as a policy's `env` can):
            // what the agents do not get, in `log` and `show`.
            if !dropped.is_empty() && self.env_dropped.as_ref() != Some(&dropped) {
                let m = format!(
                    "the agents' environment leaves out {} (credentials: a policy's \
                     env = {{ pass = {{ … }} }} keeps one)",
                    dropped.join(", ")
                );
                self.session.env_dropped.clone_from(&dropped);
                self.env_dropped = Some(dropped);
                self.dirty = true;
                self.tell_out_of_band(&m, false, observer)?;
            }
            Some(std::sync::Arc::new(outfit.env))
        } else {
            None
        };
        let gateway = self.egress.gateway(
            &agent_name_of(agent.as_ref(), &command),
            spawn.role,
            outfit.model,
            outfit.forwards,
        );
        let invocation = Invocation {
            role: spawn.role,
            command,
            prompt: spawn.prompt,
            session_id: self.session.id.clone(),
            iteration: spawn.iteration,
            workdir: self.session.workdir.clone(),
            env: launch_env,
            stdin: launch.as_ref().map_or(StdinMode::Prompt, |l| l.stdin),
            confine: self.confine.clone(),
            gateway,
            base_env,
            limits: self.slot.current().limits().agent(),
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
        self.egress.begin_run();
        Ok(match invocation.spawn() {
            Ok(running) => {
                let identity = running.identity();
                let now = Instant::now();
                let meta = RunMeta {
                    role: spawn.role.as_str(),
                    iteration: spawn.iteration,
                    executor: agent
                        .as_ref()
                        .map_or("command", |a| a.kind.name())
                        .to_string(),
                };
                let supervised = running.supervise();
                let mut tap = match (&agent, &launch) {
                    (Some(a), Some(l)) => Some(Tap::for_agent(
                        a,
                        l,
                        spawn.role,
                        &invocation.workdir,
                        resume,
                    )),
                    _ => None,
                };
                if let Some(tap) = &mut tap {
                    // The run's account, entry by entry, for whoever watches it.
                    tap.narrative.keep_entries();
                    // A protocol on stdin: its handshake, then the prompt.
                    tap.open(&invocation.prompt, &supervised);
                }
                self.process = Some(Proc {
                    role: spawn.role,
                    supervised,
                    pipeline: Pipeline::new(meta, self.redactor.clone()),
                    lines: Vec::new(),
                    started: now,
                    last_output: now,
                    inactivity: spawn.inactivity_timeout,
                    wall: spawn.wall_timeout,
                    stopping: false,
                    tap,
                    term_at: None,
                    background_since: None,
                    background_wait: spawn.background_wait,
                    background_over: false,
                });
                Event::Spawned(identity)
            }
            Err(e) => Event::SpawnFailed(crate::error::failure(&e)),
        })
    }

    /// One report from the running process: output goes through the pipeline (redaction,
    /// log, observer) and, for an agent, through its protocol's reader; what they mean for the
    /// session (the agent's session id, a failure, the exit) joins `queue`.
    pub(super) fn on_process(
        &mut self,
        ev: Option<ProcessEvent>,
        observer: &mut dyn Observer,
        queue: &mut VecDeque<Event>,
    ) -> Result<(), EngineError> {
        if let Some(ProcessEvent::LimitReached(words)) = &ev {
            // Killed already; the core records why the run ended, the words say who.
            let role = self.process.as_ref().map_or(Role::Worker, |p| p.role);
            let m = format!("the {role} was stopped: {words}");
            self.warn_out_of_band(&m, observer)?;
            queue.push_back(Event::TimedOut(crate::process::StopReason::LimitReached));
            return Ok(());
        }
        let Some(p) = self.process.as_mut() else {
            return Ok(());
        };
        let wants_lines = observer.wants_output();
        let mut exited = false;
        let result = match ev {
            Some(ProcessEvent::Output(stream, bytes)) => {
                match (&mut p.tap, stream) {
                    (Some(tap), Stream::Stdout) => {
                        let seen = tap.hear(&bytes, &mut p.supervised);
                        let waiting = tap.waiting_on_background();
                        p.seen(seen, &mut self.egress, queue);
                        p.waiting_on_background(waiting);
                    }
                    // An agent's stderr is not progress (retry chatter goes there), but it
                    // belongs to the run's account; a command's output of either kind is.
                    (Some(tap), Stream::Stderr) => tap.narrative.stderr(&bytes),
                    (None, _) => p.last_output = Instant::now(),
                }
                let lines = wants_lines.then_some(&mut p.lines);
                let pushed = p
                    .pipeline
                    .push(stream, &bytes, now_ms(), &mut self.log, lines);
                p.supervised.recycle(bytes);
                pushed
            }
            // A task that ended without saying how the process did (it cannot, short of a
            // panic) is reported as an exit without status, never as a hang.
            ended => {
                exited = true;
                let (code, signal) = match ended {
                    Some(ProcessEvent::Exited { code, signal }) => (code, signal),
                    _ => (None, None),
                };
                // Read from the raw stream: redacted before the core (and the state file) sees
                // it, as the pipeline's tails are.
                let answer = p
                    .tap
                    .as_mut()
                    .and_then(|tap| crate::session::hear_end(tap.finish(), queue))
                    .map(|a| self.redactor.redact(&a).into_owned());
                // Where the proxy held the agent's key, the tokens are its model API's own
                // count, whatever the CLI reported.
                if let Some(tokens) = self.egress.run_tokens(queue) {
                    match queue.iter_mut().find_map(|e| match e {
                        Event::AgentUsage(spent) => Some(spent),
                        _ => None,
                    }) {
                        Some(spent) => spent.tokens = tokens,
                        None => queue.push_back(Event::AgentUsage(crate::session::Spent {
                            tokens,
                            ..Default::default()
                        })),
                    }
                }
                // An agent's output is its run's account, not its protocol's JSON (which the
                // log keeps); a command's is its output's tail.
                let account = p
                    .tap
                    .as_ref()
                    .map(|t| t.narrative.text())
                    .filter(|t| !t.trim().is_empty())
                    .map(|t| self.redactor.redact(t).into_owned());
                let lines = wants_lines.then_some(&mut p.lines);
                p.pipeline.finish(now_ms(), &mut self.log, lines).map(|()| {
                    queue.push_back(Event::Exited {
                        exit: ExitStatus { code, signal },
                        tail: account.unwrap_or_else(|| p.pipeline.tail().to_string()),
                        stdout: answer.unwrap_or_else(|| p.pipeline.stdout_tail().to_string()),
                    });
                })
            }
        };
        let role = p.role;
        // An agent's lines are its protocol; what it did is its account, entry by entry.
        let entries = p
            .tap
            .as_mut()
            .map(|t| t.narrative.take_entries())
            .unwrap_or_default();
        let agent = p.tap.is_some();
        if !p.lines.is_empty() || !entries.is_empty() {
            for line in p.lines.drain(..) {
                observer.update(if agent {
                    Update::Protocol { role, line }
                } else {
                    Update::Output { role, line }
                });
            }
            if wants_lines {
                for entry in entries {
                    let entry = entry.map_text(|t| self.redactor.redact(t).into_owned());
                    observer.update(Update::Account { role, entry });
                }
            }
            observer.flush();
        }
        result.map_err(|source| self.log_error(source))?;
        if exited {
            self.process = None;
        }
        Ok(())
    }
}

impl Proc {
    /// Asks the agent to stop through its protocol, when it speaks one on stdin (Claude's
    /// `interrupt` control request, Codex's `turn/interrupt`, ACP's `session/cancel`). False
    /// when it cannot be asked: the process group is stopped instead.
    pub fn interrupt_by_protocol(&mut self) -> bool {
        let Some(tap) = self.tap.as_mut() else {
            return false;
        };
        // What it was told and has not taken in is withdrawn (the next prompt carries it).
        tap.withdraw_unanswered(&self.supervised);
        let Some(line) = tap.interrupt() else {
            return false;
        };
        // The end of its input follows once the turn ends (its final result closes stdin).
        self.supervised.input(line)
    }

    /// Hands a human's message to the running agent, in its protocol; a process that speaks
    /// none (a command) cannot take one: the next prompt carries it.
    pub fn say(&mut self, message: &crate::agent::Say) -> crate::agent::Delivery {
        match &mut self.tap {
            Some(tap) => tap.say(message, &self.supervised),
            None => crate::agent::Delivery::NextPrompt,
        }
    }

    /// Asks the agent to stop its background tasks; the wait for them is over either way.
    pub fn stop_background(&mut self) {
        self.background_since = None;
        self.background_over = true;
        if let Some(tap) = &mut self.tap {
            tap.stop_background(&mut self.supervised);
        }
    }

    /// When the wait on background tasks alone runs out (`limits.background_wait`).
    pub fn background_deadline(&self) -> Option<Instant> {
        self.background_since
            .filter(|_| !self.stopping && !self.background_over)
            .map(|since| since + self.background_wait)
    }

    /// Answers a permission request through the agent's protocol.
    pub fn permit(
        &mut self,
        request_id: &str,
        allow: bool,
        reason: Option<&str>,
        input: &serde_json::Value,
    ) {
        if let Some(tap) = &mut self.tap {
            tap.permit(request_id, allow, reason, input, &self.supervised);
        }
    }

    /// The run waits, or no longer waits, on background tasks alone. When the wait ends, the
    /// inactivity clock restarts (the wait was not silence).
    fn waiting_on_background(&mut self, waiting: bool) {
        match (waiting, self.background_since) {
            (true, None) => self.background_since = Some(Instant::now()),
            (false, Some(_)) => {
                self.background_since = None;
                self.last_output = Instant::now();
            }
            _ => {}
        }
    }

    /// The protocol's stop did not end the agent in time: the group's stop begins.
    pub fn protocol_stop_expired(&mut self) {
        if let Some((_, grace)) = self.term_at.take() {
            self.supervised
                .control(crate::executor::Control::Stop(grace));
        }
    }

    /// Acts on what the agent's reader saw (its replies already went back): progress resets
    /// the inactivity clock; the agent's session id, its use so far and permission questions
    /// go to the core (the policy answers those).
    fn seen(
        &mut self,
        seen: Seen,
        egress: &mut super::egress::Egress,
        queue: &mut VecDeque<Event>,
    ) {
        if seen.progress {
            self.last_output = Instant::now();
        }
        if let Some(own) = seen.session {
            queue.push_back(Event::AgentSession(own));
        }
        if let Some(spent) = seen.spent {
            queue.push_back(Event::AgentProgress(egress.progress(spent)));
        }
        for change in seen.turns {
            queue.push_back(Event::AgentTurn(change));
        }
        for id in seen.taken {
            queue.push_back(Event::MessageTaken { id });
        }
        for id in seen.refused {
            queue.push_back(Event::MessageDelivered {
                id,
                delivery: crate::agent::Delivery::NextPrompt,
            });
        }
        for (request_id, tool, input) in seen.permissions {
            queue.push_back(Event::PermissionAsked {
                request_id,
                tool,
                input,
            });
        }
    }
}

/// The name egress records and the policy's `egress` hook know an agent by: its kind, or its
/// command's program.
fn agent_name_of(agent: Option<&crate::agent::AgentSpec>, command: &CommandTemplate) -> String {
    agent.map_or_else(
        || {
            std::path::Path::new(command.program())
                .file_name()
                .map_or_else(
                    || command.program().to_string(),
                    |n| n.to_string_lossy().into(),
                )
        },
        |a| a.kind.name().to_string(),
    )
}
