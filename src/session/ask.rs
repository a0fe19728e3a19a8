//! Every hook call goes through here: the [`Decide`](super::Decide) answers, and the core
//! records a `decision` record (docs/log-format.md) — the input of `oneshot policy replay`.

use super::step::Step;
use super::{Answer, Decide, HookError};
use crate::machine::SessionState;
use crate::policy::{GuardOutcome, HookCtx, SalvageDecision, VerdictDecision};
use crate::process::Evidence;
use crate::session::record::{
    DecisionInput, DecisionRecord, DecisionResult, Hook, PolicyLog, Record,
};
use std::sync::Arc;

impl Step<'_> {
    pub(super) fn ask_verdict(
        &mut self,
        output: &str,
        structured: Option<serde_json::Value>,
        streak: u32,
    ) -> Result<VerdictDecision, HookError> {
        if let Some((d, ctx)) = self.unrecorded() {
            ctx.structured = structured;
            ctx.open_criteria_streak = streak;
            return d.verdict(output, ctx).result;
        }
        let mut ctx = self.s.hook_ctx(self.now);
        ctx.structured = structured;
        ctx.open_criteria_streak = streak;
        let answer = self.d.verdict(output, &ctx);
        let input = DecisionInput::Verdict {
            output: output.to_string(),
            ctx: Arc::new(ctx),
        };
        self.decided("verdict", input, answer, |v| {
            DecisionResult::Verdict(v.clone())
        })
    }

    pub(super) fn ask_salvage(
        &mut self,
        evidence: &Evidence,
    ) -> Result<SalvageDecision, HookError> {
        if let Some((d, ctx)) = self.unrecorded() {
            return d.salvage(evidence, ctx).result;
        }
        let ctx = self.s.hook_ctx(self.now);
        let answer = self.d.salvage(evidence, &ctx);
        let input = DecisionInput::Salvage {
            evidence: evidence.clone(),
            ctx: Arc::new(ctx),
        };
        self.decided("salvage", input, answer, |s| {
            DecisionResult::Salvage(s.clone())
        })
    }

    pub(super) fn ask_guard(
        &mut self,
        from: SessionState,
        to: SessionState,
    ) -> Result<GuardOutcome, HookError> {
        if let Some((d, ctx)) = self.unrecorded() {
            return d.guard(from, to, ctx).result;
        }
        let ctx = self.s.hook_ctx(self.now);
        let answer = self.d.guard(from, to, &ctx);
        let input = DecisionInput::Guard {
            from,
            to,
            ctx: Arc::new(ctx),
        };
        let key = format!("guards[{from} -> {to}]");
        self.decided(&key, input, answer, |g| DecisionResult::Guard(g.clone()))
    }

    pub(super) fn ask_next_prompt(&mut self) -> Result<String, HookError> {
        if let Some((d, ctx)) = self.unrecorded() {
            return d.next_prompt(ctx).result;
        }
        let ctx = self.s.hook_ctx(self.now);
        let answer = self.d.next_prompt(&ctx);
        let input = DecisionInput::NextPrompt { ctx: Arc::new(ctx) };
        self.decided("next_prompt", input, answer, |p| {
            DecisionResult::Prompt(p.clone())
        })
    }

    /// May `role`'s agent use `tool`? The hook's answer, or a deny when the hook failed
    /// (permit fails closed), with the failure said.
    pub(super) fn ask_permit(
        &mut self,
        role: crate::process::Role,
        tool: &str,
        input: &serde_json::Value,
    ) -> crate::policy::PermitDecision {
        let ctx = self.s.hook_ctx(self.now);
        let answer = self.d.permit(role, tool, input, &ctx);
        let recorded = DecisionInput::Permit {
            role,
            tool: tool.to_string(),
            input: input.clone(),
            ctx: Arc::new(ctx),
        };
        match self.decided("permit", recorded, answer, |p| {
            DecisionResult::Permit(p.clone())
        }) {
            Ok(p) => p,
            Err(e) => {
                let reason = format!(
                    "denied because the permit policy failed: {} (permit fails closed)",
                    e.message
                );
                self.warn(&format!("{tool}: {reason}"));
                crate::policy::PermitDecision::deny(reason)
            }
        }
    }

    pub(super) fn ask_audit_prompt(&mut self) -> Result<String, HookError> {
        if let Some((d, ctx)) = self.unrecorded() {
            return d.audit_prompt(ctx).result;
        }
        let ctx = self.s.hook_ctx(self.now);
        let answer = self.d.audit_prompt(&ctx);
        let input = DecisionInput::AuditPrompt { ctx: Arc::new(ctx) };
        self.decided("audit_prompt", input, answer, |p| {
            DecisionResult::Prompt(p.clone())
        })
    }

    /// The policy's checks for this audit.
    pub(super) fn ask_checks(&mut self) -> Result<Vec<crate::check::Check>, HookError> {
        if let Some((d, ctx)) = self.unrecorded() {
            return d.checks(ctx).result;
        }
        let ctx = self.s.hook_ctx(self.now);
        let answer = self.d.checks(&ctx);
        let input = DecisionInput::Checks { ctx: Arc::new(ctx) };
        self.decided("checks", input, answer, |c| {
            DecisionResult::Checks(c.clone())
        })
    }

    pub(super) fn ask_on_transition(
        &mut self,
        from: SessionState,
        to: SessionState,
    ) -> Result<(), HookError> {
        if let Some((d, ctx)) = self.unrecorded() {
            return d.on_transition(from, to, ctx).result;
        }
        let ctx = self.s.hook_ctx(self.now);
        let answer = self.d.on_transition(from, to, &ctx);
        let input = DecisionInput::OnTransition {
            from,
            to,
            ctx: Arc::new(ctx),
        };
        self.decided("on_transition", input, answer, |()| {
            DecisionResult::Observed
        })
    }

    /// In a step for replay ([`Session::step_unrecorded`](super::Session::step_unrecorded)):
    /// who answers, and the reused context filled in for this question.
    fn unrecorded(&mut self) -> Option<(&mut dyn Decide, &mut HookCtx)> {
        let scratch = self.unrecorded.as_deref_mut()?;
        scratch.asked += 1;
        self.s.fill_hook_ctx(self.now, &mut scratch.ctx);
        Some((&mut *self.d, &mut scratch.ctx))
    }

    /// Records the decision (and what the hook logged), then hands back its answer.
    pub(super) fn decided<T>(
        &mut self,
        key: &str,
        input: DecisionInput,
        answer: Answer<T>,
        result: impl FnOnce(&T) -> DecisionResult,
    ) -> Result<T, HookError> {
        let policy = self.d.policy();
        let hook = input.hook();
        if matches!(&answer.result, Err(e) if e.interrupted()) {
            // Cut short by the user: nothing was decided. The resume asks again and records
            // that answer; a record of this one would read as a decision in `policy replay`.
            return answer.result;
        }
        let recorded = match &answer.result {
            Ok(t) => result(t),
            Err(e) => DecisionResult::Error {
                message: e.message.clone(),
                kind: e.kind.clone(),
            },
        };
        let record = Record::Decision(DecisionRecord {
            ts: self.now,
            hook,
            key: (hook == Hook::Guard).then(|| key.to_string()),
            state: self.s.state(),
            iteration: self.s.iteration,
            generation: policy.generation,
            policy_hash: policy.hash,
            builtin: answer.builtin,
            duration_us: answer.duration_us,
            input,
            result: recorded,
        });
        self.record(record);
        for (level, message) in answer.logs {
            let record = Record::PolicyLog(PolicyLog {
                ts: self.now,
                hook: key.to_string(),
                level,
                message,
            });
            self.record(record);
        }
        answer.result
    }
}
