//! The recorded session run again through the decision core, with the new policy deciding.
//!
//! The recorded facts (a process started, printed this and exited; an inspection found that;
//! the user pressed Ctrl-C) are given to [`Session::step`] in their recorded order, at their
//! recorded times. While the core makes the transitions the recorded session made, the
//! simulation follows the recording. At the first transition that differs — or the first
//! process the new policy would have started differently — it has diverged: from there the
//! core goes on with recorded runs standing in for the runs it asks for ([`super::stand_in`]),
//! unless asked to stop there. No rule of the session lives here; the core makes every move.

use super::describe::{describe, prompt_lines};
use super::facts::{Created, Recording};
use super::reuse::{Asked, Reusing};
use super::{Ending, ReplayOptions};
use crate::machine::SessionState;
use crate::policy::PolicyHost;
use crate::process::Role;
use crate::session::{
    Effect, Event, NewSession, Phase, PolicyRef, Reason, Report, Session, Spawn, StepBuffers,
};
#[cfg(test)]
use crate::store::Hook;
use std::ops::Range;

/// Where the simulation got to.
#[derive(Debug, Default)]
pub(crate) struct Simulated {
    pub path: Vec<SessionState>,
    pub end: Option<Ending>,
    pub divergence: Option<String>,
    pub assumptions: Vec<String>,
    pub notes: Vec<String>,
    pub stopped: Option<String>,
}

pub(super) struct Sim<'a, 'j> {
    pub(super) rec: &'a Recording,
    pub(super) session: Session,
    /// Who answers the core: the re-asked answers where the question is the recorded one.
    pub(super) judge: &'j mut Reusing<'a>,
    /// What the core's steps reuse from one step to the next.
    buffers: StepBuffers,
    /// How many transitions the core made.
    transitions: usize,
    /// What the core waits for.
    pub(super) pending: Option<Effect>,
    pub(super) finished: bool,
    /// The time of the last fact given.
    pub(super) now: u64,
    pub(super) out: Simulated,
}

/// A transition the core made, as its report says it (a simulated step builds no records).
struct Move {
    from: SessionState,
    to: SessionState,
    iteration: u32,
    reason: Option<Reason>,
}

/// Replays `rec` through `policy`, which `judge` answers for.
pub(crate) fn simulate<'a>(
    rec: &'a Recording,
    policy: &PolicyHost,
    judge: &mut Reusing<'a>,
    opts: ReplayOptions,
) -> Simulated {
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
    let mut sim = Sim::new(rec, created, policy, judge);
    sim.out.path.push(SessionState::Created);
    sim.follow();
    if sim.out.divergence.is_some() && sim.out.stopped.is_none() {
        if opts.stop_at_divergence {
            sim.explain_stop();
        } else {
            sim.stand_in();
        }
    }
    sim.out.end = sim.session.history.last().map(|h| Ending {
        state: h.state,
        iteration: h.iteration,
        reason: h.reason.as_ref().map(ToString::to_string),
    });
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
            budget: None,
        },
        policy.limits().max_iterations,
        c.created_ms,
    );
    // The limits the session was started with replace the policy's here too, as they did.
    session.settings.limits = c.limits.clone();
    session
}

impl<'a, 'j> Sim<'a, 'j> {
    fn new(
        rec: &'a Recording,
        created: &Created,
        policy: &PolicyHost,
        judge: &'j mut Reusing<'a>,
    ) -> Self {
        let mut session = new_session(created, policy);
        session.history.reserve(rec.transitions.len());
        let mut out = Simulated::default();
        out.path.reserve(rec.transitions.len() + 1);
        Sim {
            rec,
            session,
            judge,
            buffers: StepBuffers::default(),
            transitions: 0,
            pending: None,
            finished: false,
            now: created.created_ms,
            out,
        }
    }

