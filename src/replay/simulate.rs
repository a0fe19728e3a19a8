//! Walking the recorded session forward with the machine table under the new policy.
//!
//! While the new policy decides as the recorded one did, the simulated path *is* the recorded
//! path: recorded transitions are copied. At the first decision (or iteration limit) that moves
//! the session elsewhere, the simulation takes over and does what the engine would do — guard,
//! commit, observer, the checkpoint states' own decisions — on the facts the log holds, and
//! stops at the first step that needs a fact never recorded (a process run that never happened,
//! evidence never gathered).

use super::compare::{describe, same_path};
use super::record::{DecisionInput, DecisionResult, Hook, RecordedDecision, RecordedTransition};
use crate::machine::{Event, Salvage, SessionState as S, next};
use crate::policy::{GuardOutcome, HookCtx, PolicyError, PolicyHost};

/// What changed at the divergence, which decides how a stop at a process run is explained.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Changed {
    /// A decision moved the session; whatever runs next never ran.
    Path,
    /// The worker's prompt differs; its recorded run answered another prompt.
    WorkerPrompt,
    /// The auditor's prompt differs.
    AuditPrompt,
}

/// The simulated session.
pub(crate) struct Simulation<'a> {
    policy: &'a PolicyHost,
    transitions: &'a [RecordedTransition],
    /// The simulated states so far.
    pub(crate) path: Vec<S>,
    /// Still on the recorded path.
    following: bool,
    /// The context of the last decision followed: the facts a simulated step starts from.
    last_ctx: Option<&'a HookCtx>,
    /// A `partial` salvage after a pause: the engine re-runs the same iteration without a new
    /// prompt or a limit check.
    rerun: bool,
    /// Where and why the path left the recorded one.
    pub(crate) divergence: Option<String>,
    /// What the new policy decided after the divergence.
    pub(crate) notes: Vec<String>,
    /// Why the simulation stopped short of a terminal state.
    pub(crate) stopped: Option<String>,
}

impl<'a> Simulation<'a> {
    pub(crate) fn new(policy: &'a PolicyHost, transitions: &'a [RecordedTransition]) -> Self {
        let mut path = Vec::with_capacity(transitions.len() + 4);
        path.extend(transitions.first().map(|t| t.from));
        Simulation {
            policy,
            transitions,
            path,
            following: true,
            last_ctx: None,
            rerun: false,
            divergence: None,
            notes: Vec::new(),
            stopped: None,
        }
    }

    /// The recorded transition `i` happened.
    pub(crate) fn transition(&mut self, i: usize) {
        if !self.following {
            return;
        }
        let t = &self.transitions[i];
        if self.path.is_empty() {
            self.path.push(t.from);
        }
        self.path.push(t.to);
        if t.to == S::ReiterationPending {
            self.check_limit(i);
        } else if t.from == S::ReiterationPending {
            self.rerun = false;
        }
    }

