//! Each recorded question asked again: which decisions the new policy answers differently,
//! whatever path the session would take.

use super::describe::{describe_pair, same};
use super::facts::Recording;
use super::report::{Difference, DifferenceKind, IncompleteDecision, ReplayFailure};
use crate::policy::FailMode;
use crate::session::{Decide, HookError, PolicyJudge};
use crate::store::{DecisionInput, DecisionResult};

/// The new policy's answer to a recorded question, by decision index; `None` where the
/// question was not asked again (a blob it needs is missing).
pub(crate) type Answers = Vec<Option<Result<DecisionResult, HookError>>>;

/// What asking the recorded questions again found, so far.
#[derive(Debug, Default)]
pub(crate) struct Diff {
    pub replayed: usize,
    pub differences: Vec<Difference>,
    pub errors: Vec<ReplayFailure>,
    pub incomplete: Vec<IncompleteDecision>,
    /// The answers, by decision index: how many questions were asked again, and what the
    /// simulation reuses.
    pub answers: Answers,
}

impl Diff {
    /// Asks `judge` the recorded questions up to index `last` not asked yet, in log order,
    /// each with its recorded input, through the same [`Decide`] calls the engine makes (so
    /// built-in defaults stand in for missing hooks).
    pub(crate) fn ask_through(&mut self, last: usize, rec: &Recording, judge: &mut PolicyJudge) {
        let end = rec.decisions.len().min(last.saturating_add(1));
        while self.answers.len() < end {
            let answer = self.ask_again(rec, judge);
            self.answers.push(answer);
        }
    }

    /// Asks the next recorded question again and notes what differs: the answer, or only its
    /// reason (a critique is the next prompt, so a changed one is a difference too).
    fn ask_again(
        &mut self,
        rec: &Recording,
        judge: &mut PolicyJudge,
    ) -> Option<Result<DecisionResult, HookError>> {
        let d = &rec.decisions[self.answers.len()];
        if !d.missing_blobs.is_empty() {
            self.incomplete.push(IncompleteDecision {
                index: d.index,
                hook: d.hook,
                iteration: d.iteration,
                state: d.state,
                missing_blobs: d.missing_blobs.clone(),
            });
            return None;
        }
        self.replayed += 1;
        let answer = ask(judge, &d.input);
        match &answer {
            Ok(new) if !same(&d.result, new, true) => {
                let kind = if same(&d.result, new, false) {
                    DifferenceKind::Reason
                } else {
                    DifferenceKind::Answer
                };
                let (old, new) = describe_pair(&d.result, new);
                self.differences.push(Difference {
                    index: d.index,
                    hook: d.hook,
                    iteration: d.iteration,
                    state: d.state,
                    kind,
                    old,
                    new,
                });
            }
            Ok(_) => {}
            Err(e) => self.errors.push(ReplayFailure {
                index: d.index,
                hook: d.hook,
                iteration: d.iteration,
                state: d.state,
                fails: match judge.fail_mode(&e.hook) {
                    FailMode::Open => "open",
                    FailMode::Closed => "closed",
                },
                error: e.message.clone(),
                kind: e.kind.clone(),
            }),
        }
        Some(answer)
    }
}

/// One recorded question, asked of `judge`.
fn ask(judge: &mut PolicyJudge, input: &DecisionInput) -> Result<DecisionResult, HookError> {
    Ok(match input {
        DecisionInput::Verdict { output, ctx } => {
            DecisionResult::Verdict(judge.verdict(output, ctx).result?)
        }
        DecisionInput::Salvage { evidence, ctx } => {
            DecisionResult::Salvage(judge.salvage(evidence, ctx).result?)
        }
        DecisionInput::Guard { from, to, ctx } => {
            DecisionResult::Guard(judge.guard(*from, *to, ctx).result?)
        }
        DecisionInput::NextPrompt { ctx } => DecisionResult::Prompt(judge.next_prompt(ctx).result?),
        DecisionInput::AuditPrompt { ctx } => {
            DecisionResult::Prompt(judge.audit_prompt(ctx).result?)
        }
        DecisionInput::Checks { ctx } => DecisionResult::Checks(judge.checks(ctx).result?),
        DecisionInput::OnTransition { from, to, ctx } => {
            judge.on_transition(*from, *to, ctx).result?;
            DecisionResult::Observed
        }
        DecisionInput::Permit {
            role,
            tool,
            input,
            ctx,
        } => DecisionResult::Permit(judge.permit(*role, tool, input, ctx).result?),
        DecisionInput::Egress {
            host,
            port,
            agent,
            role,
            ctx,
        } => {
            let req = crate::policy::EgressQuery {
                host: host.clone(),
                port: *port,
                agent: agent.clone(),
                role: *role,
            };
            DecisionResult::Egress(judge.egress(&req, ctx).result?)
        }
    })
}
