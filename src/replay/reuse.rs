//! Who answers the simulated core: the answers the re-asked questions got, wherever the core
//! asks the very question the recording holds, else the new policy.
//!
//! While the simulated path follows the recorded one, the core asks exactly the recorded
//! questions, in order, with the same inputs — and [`Diff`] asks the new policy each of them
//! again. Asking twice would cost a second hook call per decision for the same answer, so the
//! re-asked answer stands in. Where the inputs differ in anything (the paths have parted, a
//! context field changed), the policy is asked. The recorded questions are re-asked as the
//! core gets to them, so each recorded input is read while it is still in the cache.

use super::diff::Diff;
use super::facts::Recording;
use crate::machine::SessionState;
use crate::policy::{FailMode, GuardOutcome, HookCtx, Limits, SalvageDecision, VerdictDecision};
use crate::process::Evidence;
use crate::session::{Answer, Decide, HookError, PolicyJudge, PolicyRef};
use crate::store::{DecisionInput, DecisionResult, Hook};
use std::borrow::Cow;

/// One question the simulated core asked.
#[derive(Debug)]
pub(crate) enum Asked {
    /// The recorded question at this index, answered as re-asked: with that answer where it
    /// differs from the recorded one (the re-asked answer itself went to the core).
    Recorded(Option<DecisionResult>),
    /// Another question, and the new policy's answer (read by the tests).
    #[cfg_attr(not(test), allow(dead_code))]
    New {
        /// The hook.
        hook: Hook,
        /// Its answer.
        result: DecisionResult,
    },
}

/// A [`Decide`] that re-asks the recorded questions ([`Diff`]) and answers the core from
/// them where it can, asking `judge` the rest.
pub(crate) struct Reusing<'a> {
    judge: PolicyJudge<'a>,
    rec: &'a Recording,
    diff: Diff,
    /// What the core asked, in order.
    pub asked: Vec<Asked>,
}

impl<'a> Reusing<'a> {
    pub(crate) fn new(judge: PolicyJudge<'a>, rec: &'a Recording) -> Self {
        Reusing {
            judge,
            rec,
            diff: Diff {
                answers: Vec::with_capacity(rec.decisions.len()),
                ..Diff::default()
            },
            asked: Vec::with_capacity(rec.decisions.len()),
        }
    }

    /// Re-asks the recorded questions the core did not get to, and hands back the lot.
    pub(crate) fn finish(mut self) -> Diff {
        self.diff.ask_through(usize::MAX, self.rec, &mut self.judge);
        self.diff
    }

    /// Question `i` as the hook it went to and the answer it got.
    #[cfg(test)]
    pub(crate) fn asked(&self, i: usize) -> Option<(Hook, Cow<'_, DecisionResult>)> {
        match self.asked.get(i)? {
            Asked::New { hook, result } => Some((*hook, Cow::Borrowed(result))),
            Asked::Recorded(differs) => {
                let recorded = &self.rec.decisions[i];
                let result = differs.as_ref().unwrap_or(&recorded.result);
                Some((recorded.hook, Cow::Borrowed(result)))
            }
        }
    }

    /// The answer to the core's next question: the re-asked one when `same` says the
    /// recorded input is this question's (and `from` reads that answer as a `T`), else
    /// `ask`'s.
    fn answer<T>(
        &mut self,
        same: impl FnOnce(&DecisionInput) -> bool,
        from: impl FnOnce(DecisionResult) -> Option<T>,
        ask: impl FnOnce(&mut PolicyJudge<'a>) -> Answer<T>,
        hook: Hook,
        as_result: impl FnOnce(&T) -> DecisionResult,
    ) -> Answer<T> {
        let i = self.asked.len();
        super::prefetch::ahead_of(self.rec, i);
        let same = self.rec.decisions.get(i).is_some_and(|d| same(&d.input));
        self.diff.ask_through(i, self.rec, &mut self.judge);
        if let Some((result, differs)) = same.then(|| self.reasked(i, from)).flatten() {
            self.asked.push(Asked::Recorded(differs));
            // Only the decision record reads `builtin`, `duration_us` and `logs`, and a
            // simulated step builds none.
            return Answer {
                result,
                builtin: false,
                duration_us: 0,
                logs: Vec::new(),
            };
        }
        let answer = ask(&mut self.judge);
        let result = match &answer.result {
            Ok(t) => as_result(t),
            Err(e) => error_result(e),
        };
        self.asked.push(Asked::New { hook, result });
        answer
    }

    /// The answer recorded question `i` got when re-asked, as a `T` (taken: each recorded
    /// question is the core's once), and that answer again if it differs from the recorded
    /// one, in its word or only its reason.
    #[allow(clippy::type_complexity)]
    fn reasked<T>(
        &mut self,
        i: usize,
        from: impl FnOnce(DecisionResult) -> Option<T>,
    ) -> Option<(Result<T, HookError>, Option<DecisionResult>)> {
        let recorded = &self.rec.decisions[i].result;
        match self.diff.answers.get_mut(i)?.take()? {
            Ok(result) => {
                let differs =
                    (!super::describe::same(recorded, &result, true)).then(|| result.clone());
                Some((Ok(from(result)?), differs))
            }
            Err(e) => {
                let differs = (!recorded.is_error()).then(|| error_result(&e));
                Some((Err(e), differs))
            }
        }
    }
}

/// A failed hook as the decision record says it.
fn error_result(e: &HookError) -> DecisionResult {
    DecisionResult::Error {
        message: e.message.clone(),
        kind: e.kind.clone(),
    }
}

impl Decide for Reusing<'_> {
    fn policy(&self) -> PolicyRef {
        self.judge.policy()
    }