    /// The recorded decision `d` was re-run and the new policy answered `new`.
    pub(crate) fn decision(
        &mut self,
        d: &'a RecordedDecision,
        new: &Result<DecisionResult, PolicyError>,
    ) {
        if !self.following {
            return;
        }
        if self.path.is_empty() {
            self.path.push(d.state);
        }
        // The observer's `state` may be either end of its transition; the others must match.
        if d.hook != Hook::OnTransition && self.path.last() != Some(&d.state) {
            let at = self.path.last().map_or("nowhere", |s| s.as_str());
            return self.stop(format!(
                "the log is inconsistent: decision {} ({}) was asked in {} while the recorded \
                 path was in {at}",
                d.index, d.hook, d.state
            ));
        }
        if same_path(&d.input, &d.result, new) {
            self.last_ctx = Some(d.input.ctx());
            if let (DecisionInput::Salvage { evidence, .. }, DecisionResult::Salvage(s)) =
                (&d.input, &d.result)
            {
                self.rerun =
                    s.salvage == Salvage::Partial && evidence.reason.is_some_and(|r| r.is_pause());
            }
            return;
        }
        let new_text = match new {
            Ok(r) => describe(r, false),
            Err(e) => format!("error: {e}"),
        };
        self.diverge(format!(
            "decision {} ({}, iteration {}): {} → {new_text}",
            d.index,
            d.hook,
            d.iteration,
            describe(&d.result, false)
        ));
        let mut facts = self.facts(d.input.ctx(), d.state, d.iteration);
        let new = match new {
            Ok(r) => r,
            Err(e) => return self.fail(e),
        };
        match (&d.input, new) {
            (_, DecisionResult::Verdict(v)) => {
                facts.verdict = Some(v.verdict);
                facts.critique.clone_from(&v.reason);
                facts.confidence = v.confidence;
                let event = Event::Verdict(v.verdict);
                self.step_on(S::AuditorExecuting, event, &mut facts, v.reason.clone());
            }
            (DecisionInput::Salvage { evidence, .. }, DecisionResult::Salvage(s)) => {
                self.rerun =
                    s.salvage == Salvage::Partial && evidence.reason.is_some_and(|r| r.is_pause());
                let event = Event::Salvaged(s.salvage);
                self.step_on(S::RecoveryPending, event, &mut facts, s.reason.clone());
            }
            (_, DecisionResult::Guard(GuardOutcome::Veto(why))) => {
                self.notes.push(format!("the guard vetoes: {why}"));
                self.path.push(S::Failed);
            }
            (DecisionInput::Guard { from, to, .. }, DecisionResult::Guard(GuardOutcome::Allow)) => {
                if let Some(to) = self.enter(*from, *to, &mut facts, None) {
                    self.advance(to, &mut facts, Changed::Path);
                }
            }
            (DecisionInput::NextPrompt { .. }, DecisionResult::Prompt(p)) => {
                facts.iteration += 1;
                facts.worker_prompt.clone_from(p);
                if let Some(to) = self.step(S::ReiterationPending, Event::Next, &mut facts, None) {
                    self.advance(to, &mut facts, Changed::WorkerPrompt);
                }
            }
            (DecisionInput::AuditPrompt { .. }, DecisionResult::Prompt(_)) => {
                let at = if d.state == S::AuditPending {
                    self.step(S::AuditPending, Event::Next, &mut facts, None)
                } else {
                    Some(d.state)
                };
                if let Some(to) = at {
                    self.advance(to, &mut facts, Changed::AuditPrompt);
                }
            }
            (DecisionInput::OnTransition { to, .. }, _) => {
                self.advance(*to, &mut facts, Changed::Path)
            }
            _ => self.stop(format!(
                "decision {} ({}) answered with a result of another hook",
                d.index, d.hook
            )),
        }
    }

    /// The recorded decision `d` could not be re-run: the path cannot be known past it.
    pub(crate) fn unknown(&mut self, d: &RecordedDecision) {
        if self.following {
            self.stop(format!(
                "decision {} ({}, iteration {}) could not be replayed: blob {} is missing from \
                 the log",
                d.index,
                d.hook,
                d.iteration,
                d.missing_blobs.join(", ")
            ));
        }
    }

    /// Entering REITERATION_PENDING: the engine's first question there is the iteration budget,
    /// which is the new policy's `limits.max_iterations`.
    fn check_limit(&mut self, i: usize) {
        if self.rerun {
            return;
        }
        let t = &self.transitions[i];
        let max = self.policy.limits().max_iterations;
        let n = t.iteration;
        let recorded_out = self.transitions.get(i + 1).filter(|o| o.from == t.to);
        let recorded_stop = recorded_out
            .is_some_and(|o| o.to == S::Failed && o.reason.as_deref() == Some("max_iterations"));
        let new_stop = n >= max;
        if recorded_stop == new_stop || (recorded_out.is_none() && !new_stop) {
            return;
        }
        let mut facts = match self.last_ctx {
            Some(ctx) => self.facts(ctx, t.to, n),
            None => self.facts(&HookCtx::default(), t.to, n),
        };
        if new_stop {
            self.diverge(format!(
                "iteration {n}: max_iterations is {max} under the new policy, so the session \
                 ends at REITERATION_PENDING"
            ));
        } else {
            self.diverge(format!(
                "iteration {n}: max_iterations is {max} under the new policy, so the session \
                 goes on where the recorded one ran out of iterations"
            ));
        }
        self.advance(t.to, &mut facts, Changed::Path);
    }

