//! The recorded session run again through the decision core, with the new policy deciding.
//!
//! The recorded facts (a process started, printed this and exited; an inspection found that;
//! the user pressed Ctrl-C) are given to [`Session::step`] in their recorded order, at their
//! recorded times. While the core makes the transitions the recorded session made, the
//! simulation follows the recording. At the first transition that differs — or the first
//! process the new policy would have started differently — it has diverged: from there the
//! core goes on by itself as far as it can without a new fact, and the simulation says where
//! and why it had to stop. No rule of the session lives here; the core makes every move.

use super::describe::describe;
use super::facts::{Created, Recording};
use crate::machine::SessionState;
use crate::pipeline::Redactor;
use crate::policy::PolicyHost;
use crate::session::{
    Effect, Event, NewSession, Phase, PolicyJudge, PolicyRef, Report, Session, Spawn,
};
use crate::store::{DecisionResult, Hook, Record, StateChange};

/// Where the simulation got to.
#[derive(Debug, Default)]
pub(crate) struct Simulated {
    pub path: Vec<SessionState>,
    pub divergence: Option<String>,
    pub notes: Vec<String>,
    pub stopped: Option<String>,
}

struct Sim<'a> {
    rec: &'a Recording,
    session: Session,
    policy: &'a PolicyHost,
    redactor: Redactor,
    transitions: Vec<StateChange>,
    /// What the core asked, in order: only the hook and the answer are kept (a whole record
    /// holds the hook's context; keeping 100,000 of them costs more than the replay).
    decisions: Vec<Asked>,
    /// What the core waits for.
    pending: Option<Effect>,
    finished: bool,
    out: Simulated,
}

/// One question the simulated core asked, and the new policy's answer.
#[derive(Debug)]
pub(crate) struct Asked {
    pub hook: Hook,
    pub result: DecisionResult,
}

/// Replays `rec` through `policy`.
pub(crate) fn simulate(rec: &Recording, policy: &PolicyHost) -> Simulated {
    let Some(created) = &rec.created else {
        return Simulated {
            stopped: Some(
                "the log has no `session created` record to start from (was it written by an \
                 older oneshot?)"
                    .into(),
            ),
            ..Simulated::default()
        };
    };
    let mut sim = Sim {
        rec,
        session: new_session(created, policy),
        policy,
        redactor: Redactor::from_env(policy.redact_patterns())
            .unwrap_or_else(|_| Redactor::new(&[], Vec::new()).expect("no patterns compile")),
        transitions: Vec::new(),
        decisions: Vec::new(),
        pending: None,
        finished: false,
        out: Simulated::default(),
    };
    sim.out.path.push(SessionState::Created);
    sim.run();
    sim.out
}

fn new_session(c: &Created, policy: &PolicyHost) -> Session {
    let mut session = Session::new(
        NewSession {
            id: c.session_id.clone(),
            task: c.task.clone(),
            workdir: c.workdir.clone(),
            worker_cmd: c.worker_cmd.clone(),
            auditor_cmd: c.auditor_cmd.clone(),
        },
        PolicyRef {
            path: policy.path().map(|p| p.to_path_buf()),
            hash: policy.hash().to_string(),
            generation: 1,
        },
        policy.limits().max_iterations,
        c.ts,
    );
    // The limits the session was started with replace the policy's here too, as they did.
    session.settings.limits = c.limits.clone();
    session
}