    /// Gives the recorded facts in order while the path is the recorded one.
    fn follow(&mut self) {
        for (j, fact) in self.rec.facts.iter().enumerate() {
            super::prefetch::fact_ahead_of(self.rec, j);
            if self.out.divergence.is_some() || self.out.stopped.is_some() {
                return;
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
                        let s = s.clone();
                        return self.diverge_on_prompt(&s, prompt);
                    }
                    Some(Effect::Check { checks, iteration }) => {
                        let runs: Vec<String> =
                            checks.iter().map(|c| format!("`{}`", c.run)).collect();
                        self.out.divergence = Some(format!(
                            "iteration {iteration}: under the new policy the checks {} run \
                             before the {role}, where the recording ran none",
                            runs.join(", ")
                        ));
                        return;
                    }
                    _ => {
                        self.out.stopped = Some(format!(
                            "the log is inconsistent: it records a {role} start for iteration \
                             {iteration} where the session did not start one"
                        ));
                        return;
                    }
                }
            }
            if matches!(fact.event, Event::Start) && self.out.path.len() > 1 {
                // A oneshot resumes: it starts from what the state file says.
                self.reload();
            }
            self.give(fact.ts, fact.event.clone());
        }
        if self.out.stopped.is_none() && self.out.divergence.is_none() {
            self.explain_stop();
        }
    }

    /// Gives the core one event at `ts` and takes in what it did.
    pub(super) fn give(&mut self, ts: u64, event: Event) {
        self.now = ts;
        self.finished = false;
        if matches!(
            event,
            Event::Spawned(_)
                | Event::SpawnFailed(_)
                | Event::Inspected(_)
                | Event::Fenced(_)
                | Event::Checked(_)
        ) {
            self.pending = None;
        }
        let first_decision = self.judge.asked.len();
        self.session
            .step_unrecorded(ts, event, &mut *self.judge, &mut self.buffers);
        let mut effects = std::mem::take(&mut self.buffers.effects);
        self.absorb(first_decision, effects.drain(..));
        self.buffers.effects = effects;
    }

    /// A state file read back: what a oneshot that resumes starts from.
    fn reload(&mut self) {
        if let Ok(json) = serde_json::to_string(&self.session)
            && let Ok(back) = serde_json::from_str(&json)
        {
            self.session = back;
        }
    }

    /// Takes in one step's effects: the path, what the core now waits for. The step's
    /// questions are `first_decision..` of the judge's.
    fn absorb(&mut self, first_decision: usize, effects: impl Iterator<Item = Effect>) {
        let mut moves = 0;
        for e in effects {
            match e {
                Effect::Report(Report::Transition {
                    from,
                    to,
                    iteration,
                    reason,
                    ..
                }) => {
                    // The questions asked before this transition, as in the recorded log.
                    let asked = first_decision..first_decision + self.buffers.scratch.moves[moves];
                    moves += 1;
                    let sc = Move {
                        from,
                        to,
                        iteration,
                        reason,
                    };
                    self.out.path.push(sc.to);
                    let recorded = self.rec.transitions.get(self.transitions);
                    let same = recorded.is_some_and(|r| r.from == sc.from && r.to == sc.to);
                    if self.out.divergence.is_none() && !same {
                        self.out.divergence = Some(self.describe_divergence(asked, &sc));
                    }
                    if self.out.divergence.is_some() {
                        self.note_transition(&sc);
                    }
                    self.transitions += 1;
                }
                Effect::Report(Report::Warning(w)) if self.out.divergence.is_some() => {
                    self.out.notes.push(format!("warning: {w}"));
                }
                e @ (Effect::Spawn(_)
                | Effect::Inspect { .. }
                | Effect::Fence { .. }
                | Effect::Check { .. }) => {
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
    fn note_transition(&mut self, sc: &Move) {
        if let Some(reason) = &sc.reason {
            self.out
                .notes
                .push(format!("{} -> {}: {reason}", sc.from, sc.to));
        }
    }

    /// Why the simulated transition `sc` differs from the recorded one: the first recorded
    /// decision the step asked again (`asked`) that the new policy answered differently, else
    /// the two transitions side by side (a limit, a guard on new facts, a question asked with
    /// another context).
    fn describe_divergence(&self, asked: Range<usize>, sc: &Move) -> String {
        if let Some(d) = self.first_differing_decision(asked) {
            return d;
        }
        let k = self.transitions;
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

    /// `decision N (hook, iteration i): old → new` for the first of the questions `asked` that
    /// was the recorded question, asked again, and answered otherwise (its word or its reason).
    /// A question the recording never asked is no difference of a decision: its input changed.
    fn first_differing_decision(&self, asked: Range<usize>) -> Option<String> {
        asked.into_iter().find_map(|i| {
            let Some(Asked::Recorded(Some(new))) = self.judge.asked.get(i) else {
                return None;
            };
            let old = self.rec.decisions.get(i)?;
            Some(format!(
                "decision {i} ({}, iteration {}): {} → {}",
                old.hook,
                old.iteration,
                describe(&old.result, true),
                describe(new, true)
            ))
        })
    }

    /// The new policy would start the recorded process with another prompt: the cause (a
    /// decision answered otherwise, or how the prompts differ).
    fn diverge_on_prompt(&mut self, spawn: &Spawn, recorded: &str) {
        let (line, old, new) = prompt_lines(recorded, &spawn.prompt);
        let prompts = format!(
            "the {} of iteration {} gets another prompt, from line {line}: {old} → {new}",
            spawn.role, spawn.iteration
        );
        let asked = 0..self.judge.asked.len();
        self.out.divergence = Some(match self.first_differing_decision(asked) {
            Some(d) => format!("{d}; {prompts}"),
            None => prompts,
        });
    }

    /// The facts ran out (or the replay stops at the divergence): say what the core would
    /// need next.
    pub(super) fn explain_stop(&mut self) {
        let n = self.session.iteration;
        self.out.stopped = match &self.pending {
            _ if self.finished && matches!(self.session.phase, Phase::Interrupted(_)) => {
                (self.out.divergence.is_some()).then(|| "the session was interrupted there".into())
            }
            _ if self.finished => None,
            Some(Effect::Spawn(s)) => Some(match s.role {
                Role::Worker => format!(
                    "iteration {} of the worker would run here: its output was never recorded \
                     (--stop-at-divergence)",
                    s.iteration
                ),
                Role::Auditor => format!(
                    "the auditor of iteration {} would run here: its verdict was never recorded \
                     (--stop-at-divergence)",
                    s.iteration
                ),
            }),
            Some(Effect::Inspect { .. }) => Some(format!(
                "the worker of iteration {n} was never inspected: its evidence was never recorded"
            )),
            Some(Effect::Fence { .. }) => {
                Some("the recorded log ends while a crashed run was being fenced".into())
            }
            Some(Effect::Check { iteration, .. }) => Some(format!(
                "the checks of iteration {iteration} would run here: their results were never \
                 recorded"
            )),
            // Mid-run with no more facts: a session still running, replayed as far as it goes.
            _ => None,
        };
    }
}

/// The hooks the simulation asked, in order, for tests.
#[cfg(test)]
pub(crate) fn decisions_of(rec: &Recording, policy: &PolicyHost) -> Vec<Hook> {
    let Some(created) = &rec.created else {
        return Vec::new();
    };
    let redactor = crate::pipeline::Redactor::new(&[], Vec::new()).unwrap();
    let judge = crate::session::PolicyJudge::new(policy, 1, &redactor);
    let mut judge = Reusing::new(judge, rec);
    let mut sim = Sim::new(rec, created, policy, &mut judge);
    sim.follow();
    (0..sim.judge.asked.len())
        .filter_map(|i| sim.judge.asked(i).map(|(hook, _)| hook))
        .collect()
}