    /// Does what the engine does in `state` and after, until a terminal state or a fact the
    /// log does not hold.
    fn advance(&mut self, mut state: S, facts: &mut HookCtx, changed: Changed) {
        loop {
            let n = facts.iteration;
            let entered = match state {
                S::Completed | S::Failed | S::Rejected => return,
                S::WorkerExecuting => {
                    return self.stop(if changed == Changed::WorkerPrompt {
                        format!(
                            "iteration {n} of the worker would have run with a different prompt: \
                             that run was never recorded"
                        )
                    } else {
                        format!(
                            "iteration {n} of the worker never ran: its output was never recorded"
                        )
                    });
                }
                S::AuditorExecuting => {
                    return self.stop(if changed == Changed::AuditPrompt {
                        format!(
                            "the auditor of iteration {n} would have run with a different \
                             prompt: its verdict on it was never recorded"
                        )
                    } else {
                        format!(
                            "the auditor of iteration {n} never ran: its verdict was never recorded"
                        )
                    });
                }
                S::RecoveryPending => {
                    return self.stop(format!(
                        "the worker of iteration {n} was never inspected: its evidence was never \
                         recorded"
                    ));
                }
                S::Interrupted => {
                    return self.stop("the session was interrupted there".to_string());
                }
                S::Created => {
                    facts.iteration = 1;
                    facts.worker_prompt.clone_from(&facts.task);
                    self.step(S::Created, Event::Run, facts, None)
                }
                S::AuditPending => match self.policy.audit_prompt(facts) {
                    Ok(_) => self.step(S::AuditPending, Event::Next, facts, None),
                    Err(e) => return self.fail(&e),
                },
                S::ReiterationPending => self.reiterate(facts),
            };
            match entered {
                Some(to) => state = to,
                None => return,
            }
        }
    }

    /// REITERATION_PENDING as the engine handles it: rerun, budget, prompt, next.
    fn reiterate(&mut self, facts: &mut HookCtx) -> Option<S> {
        let rp = S::ReiterationPending;
        if std::mem::take(&mut self.rerun) {
            return self.step(rp, Event::Next, facts, Some("rerun after pause".into()));
        }
        let max = self.policy.limits().max_iterations;
        if facts.iteration >= max {
            self.notes.push(format!("{max} of {max} iterations used"));
            return self.step(
                rp,
                Event::MaxIterations,
                facts,
                Some("max_iterations".into()),
            );
        }
        match self.policy.next_prompt(facts) {
            Ok(prompt) => {
                facts.iteration += 1;
                facts.worker_prompt = prompt;
                self.step(rp, Event::Next, facts, None)
            }
            Err(e) => {
                self.fail(&e);
                None
            }
        }
    }

    /// [`Simulation::step`] from `from`, then on from the state entered.
    fn step_on(&mut self, from: S, event: Event, facts: &mut HookCtx, reason: Option<String>) {
        if let Some(to) = self.step(from, event, facts, reason) {
            self.advance(to, facts, Changed::Path);
        }
    }

    /// One transition as the engine makes it: table, guard (not for FAILED or INTERRUPTED),
    /// commit, observer. `None` when the session ended up FAILED or the table refused.
    fn step(
        &mut self,
        from: S,
        event: Event,
        facts: &mut HookCtx,
        reason: Option<String>,
    ) -> Option<S> {
        let to = match next(from, event) {
            Ok(to) => to,
            Err(e) => {
                self.stop(format!("the machine refuses the simulated move: {e}"));
                return None;
            }
        };
        if to != S::Failed && to != S::Interrupted {
            facts.state = Some(from);
            match self.policy.guard(from, to, facts) {
                Ok(GuardOutcome::Allow) => {}
                Ok(GuardOutcome::Veto(why)) => {
                    self.notes
                        .push(format!("guard {from} -> {to} vetoes: {why}"));
                    self.path.push(S::Failed);
                    return None;
                }
                Err(e) => {
                    self.fail(&e);
                    return None;
                }
            }
        }
        self.enter(from, to, facts, reason)
    }

    /// Commits `to` and tells the observer, whose failure is fatal only before a terminal state.
    fn enter(&mut self, from: S, to: S, facts: &mut HookCtx, reason: Option<String>) -> Option<S> {
        self.path.push(to);
        facts.state = Some(to);
        facts.reason = reason;
        if let Err(e) = self.policy.on_transition(from, to, facts) {
            if !to.is_terminal() {
                self.fail(&e);
                return None;
            }
            self.notes.push(format!("warning after reaching {to}: {e}"));
        }
        (to != S::Failed).then_some(to)
    }

    /// The facts a simulated step starts from: a recorded context, in `state` at iteration
    /// `n`, with the new policy's iteration budget.
    fn facts(&self, ctx: &HookCtx, state: S, n: u32) -> HookCtx {
        let mut facts = ctx.clone();
        facts.state = Some(state);
        facts.iteration = n;
        facts.max_iterations = self.policy.limits().max_iterations;
        facts
    }

    fn diverge(&mut self, why: String) {
        self.following = false;
        self.divergence = Some(why);
    }

    /// A hook of the new policy failed: the engine's fallback is FAILED.
    fn fail(&mut self, e: &PolicyError) {
        self.following = false;
        self.notes.push(format!("{e} (policy_error)"));
        self.path.push(S::Failed);
    }

    fn stop(&mut self, why: String) {
        self.following = false;
        self.stopped = Some(why);
    }
}