impl Sim<'_> {
    fn run(&mut self) {
        for fact in &self.rec.facts {
            if self.out.divergence.is_some() || self.out.stopped.is_some() {
                break;
            }
            if let Some(hash) = fact.missing.first() {
                self.out.stopped = Some(format!(
                    "the log lacks blob {hash}, so what happened next cannot be replayed \
                     faithfully (a blob is missing from the log)"
                ));
                return;
            }
            if let Some((role, iteration, prompt)) = &fact.started {
                match &self.pending {
                    Some(Effect::Spawn(s))
                        if s.role == *role && s.iteration == *iteration && s.prompt == *prompt => {}
                    Some(Effect::Spawn(s)) if s.role == *role && s.iteration == *iteration => {
                        self.diverge_on_prompt(s.clone());
                        return;
                    }
                    _ => {
                        self.out.stopped = Some(format!(
                            "the log is inconsistent: it records a {role} start for iteration                              {iteration} where the session did not start one"
                        ));
                        return;
                    }
                }
            }
            if matches!(fact.event, Event::Start) && self.out.path.len() > 1 {
                // A oneshot resumes: it starts from what the state file says.
                self.reload();
            }
            self.finished = false;
            if matches!(
                fact.event,
                Event::Spawned(_) | Event::SpawnFailed(_) | Event::Inspected(_) | Event::Fenced(_)
            ) {
                self.pending = None;
            }
            let mut judge = PolicyJudge::new(self.policy, 1, &self.redactor);
            let effects = self.session.step(fact.ts, fact.event.clone(), &mut judge);
            self.absorb(effects);
        }
        if self.out.stopped.is_none() {
            self.explain_stop();
        }
    }

    /// A state file read back: what a oneshot that resumes starts from.
    fn reload(&mut self) {
        if let Ok(json) = serde_json::to_string(&self.session)
            && let Ok(back) = serde_json::from_str(&json)
        {
            self.session = back;
        }
    }

    /// Takes in one step's effects: the path, the decisions, what the core now waits for.
    fn absorb(&mut self, effects: Vec<Effect>) {
        let first_decision = self.decisions.len();
        for e in effects {
            match e {
                Effect::Record(Record::StateChange(sc)) => {
                    self.out.path.push(sc.to);
                    let k = self.transitions.len();
                    let recorded = self.rec.transitions.get(k);
                    let same = recorded.is_some_and(|r| r.from == sc.from && r.to == sc.to);
                    if self.out.divergence.is_none() && !same {
                        self.out.divergence = Some(self.describe_divergence(first_decision, &sc));
                    }
                    if self.out.divergence.is_some() {
                        self.note_transition(&sc);
                    }
                    self.transitions.push(sc);
                }
                Effect::Record(Record::Decision(d)) => self.decisions.push(Asked {
                    hook: d.hook,
                    result: d.result,
                }),
                Effect::Report(Report::Warning(w)) if self.out.divergence.is_some() => {
                    self.out.notes.push(format!("warning: {w}"));
                }
                e @ (Effect::Spawn(_) | Effect::Inspect { .. } | Effect::Fence { .. }) => {
                    self.pending = Some(e);
                }
                Effect::Finish(_) => {
                    self.finished = true;
                    self.pending = None;
                }
                _ => {}
            }
        }
    }

    /// A transition after the divergence: what the new policy decided there.
    fn note_transition(&mut self, sc: &StateChange) {
        if let Some(reason) = &sc.reason {
            self.out
                .notes
                .push(format!("{} -> {}: {reason}", sc.from, sc.to));
        }
    }

    /// Why the simulated transition `sc` differs from the recorded one: the first decision of
    /// this step the new policy answered differently, else the two transitions side by side.
    fn describe_divergence(&self, first_decision: usize, sc: &StateChange) -> String {
        if let Some(d) = self.first_differing_decision(first_decision) {
            return d;
        }
        let k = self.transitions.len();
        let simulated = match &sc.reason {
            Some(r) => format!("{} ({r})", sc.to),
            None => sc.to.to_string(),
        };
        match self.rec.transitions.get(k) {
            Some(r) => {
                let recorded = match &r.reason {
                    Some(reason) => format!("{} ({reason})", r.to),
                    None => r.to.to_string(),
                };
                format!(
                    "in {} at iteration {}: the recorded session went to {recorded}, under the \
                     new policy it goes to {simulated}",
                    sc.from, sc.iteration
                )
            }
            None => format!(
                "in {} at iteration {}: the recorded session stopped there, under the new \
                 policy it goes on to {simulated}",
                sc.from, sc.iteration
            ),
        }
    }

    /// `decision N (hook, iteration i): old → new` for the first decision from `from` on that
    /// the new policy answered differently from the recording.
    fn first_differing_decision(&self, from: usize) -> Option<String> {
        (from..self.decisions.len()).find_map(|i| {
            let asked = &self.decisions[i];
            let new = &asked.result;
            let old = self.rec.decisions.get(i)?;
            // Another question in this place is a difference too, whatever its answer.
            (old.hook != asked.hook || !same_answer(&old.result, new)).then(|| {
                format!(
                    "decision {i} ({}, iteration {}): {} → {}",
                    old.hook,
                    old.iteration,
                    describe(&old.result, false),
                    describe(new, false)
                )
            })
        })
    }

    /// The new policy would start the recorded process with another prompt: that run never
    /// happened.
    fn diverge_on_prompt(&mut self, spawn: Spawn) {
        let differing = self.first_differing_decision(0).unwrap_or_else(|| {
            format!(
                "the {} of iteration {} gets a different prompt",
                spawn.role, spawn.iteration
            )
        });
        self.out.divergence = Some(differing);
        self.out.stopped = Some(match spawn.role {
            crate::executor::Role::Worker => format!(
                "iteration {} of the worker would have run with a different prompt: that run \
                 was never recorded",
                spawn.iteration
            ),
            crate::executor::Role::Auditor => format!(
                "the auditor of iteration {} would have run with a different prompt: its \
                 verdict on it was never recorded",
                spawn.iteration
            ),
        });
    }

    /// The facts ran out (or the paths parted): say what the core would need next.
    fn explain_stop(&mut self) {
        let n = self.session.iteration;
        self.out.stopped = match &self.pending {
            _ if self.finished && matches!(self.session.phase, Phase::Interrupted(_)) => {
                (self.out.divergence.is_some()).then(|| "the session was interrupted there".into())
            }
            _ if self.finished => None,
            Some(Effect::Spawn(s)) => Some(match s.role {
                crate::executor::Role::Worker => {
                    format!("iteration {n} of the worker never ran: its output was never recorded")
                }
                crate::executor::Role::Auditor => format!(
                    "the auditor of iteration {n} never ran: its verdict was never recorded"
                ),
            }),
            Some(Effect::Inspect { .. }) => Some(format!(
                "the worker of iteration {n} was never inspected: its evidence was never recorded"
            )),
            Some(Effect::Fence { .. }) => {
                Some("the recorded log ends while a crashed run was being fenced".into())
            }
            // Mid-run with no more facts: a session still running, replayed as far as it goes.
            _ => None,
        };
    }
}

/// Whether two answers move the session the same way: the same verdict, salvage or guard
/// word, the same prompt, both failures (reasons are prose and not compared).
pub(crate) fn same_answer(old: &DecisionResult, new: &DecisionResult) -> bool {
    super::describe::same(old, new, false)
}

/// The questions the simulation asked, for tests.
#[cfg(test)]
pub(crate) fn decisions_of(rec: &Recording, policy: &PolicyHost) -> Vec<Asked> {
    let Some(created) = &rec.created else {
        return Vec::new();
    };
    let mut sim = Sim {
        rec,
        session: new_session(created, policy),
        policy,
        redactor: Redactor::new(&[], Vec::new()).unwrap(),
        transitions: Vec::new(),
        decisions: Vec::new(),
        pending: None,
        finished: false,
        out: Simulated::default(),
    };
    sim.run();
    sim.decisions
}
