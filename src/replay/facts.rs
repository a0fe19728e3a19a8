//! What a recorded session's log holds, sorted for replay: the facts the decision core was
//! given (to give them again), the decisions it recorded and the transitions it made (to
//! compare against).

use super::ReplayError;
use crate::machine::SessionState;
use crate::process::{Evidence, ProcessIdentity, Role, StopReason};
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
    /// For a process that could not be started: who, which iteration.
    pub failed_start: Option<(Role, u32)>,
    /// For the results of an audit's checks: the iteration they judged.
    pub checks_of: Option<u32>,
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

/// One recorded run of the worker or the auditor: what stands in for a run the replayed
/// session makes that the recording never did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RecordedRun {
    pub role: Role,
    pub iteration: u32,
    /// Its facts, by index into [`Recording::facts`]: its start (or failed start), what its
    /// agent reported, its timeouts, its exit, and a worker's inspection after it — not the
    /// user's interrupts, nor a resume's facts.
    pub facts: Vec<usize>,
}

/// A recorded session, ready to replay.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recording {
    pub(crate) created: Option<Created>,
    pub(crate) facts: Vec<Fact>,
    /// The runs that ended (their exit, or their failed start, is recorded), in log order.
    pub(crate) runs: Vec<RecordedRun>,
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
                failed_start: None,
                checks_of: None,
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
                        ProcessEvent::SpawnFailed { error } => {
                            r.facts.push(Fact {
                                failed_start: Some((p.role, p.iteration)),
                                ..fact(p.ts, Event::SpawnFailed(error.clone()))
                            });
                            continue;
                        }
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
                Record::Check(c) => {
                    // One step wrote all of an audit's check records: one fact.
                    if let Some(last) = r.facts.last_mut()
                        && last.checks_of == Some(c.iteration)
                        && last.ts == c.ts
                        && let Event::Checked(results) = &mut last.event
                    {
                        results.push(c.result.clone());
                        continue;
                    }
                    r.facts.push(Fact {
                        checks_of: Some(c.iteration),
                        ..fact(c.ts, Event::Checked(vec![c.result.clone()]))
                    });
                }
                // A human's message is a fact, and so is each thing the worker's driver did
                // with it; the core's own moves (into a prompt) it makes again itself.
                Record::Message(m) => {
                    use crate::session::MessageStatus as S;
                    let event = match m.status {
                        S::Received => Event::MessageSaid(crate::session::Said {
                            id: m.id.clone(),
                            actor: m.actor.clone(),
                            ts: m.said_ms.unwrap_or(m.ts),
                            text: m.text.clone(),
                            now: m.now,
                            status: S::Received,
                            taken_ms: None,
                            taken_iteration: None,
                        }),
                        S::Sent | S::Held => Event::MessageDelivered {
                            id: m.id.clone(),
                            delivery: if m.status == S::Sent {
                                crate::agent::Delivery::Sent
                            } else {
                                crate::agent::Delivery::Held
                            },
                        },
                        // The run's end makes these itself; a driver's "next prompt" is a fact.
                        S::NextPrompt => Event::MessageDelivered {
                            id: m.id.clone(),
                            delivery: crate::agent::Delivery::NextPrompt,
                        },
                        S::Taken => Event::MessageTaken { id: m.id.clone() },
                        S::InPrompt => continue,
                    };
                    r.facts.push(fact(m.ts, event));
                }
                // A refused connection is a fact the hooks read (`ctx.egress`).
                Record::Egress(e) => r.facts.push(fact(e.ts, Event::EgressRefused(e.clone()))),
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
        r.runs = runs(&r.facts);
        Ok(r)
    }

    /// The run that stands in for the `k`-th start (from 0) of `role` in `iteration` once the
    /// replayed session has left the recorded one: the `k`-th recorded run of that iteration
    /// (its last, when the replay starts it more often), else the last recorded run of `role`
    /// before it. `None` when `role` never ran to an end.
    pub(crate) fn stand_in(&self, role: Role, iteration: u32, k: usize) -> Option<&RecordedRun> {
        let same: Vec<&RecordedRun> = self
            .runs
            .iter()
            .filter(|r| r.role == role && r.iteration == iteration)
            .collect();
        if let Some(run) = same.get(k).or(same.last()) {
            return Some(run);
        }
        let mut of_role = self.runs.iter().rev().filter(|r| r.role == role);
        of_role
            .clone()
            .find(|r| r.iteration < iteration)
            .or_else(|| of_role.next())
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

    /// Where the recorded session ended (or stands): its last transition.
    pub fn ending(&self) -> Option<super::Ending> {
        self.transitions.last().map(|t| super::Ending {
            state: t.to,
            iteration: t.iteration,
            reason: t.reason.as_ref().map(ToString::to_string),
        })
    }

    /// The state the last transition entered.
    pub fn final_state(&self) -> Option<SessionState> {
        self.transitions.last().map(|t| t.to)
    }
}

/// The runs among `facts`: each from its start to its exit, with a worker's inspection after
/// it; a run without a recorded end (oneshot died in it) is left out.
fn runs(facts: &[Fact]) -> Vec<RecordedRun> {
    let mut out = Vec::new();
    let mut open: Option<RecordedRun> = None;
    for (i, fact) in facts.iter().enumerate() {
        if let Some((role, iteration, _)) = &fact.started {
            open = Some(RecordedRun {
                role: *role,
                iteration: *iteration,
                facts: vec![i],
            });
            continue;
        }
        match &fact.event {
            // Not the run's: the user's, and a later oneshot's.
            Event::Interrupt | Event::Kill | Event::Start | Event::Fenced(_) => {}
            Event::SpawnFailed(_) => {
                // A failed start is the run's whole story.
                if let Some((role, iteration)) = fact.failed_start {
                    out.push(RecordedRun {
                        role,
                        iteration,
                        facts: vec![i],
                    });
                }
                open = None;
            }
            Event::Exited { .. } => {
                if let Some(mut run) = open.take() {
                    run.facts.push(i);
                    let inspected = matches!(
                        facts.get(i + 1).map(|f| &f.event),
                        Some(Event::Inspected(_))
                    );
                    if run.role == Role::Worker && inspected {
                        run.facts.push(i + 1);
                    }
                    out.push(run);
                }
            }
            _ => {
                if let Some(run) = &mut open {
                    run.facts.push(i);
                }
            }
        }
    }
    out
}
