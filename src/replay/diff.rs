//! Each recorded question asked again: which decisions the new policy answers differently,
//! whatever path the session would take.

use super::describe::{describe_pair, same};
use super::facts::Recording;
use super::report::{Difference, IncompleteDecision, ReplayFailure};
use crate::pipeline::Redactor;
use crate::policy::{FailMode, PolicyHost};
use crate::session::{Decide, HookError, PolicyJudge};
use crate::store::{DecisionInput, DecisionResult};

/// What asking every recorded question again found.
#[derive(Debug, Default)]
pub(crate) struct Diff {
    pub replayed: usize,
    pub differences: Vec<Difference>,
    pub errors: Vec<ReplayFailure>,
    pub incomplete: Vec<IncompleteDecision>,
}

/// Asks `policy` every recorded question with its recorded input, through the same
/// [`Decide`] calls the engine makes (so built-in defaults stand in for missing hooks).
pub(crate) fn diff(rec: &Recording, policy: &PolicyHost, include_reasons: bool) -> Diff {
    let redactor = Redactor::new(&[], Vec::new()).expect("no patterns always compile");
    let mut judge = PolicyJudge::new(policy, 1, &redactor);
    let mut out = Diff::default();
    for d in &rec.decisions {
        if !d.missing_blobs.is_empty() {
            out.incomplete.push(IncompleteDecision {
                index: d.index,
                hook: d.hook,
                iteration: d.iteration,
                state: d.state,
                missing_blobs: d.missing_blobs.clone(),
            });
            continue;
        }
        out.replayed += 1;
        match ask(&mut judge, &d.input) {
            Ok(new) if !same(&d.result, &new, include_reasons) => {
                let (old, new) = describe_pair(&d.result, &new, include_reasons);
                out.differences.push(Difference {
                    index: d.index,
                    hook: d.hook,
                    iteration: d.iteration,
                    state: d.state,
                    old,
                    new,
                });
            }
            Ok(_) => {}
            Err(e) => out.errors.push(ReplayFailure {
                index: d.index,
                hook: d.hook,
                iteration: d.iteration,
                state: d.state,
                fails: match judge.fail_mode(&e.hook) {
                    FailMode::Open => "open",
                    FailMode::Closed => "closed",
                },
                error: e.message,
                kind: e.kind,
            }),
        }
    }
    out
}

/// One recorded question, asked of `judge`.
fn ask(judge: &mut dyn Decide, input: &DecisionInput) -> Result<DecisionResult, HookError> {
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
    })
}
