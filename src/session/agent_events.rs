//! What an agent tells the session while it runs, beyond its output — its own session id, its
//! usage, that its run failed, that it asks to use a tool — and what that means when the run
//! ends.

use super::phase::{Phase, Run};
use super::step::Step;
use super::{AgentFailure, OwnSession, Reason, Spent};
use crate::machine::Trigger;
use crate::policy::{Budget, BudgetLevel, BudgetResource};
use crate::process::{Role, StopReason};
use crate::session::record::ProcessEvent;

impl Step<'_> {
    /// The running agent named its session: journaled before anything could need it (a crash
    /// now still resumes the conversation).
    pub(super) fn agent_session(&mut self, own: OwnSession) {
        let Some(role) = self.running_role() else {
            return self.unexpected("an agent session");
        };
        if self.s.agents.set_session(role, &own) {
            self.journal();
        }
        self.process(role, ProcessEvent::AgentSession { session: own });
    }

    /// What the ended run used: added to the session's totals and checked against
    /// `limits.budget` — warnings at 80 % and 95 % (once each), and at 100 % the session fails
    /// when the run's exit is handled.
    pub(super) fn agent_usage(&mut self, spent: Spent) {
        let Some(role) = self.running_role() else {
            return self.unexpected("an agent's usage");
        };
        if let Some(run) = self.s.phase.run_mut() {
            // The agent's own account of the run replaces the count kept while it ran.
            run.progress = Spent::default();
        }
        self.process(role, ProcessEvent::AgentUsage { spent });
        let total = &mut self.s.agents.spent;
        total.turns = total.turns.saturating_add(spent.turns);
        total.tokens = total.tokens.saturating_add(spent.tokens);
        total.usd += spent.usd;
        let budget = self.limits().budget;
        let level = budget.check(&self.s.agents.spent.as_use());
        let (mark, resource) = match level {
            BudgetLevel::Warn80(r) => (80, r),
            BudgetLevel::Warn95(r) => (95, r),
            // Spent: the exit that follows fails the session; under budget: nothing to say.
            BudgetLevel::Exceeded(_) | BudgetLevel::Ok => return,
        };
        if mark <= self.s.agents.budget_warned {
            return;
        }
        self.s.agents.budget_warned = mark;
        self.journal();
        let (used, limit) = usage_of(&self.s.agents.spent, &budget, resource);
        self.warn(&format!(
            "{mark}% of the {} budget is used: {used} of {limit} (limits.budget)",
            resource.as_str()
        ));
    }

    /// The reason to stop when the agents' usage has reached a budget of the policy in force.
    fn budget_exceeded(&self) -> Option<Reason> {
        let budget = self.limits().budget;
        let BudgetLevel::Exceeded(resource) = budget.check(&self.s.agents.spent.as_use()) else {
            return None;
        };
        let (used, limit) = usage_of(&self.s.agents.spent, &budget, resource);
        Some(Reason::BudgetExceeded {
            resource: resource.as_str().to_string(),
            used,
            limit,
        })
    }

    /// What the running agent has used so far: when the session's total with it goes past
    /// `limits.budget`, the run is stopped (its exit then fails the session for the budget).
    pub(super) fn agent_progress(&mut self, spent: Spent) {
        let Some(role) = self.running_role() else {
            return self.unexpected("an agent's progress");
        };
        let budget = self.limits().budget;
        let total = self.s.agents.spent.plus(&spent);
        let Some(run) = self.s.phase.run_mut() else {
            return;
        };
        if run.progress == spent {
            return;
        }
        run.progress = spent;
        let running = run.process.is_some() && run.exited.is_none() && run.stopping.is_none();
        self.process(role, ProcessEvent::AgentProgress { spent });
        if running && budget.overrun(&total.as_use()) {
            if let Some(run) = self.s.phase.run_mut() {
                run.stopping = Some(StopReason::BudgetExceeded);
            }
            self.note(&format!(
                "the {role} spent the budget while it ran (limits.budget); stopping it"
            ));
            self.stop(role, StopReason::BudgetExceeded);
        }
    }

    /// A run stopped for its budget ended: its count so far joins the total when the agent
    /// could not report its own (it was stopped mid-turn), and the session fails. False when
    /// the budget no longer is spent (a reloaded policy raised it): the run then ends as any
    /// run oneshot stopped.
    pub(super) fn budget_stop_ended(&mut self, role: Role) -> bool {
        if let Some(run) = self.s.phase.run_mut() {
            let progress = std::mem::take(&mut run.progress);
            self.s.agents.spent = self.s.agents.spent.plus(&progress);
        }
        let Some(reason) = self.budget_exceeded() else {
            return false;
        };
        self.fail_run(role, reason);
        true
    }

    /// The auditor's answer as an object that fits the `verdict` schema
    /// ([`crate::policy::structured_verdict`], the reading a job's panel members get too). An
    /// agent auditor was asked for that schema: an answer that does not fit is said, and the
    /// verdict is then read from its words. A command auditor's `VERDICT:` lines need no schema.
    pub(super) fn structured_verdict(&mut self, output: &str) -> Option<serde_json::Value> {
        match crate::policy::structured_verdict(output) {
            Ok(v) => Some(v),
            Err(e) => {
                if self.s.agents.auditor.is_some() {
                    self.note(&format!(
                        "the auditor's answer does not fit the verdict schema: {e}"
                    ));
                }
                None
            }
        }
    }

    /// The running agent reported a failed run; what it means is decided when it exits.
    pub(super) fn agent_failed(&mut self, mut failure: AgentFailure) {
        let Some(role) = self.running_role() else {
            return self.unexpected("an agent failure");
        };
        failure.message = self.d.redact(&failure.message).into_owned();
        if let Some(run) = self.s.phase.run_mut() {
            run.failure = Some(failure.clone());
        }
        self.process(role, ProcessEvent::AgentFailed { failure });
    }

    /// The running agent asks to use a tool: the policy's `permit` answers (a failed hook
    /// denies).
    pub(super) fn permission(
        &mut self,
        request_id: String,
        tool: String,
        input: serde_json::Value,
    ) {
        let Some(role) = self.running_role() else {
            return self.unexpected("a tool-permission request");
        };
        let answer = self.ask_permit(role, &tool, &input);
        self.out.push(super::Effect::Permit {
            request_id,
            allow: answer.allow,
            reason: answer.reason,
            input,
        });
    }

    /// Decides a run's end where the agent's own report settles it (a run oneshot did not
    /// stop): a spent budget, refused credentials, a transient provider failure (retried), an
    /// auditor's failure. False when the ordinary exit rules decide.
    pub(super) fn agent_ended(&mut self, role: Role, failure: Option<&AgentFailure>) -> bool {
        if let Some(reason) = self.budget_exceeded() {
            // Nothing more may run.
            self.fail_run(role, reason);
            return true;
        }
        let Some(failure) = failure else {
            return false;
        };
        if failure.is_auth() {
            // No retry or salvage can help (a worker's run would otherwise go to recovery and
            // run again with the same refused key); the reason says what to fix.
            let failure = failure.clone();
            self.fail_run(role, Reason::AgentFailed { role, failure });
        } else if failure.kind.is_transient() {
            // A provider that may recover (5xx, 529, 429, a cut stream).
            self.retry_or_fail(role, failure.clone());
        } else if role == Role::Auditor {
            let failure = failure.clone();
            self.fail_run(role, Reason::AgentFailed { role, failure });
        } else {
            // A worker's other failure is inspected like any failed run.
            return false;
        }
        true
    }

    /// The running role's run ends the session: FAILED for `reason`. A worker's run otherwise
    /// goes to recovery, so it takes the table's abort; an auditor's failure is its own row.
    fn fail_run(&mut self, role: Role, reason: Reason) {
        let trigger = match role {
            Role::Worker => Trigger::Abort,
            Role::Auditor => Trigger::ExitedErr,
        };
        self.transition(trigger, Phase::failed(), Some(reason));
        self.advance();
    }

    /// A transient provider failure ended the run: run it again after the backoff of
    /// `limits.retry`, or, with the retries spent, fail with the provider's error.
    pub(super) fn retry_or_fail(&mut self, role: Role, mut failure: AgentFailure) {
        let retry = self.limits().retry;
        let attempt = self.s.phase.run().map_or(0, |r| r.attempt);
        if attempt < retry.attempts {
            let next = attempt + 1;
            let delay = retry.delay(next);
            let status = failure.status.map(|s| format!(" {s}")).unwrap_or_default();
            self.note(&format!(
                "the {role} ({}) hit a transient provider failure ({}{status}): {}; retry {next} \
                 of {} in {}",
                failure.agent,
                failure.kind.as_str(),
                failure.message,
                retry.attempts,
                humantime::format_duration(delay)
            ));
            if let Some(run) = self.s.phase.run_mut() {
                *run = Run {
                    attempt: next,
                    ..Run::default()
                };
            }
            self.journal();
            return self.spawn();
        }
        if attempt > 0 {
            failure.message = format!(
                "{} (still failing after {attempt} retr{})",
                failure.message,
                if attempt == 1 { "y" } else { "ies" }
            );
        }
        // There is nothing to salvage from a provider that never answered, and its error is
        // what the user needs to see.
        self.fail_run(role, Reason::AgentFailed { role, failure });
    }

    /// The role whose process runs now (started, not yet exited).
    fn running_role(&self) -> Option<crate::process::Role> {
        let run = self.s.phase.run()?;
        (run.process.is_some() && run.exited.is_none())
            .then(|| self.s.phase.role())
            .flatten()
    }
}