    fn limits(&self) -> Limits {
        self.judge.limits()
    }

    fn fail_mode(&self, hook: &str) -> FailMode {
        self.judge.fail_mode(hook)
    }

    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.judge.redact(text)
    }

    fn verdict(&mut self, output: &str, ctx: &HookCtx) -> Answer<VerdictDecision> {
        self.answer(
            |i| matches!(i, DecisionInput::Verdict { output: o, ctx: c } if o == output && **c == *ctx),
            |r| match r {
                DecisionResult::Verdict(v) => Some(v),
                _ => None,
            },
            |j| j.verdict(output, ctx),
            Hook::Verdict,
            |v| DecisionResult::Verdict(v.clone()),
        )
    }

    fn salvage(&mut self, evidence: &Evidence, ctx: &HookCtx) -> Answer<SalvageDecision> {
        self.answer(
            |i| matches!(i, DecisionInput::Salvage { evidence: e, ctx: c } if e == evidence && **c == *ctx),
            |r| match r {
                DecisionResult::Salvage(s) => Some(s),
                _ => None,
            },
            |j| j.salvage(evidence, ctx),
            Hook::Salvage,
            |s| DecisionResult::Salvage(s.clone()),
        )
    }

    fn guard(
        &mut self,
        from: SessionState,
        to: SessionState,
        ctx: &HookCtx,
    ) -> Answer<GuardOutcome> {
        self.answer(
            |i| matches!(i, DecisionInput::Guard { from: f, to: t, ctx: c } if *f == from && *t == to && **c == *ctx),
            |r| match r {
                DecisionResult::Guard(g) => Some(g),
                _ => None,
            },
            |j| j.guard(from, to, ctx),
            Hook::Guard,
            |g| DecisionResult::Guard(g.clone()),
        )
    }

    fn next_prompt(&mut self, ctx: &HookCtx) -> Answer<String> {
        self.answer(
            |i| matches!(i, DecisionInput::NextPrompt { ctx: c } if **c == *ctx),
            prompt,
            |j| j.next_prompt(ctx),
            Hook::NextPrompt,
            |p| DecisionResult::Prompt(p.clone()),
        )
    }

    fn audit_prompt(&mut self, ctx: &HookCtx) -> Answer<String> {
        self.answer(
            |i| matches!(i, DecisionInput::AuditPrompt { ctx: c } if **c == *ctx),
            prompt,
            |j| j.audit_prompt(ctx),
            Hook::AuditPrompt,
            |p| DecisionResult::Prompt(p.clone()),
        )
    }

    fn on_transition(&mut self, from: SessionState, to: SessionState, ctx: &HookCtx) -> Answer<()> {
        self.answer(
            |i| matches!(i, DecisionInput::OnTransition { from: f, to: t, ctx: c } if *f == from && *t == to && **c == *ctx),
            |r| matches!(r, DecisionResult::Observed).then_some(()),
            |j| j.on_transition(from, to, ctx),
            Hook::OnTransition,
            |()| DecisionResult::Observed,
        )
    }

    fn permit(
        &mut self,
        role: crate::process::Role,
        tool: &str,
        input: &serde_json::Value,
        ctx: &HookCtx,
    ) -> Answer<crate::policy::PermitDecision> {
        self.answer(
            |i| matches!(i, DecisionInput::Permit { role: r, tool: t, input: x, ctx: c } if *r == role && t == tool && x == input && **c == *ctx),
            |r| match r {
                DecisionResult::Permit(p) => Some(p),
                _ => None,
            },
            |j| j.permit(role, tool, input, ctx),
            Hook::Permit,
            |p| DecisionResult::Permit(p.clone()),
        )
    }

    fn has_checks(&self) -> bool {
        self.judge.has_checks()
    }

    fn checks(&mut self, ctx: &HookCtx) -> Answer<Vec<crate::check::Check>> {
        self.answer(
            |i| matches!(i, DecisionInput::Checks { ctx: c } if **c == *ctx),
            |r| match r {
                DecisionResult::Checks(c) => Some(c),
                _ => None,
            },
            |j| j.checks(ctx),
            Hook::Checks,
            |c| DecisionResult::Checks(c.clone()),
        )
    }

    fn continue_conversation(&self) -> bool {
        self.judge.continue_conversation()
    }
}

fn prompt(r: DecisionResult) -> Option<String> {
    match r {
        DecisionResult::Prompt(p) => Some(p),
        _ => None,
    }
}
