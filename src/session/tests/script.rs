//! A synchronous outside world for the decision core: scripted process runs, no processes,
//! no clock. Used by the core's own tests and by replay's tests to produce the logs a real
//! session would leave.

use crate::pipeline::Redactor;
use crate::policy::PolicyHost;
use crate::process::{Evidence, ProcessIdentity, StopReason};
use crate::session::record::Record;
use crate::session::{
    Decide, Effect, Event, ExitStatus, NewSession, Outcome, PolicyJudge, PolicyRef, Session,
};
use std::collections::VecDeque;

/// How one scripted process run goes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Run {
    /// Starts, prints `output`, exits with `code`.
    Exit(i32, &'static str),
    /// Starts, prints `output`, goes silent until the inactivity timeout stops it.
    Silent(&'static str),
    /// Starts, then the user presses Ctrl-C; it exits on the SIGTERM.
    Interrupted(&'static str),
    /// Cannot be started.
    SpawnFails,
    /// Starts, then oneshot dies: the driver stops right there, as a `kill -9` would.
    OneshotDies,
    /// An agent that names its session, reports a provider failure of this kind, exits 1.
    AgentFails(crate::agent::ErrorKind),
    /// An agent that names its session `sid`, prints `output`, exits 0.
    Agent(&'static str, &'static str),
    /// An agent that asks to run `command` with its Bash tool, prints `output`, exits 0.
    AsksBash(&'static str, &'static str),
    /// An agent that reports using this many turns (and 100 tokens a turn), prints `output`,
    /// exits 0.
    Spends(u32, &'static str),
}

/// A session driven through scripted runs.
pub(crate) struct Driver {
    pub session: Session,
    pub policy: PolicyHost,
    redactor: Redactor,
    runs: VecDeque<Run>,
    /// Files each worker run changes, in order (missing: none).
    pub changes: VecDeque<Vec<&'static str>>,
    /// Everything the core asked for, step by step.
    pub steps: Vec<Vec<Effect>>,
    /// The records, as the engine would append them.
    pub records: Vec<Record>,
    pub clock: u64,
    next_pid: i32,
}

/// The session every scripted test starts from.
pub(crate) fn new_session(policy: &PolicyHost, task: &str) -> Session {
    Session::new(
        NewSession {
            id: "00000000-0000-4000-8000-000000000001".into(),
            task: task.into(),
            workdir: "/work".into(),
            worker_cmd: "sh w.sh".into(),
            auditor_cmd: "sh a.sh".into(),
        },
        PolicyRef {
            path: policy.path().map(|p| p.to_path_buf()),
            hash: policy.hash().to_string(),
            generation: 1,
            budget: None,
        },
        policy.limits().max_iterations,
        1_000,
    )
}

/// A policy from Lua source.
pub(crate) fn policy(source: &str) -> PolicyHost {
    PolicyHost::from_source("test.lua", source, Default::default()).expect("test policy loads")
}

impl Driver {
    pub fn new(policy: PolicyHost, task: &str, runs: impl IntoIterator<Item = Run>) -> Driver {
        Driver {
            session: new_session(&policy, task),
            redactor: Redactor::new(policy.redact_patterns(), Vec::new()).expect("redactor"),
            policy,
            runs: runs.into_iter().collect(),
            changes: VecDeque::new(),
            steps: Vec::new(),
            records: Vec::new(),
            clock: 1_000,
            next_pid: 100,
        }
    }

    /// One step, recorded.
    pub fn step(&mut self, event: Event) -> Vec<Effect> {
        self.clock += 10;
        let mut judge =
            PolicyJudge::new(&self.policy, self.session.policy.generation, &self.redactor);
        let effects = self
            .session
            .step(self.clock, event, &mut judge as &mut dyn Decide);
        for e in &effects {
            if let Effect::Record(r) = e {
                self.records.push(r.clone());
            }
        }
        self.steps.push(effects.clone());
        effects
    }

    /// Drives from `first` until the core finishes, runs out of script, or oneshot "dies".
    pub fn drive(&mut self, first: Event) -> Option<Outcome> {
        let mut queue = VecDeque::from([first]);
        while let Some(event) = queue.pop_front() {
            for effect in self.step(event) {
                match effect {
                    Effect::Spawn(_) => match self.runs.pop_front() {
                        Some(run) => match self.play(run) {
                            Some(events) => queue.extend(events),
                            None => return None,
                        },
                        None => return None,
                    },
                    Effect::Inspect { reason, exit } => {
                        queue.push_back(Event::Inspected(self.evidence(reason, exit)))
                    }
                    Effect::Fence { process, .. } => queue.push_back(Event::Fenced(format!(
                        "process group {} was already gone",
                        process.pgid
                    ))),
                    Effect::Finish(outcome) => return Some(outcome),
                    _ => {}
                }
            }
        }
        None
    }

    /// Runs the session from the start to where it finishes.
    pub fn run(&mut self) -> Option<Outcome> {
        self.drive(Event::Start)
    }

    /// The events of one scripted run, or `None` when oneshot dies in it (after it started).
    fn play(&mut self, run: Run) -> Option<Vec<Event>> {
        self.next_pid += 1;
        let started = Event::Spawned(ProcessIdentity {
            pid: self.next_pid,
            pgid: self.next_pid,
            start_time: Some(7),
        });
        let exit = |code: i32, tail: &str| Event::Exited {
            exit: ExitStatus {
                code: Some(code),
                signal: None,
            },
            tail: tail.to_string(),
            stdout: tail.to_string(),
        };
        let killed = |tail: &str| Event::Exited {
            exit: ExitStatus {
                code: None,
                signal: Some(15),
            },
            tail: tail.to_string(),
            stdout: tail.to_string(),
        };
        Some(match run {
            Run::Exit(code, out) => vec![started, exit(code, out)],
            Run::Silent(out) => vec![
                started,
                Event::TimedOut(StopReason::InactivityTimeout),
                killed(out),
            ],
            Run::Interrupted(out) => vec![started, Event::Interrupt, killed(out)],
            Run::SpawnFails => vec![Event::SpawnFailed("no such file or directory".into())],
            Run::OneshotDies => {
                self.step(started);
                return None;
            }
            Run::AgentFails(kind) => vec![
                started,
                Event::AgentSession(crate::session::OwnSession::id("sid-failing")),
                Event::AgentFailed(crate::session::AgentFailure {
                    agent: crate::agent::AgentKind::Claude,
                    kind,
                    status: None,
                    message: "the provider said no".into(),
                }),
                exit(1, "API error"),
            ],
            Run::Agent(sid, out) => vec![
                started,
                Event::AgentSession(crate::session::OwnSession::id(sid)),
                exit(0, out),
            ],
            Run::AsksBash(command, out) => vec![
                started,
                Event::PermissionAsked {
                    request_id: "r1".into(),
                    tool: "Bash".into(),
                    input: serde_json::json!({ "command": command }),
                },
                exit(0, out),
            ],
            Run::Spends(turns, out) => vec![
                started,
                Event::AgentUsage(crate::session::Spent {
                    turns,
                    tokens: u64::from(turns) * 100,
                    usd: 0.0,
                }),
                exit(0, out),
            ],
        })
    }

    fn evidence(&mut self, reason: Option<StopReason>, exit: ExitStatus) -> Evidence {
        let changed = self.changes.pop_front().unwrap_or_default();
        Evidence {
            reason,
            exit_code: exit.code,
            signal: exit.signal,
            output_tail: self.session.worker_output.clone(),
            changed_files: changed.into_iter().map(String::from).collect(),
            changes_source: "snapshot".into(),
            transcript: None,
        }
    }

    /// The states of the history, in order.
    pub fn trace(&self) -> Vec<crate::machine::SessionState> {
        self.session.history.iter().map(|h| h.state).collect()
    }

    /// More runs for the script, after the ones left.
    pub fn then(&mut self, runs: impl IntoIterator<Item = Run>) {
        self.runs.extend(runs);
    }

    /// Simulates a restart: what a resume reads back from the state file.
    pub fn reload_from_disk(&mut self) {
        let json = serde_json::to_string(&self.session).expect("serialize");
        self.session = serde_json::from_str(&json).expect("deserialize");
    }
}