/// How much of `resource` was used, and its budget.
fn usage_of(spent: &Spent, budget: &Budget, resource: BudgetResource) -> (f64, f64) {
    match resource {
        BudgetResource::Turns => (f64::from(spent.turns), budget.turns.map_or(0.0, f64::from)),
        BudgetResource::Tokens => (spent.tokens as f64, budget.tokens.map_or(0.0, |t| t as f64)),
        BudgetResource::Usd => (spent.usd, budget.usd.unwrap_or(0.0)),
    }
}

impl Step<'_> {
    /// The running agent's turn began or ended: recorded, so the log (and whoever follows it)
    /// shows the agent's own turns beside ours.
    pub(super) fn agent_turn(&mut self, change: crate::agent::TurnChange) {
        use crate::agent::TurnChange;
        use crate::session::record::{Record, TurnEvent, TurnRecord};
        let Some(role) = self.running_role() else {
            return self.unexpected("an agent's turn");
        };
        let (event, owner, interrupted) = match change {
            TurnChange::Began { owner } => (TurnEvent::Began, owner, false),
            TurnChange::Ended { owner, interrupted } => (TurnEvent::Ended, owner, interrupted),
        };
        self.record(Record::Turn(TurnRecord {
            ts: self.now,
            role,
            iteration: self.s.iteration,
            event,
            owner,
            interrupted,
        }));
    }

    /// The worker has waited on its background tasks alone for `limits.background_wait`:
    /// they are stopped, and its run ends.
    pub(super) fn background_wait_over(&mut self) {
        if self.running_role().is_none() {
            return self.unexpected("the end of a background wait");
        }
        let wait = self.limits().background_wait;
        self.note(&format!(
            "the agent's background tasks still ran after {} (limits.background_wait): \
             stopping them",
            humantime::format_duration(wait)
        ));
        self.out.push(super::Effect::StopBackground);
    }
}

impl Step<'_> {
    /// The agent's transcript held messages its stream did not carry: added to the run's
    /// account (by the reader), said here — nothing was lost, but the stream was not whole.
    pub(super) fn agent_reconciled(&mut self, added: &[String]) {
        let Some(role) = self.running_role() else {
            return self.unexpected("a reconciliation with the agent's transcript");
        };
        self.warn(&format!(
            "the {role}'s transcript holds {} message(s) its output stream did not carry ({}): \
             added to its account from the transcript",
            added.len(),
            added.join(", ")
        ));
    }
}
