//! What a recorded session's log holds, sorted for replay: the facts the decision core was
//! given (to give them again), the decisions it recorded and the transitions it made (to
//! compare against).

use super::ReplayError;
use crate::executor::{Evidence, ProcessIdentity, Role, StopReason};
use crate::machine::SessionState;
use crate::session::{Event, ExitStatus};
use crate::store::{
    DecisionInput, DecisionResult, Hook, Log, ProcessEvent, Record, SessionEvent, StateChange,
};

/// The facts of a new session, from its `session created` record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Created {
    pub ts: u64,
    /// When the session value was made, which every hook's `ctx.elapsed` counts from: a
    /// little before `ts`, the first step's time (the engine writes the new session out in
    /// between). Read back from the first recorded decision's context; `ts` without one.
    pub created_ms: u64,
    pub session_id: String,
    pub task: String,
    pub workdir: std::path::PathBuf,
    pub worker_cmd: String,
    pub auditor_cmd: String,
    pub limits: crate::session::LimitOverrides,
}

/// One fact, as the core was given it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fact {
    /// When (the step's `now`).
    pub ts: u64,
    /// The event to give again.
    pub event: Event,
    /// For a process start: who, which iteration, with which prompt.
    pub started: Option<(Role, u32, String)>,
    /// Blobs the record referenced that the log lacks: the fact cannot be given faithfully.
    pub missing: Vec<String>,
}

/// One recorded decision.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedDecision {
    /// Position among the log's decisions, from 0.
    pub index: usize,
    /// The hook.
    pub hook: Hook,
    /// The state it was asked in.
    pub state: SessionState,
    /// The worker iteration.
    pub iteration: u32,
    /// What the hook was given.
    pub input: DecisionInput,
    /// What it answered.
    pub result: DecisionResult,
    /// Blobs referenced but missing from the log.
    pub missing_blobs: Vec<String>,
}

/// A recorded session, ready to replay.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recording {
    pub(crate) created: Option<Created>,
    pub(crate) facts: Vec<Fact>,
    /// The decisions, in log order.
    pub decisions: Vec<RecordedDecision>,
    /// The transitions, in log order.
    pub transitions: Vec<StateChange>,
}

impl Recording {
    /// Sorts a decoded log. Fails on a record replay depends on that did not decode.
    pub fn from_log(log: &Log) -> Result<Recording, ReplayError> {
        if let Some((record, kind, message)) = log.skipped.iter().find(|(_, kind, _)| {
            matches!(
                kind.as_str(),
                "decision" | "state_change" | "process" | "evidence" | "session" | "blob"
            )
        }) {
            return Err(ReplayError::Malformed {
                record: *record,
                kind: kind.clone(),
                message: message.clone(),
            });
        }
        let mut r = Recording::default();
        for (i, record) in log.records.iter().enumerate() {
            let missing = log.missing_blobs(i).to_vec();
            let fact = |ts: u64, event: Event| Fact {
                ts,
                event,
                started: None,
                missing: missing.clone(),
            };
            match record {
                Record::Session(s) => {
                    if let SessionEvent::Created {
                        session_id,
                        task,
                        workdir,
                        worker_cmd,
                        auditor_cmd,
                        limits,
                    } = &s.event
                        && r.created.is_none()
                    {
                        r.created = Some(Created {
                            ts: s.ts,
                            created_ms: s.ts,
                            session_id: session_id.clone(),
                            task: task.clone(),
                            workdir: workdir.clone(),
                            worker_cmd: worker_cmd.clone(),
                            auditor_cmd: auditor_cmd.clone(),
                            limits: (**limits).clone(),
                        });
                    }
                    r.facts.push(fact(s.ts, Event::Start));
                }
                Record::Process(p) => {
                    let event = match &p.event {
                        ProcessEvent::Started { process, prompt } => {
                            r.facts.push(Fact {
                                started: Some((p.role, p.iteration, prompt.clone())),
                                ..fact(p.ts, Event::Spawned(ProcessIdentity { ..*process }))
                            });
                            continue;
                        }
                        ProcessEvent::SpawnFailed { error } => Event::SpawnFailed(error.clone()),
                        ProcessEvent::Stopping {
                            reason:
                                why @ (StopReason::InactivityTimeout | StopReason::WorkerTimeout),
                        } => Event::TimedOut(*why),
                        // A stop for an interrupt, or a kill, is what the core did with an
                        // `interrupt` fact, not a fact of its own.
                        ProcessEvent::Stopping { .. } | ProcessEvent::Killed => continue,
                        ProcessEvent::Exited {
                            exit_code,
                            signal,
                            tail,
                            stdout,
                        } => Event::Exited {
                            exit: ExitStatus {
                                code: *exit_code,
                                signal: *signal,
                            },
                            tail: tail.clone(),
                            stdout: stdout.clone().unwrap_or_else(|| tail.clone()),
                        },
                        ProcessEvent::Fenced { outcome } => Event::Fenced(outcome.clone()),
                        ProcessEvent::AgentSession { session } => {
                            Event::AgentSession(session.clone())
                        }
                        ProcessEvent::AgentUsage { spent } => Event::AgentUsage(*spent),
                        ProcessEvent::AgentProgress { spent } => Event::AgentProgress(*spent),
                        ProcessEvent::AgentFailed { failure } => {
                            Event::AgentFailed(failure.clone())
                        }
                    };
                    r.facts.push(fact(p.ts, event));
                }
                Record::Evidence(e) => {
                    let evidence: Evidence = e.evidence.clone();
                    r.facts.push(fact(e.ts, Event::Inspected(evidence)));
                }
                Record::Interrupt(i) => {
                    let event = if i.force {
                        Event::Kill
                    } else {
                        Event::Interrupt
                    };
                    r.facts.push(fact(i.ts, event));
                }
                Record::StateChange(sc) => r.transitions.push(sc.clone()),
                Record::Decision(d) => {
                    if r.decisions.is_empty()
                        && let Some(c) = &mut r.created
                    {
                        let elapsed_ms = (d.input.ctx().elapsed * 1000.0).round() as u64;
                        let at = d.ts.saturating_sub(elapsed_ms);
                        if at <= c.ts {
                            c.created_ms = at;
                        }
                    }
                    // A tool request is a fact as well as a decision: the simulated session
                    // is asked it at the same point.
                    if let crate::store::DecisionInput::Permit { tool, input, .. } = &d.input {
                        let asked = Event::PermissionAsked {
                            request_id: format!("replay-{}", r.decisions.len()),
                            tool: tool.clone(),
                            input: input.clone(),
                        };
                        r.facts.push(fact(d.ts, asked));
                    }
                    r.decisions.push(RecordedDecision {
                        index: r.decisions.len(),
                        hook: d.hook,
                        state: d.state,
                        iteration: d.iteration,
                        input: d.input.clone(),
                        result: d.result.clone(),
                        missing_blobs: missing,
                    });
                }
                _ => {}
            }
        }
        Ok(r)
    }

    /// The states the session went through: the first transition's `from`, then every `to`.
    pub fn path(&self) -> Vec<SessionState> {
        let mut path = Vec::with_capacity(self.transitions.len() + 1);
        if let Some(first) = self.transitions.first() {
            path.push(first.from);
        }
        path.extend(self.transitions.iter().map(|t| t.to));
        path
    }

    /// The state the last transition entered.
    pub fn final_state(&self) -> Option<SessionState> {
        self.transitions.last().map(|t| t.to)
    }
}
