//! The typed hook calls the engine makes, each falling back to the built-in behaviour when the
//! policy does not define the hook, and validating whatever the hook returns.

use super::HookCtx;
use super::PolicyHost;
use super::decision::{GuardOutcome, SalvageDecision, VerdictDecision, default_salvage};
use super::error::PolicyError;
use super::host::LuaPolicy;
use super::lua_ctx::{describe, head, string_list, tail};
use super::prompts::{default_audit_prompt, default_worker_retry_prompt};
use super::verdict::{parse_verdict, verdict_from_name};
use crate::machine::{Salvage, SessionState};
use crate::process::Evidence;
use mlua::{Function, Table, Value};

/// Reasons and prompts longer than this are cut: they go into history entries and prompts.
const MAX_REASON: usize = 16 * 1024;

const VERDICT_EXPECTED: &str =
    "\"done\", \"retry\" or \"impossible\" (or \"none\": the answer held no verdict)";
const SALVAGE_EXPECTED: &str = "\"success\", \"partial\" or \"nothing\"";

impl PolicyHost {
    /// Judges the auditor's `output`: the `verdict` hook, or the built-in reader
    /// (`oneshot.parse_verdict` in Lua).
    pub fn verdict(&self, output: &str, ctx: &HookCtx) -> Result<VerdictDecision, PolicyError> {
        let Some((policy, f)) = self.hook(|p| p.verdict.as_ref()) else {
            // The answer that fits the verdict schema, when there is one (an agent's JSON in
            // prose or a fenced block), else the output as written.
            return Ok(match &ctx.structured {
                Some(v) => parse_verdict(&v.to_string()),
                None => parse_verdict(output),
            });
        };
        let hook = "verdict";
        let ctx = policy.ctx_table(hook, ctx)?;
        let output = policy.lua_string(hook, tail(output))?;
        let (first, reason, confidence): (Value, Value, Value) =
            policy.call(hook, f, (output, ctx))?;
        let (verdict, reason, confidence) = match first {
            Value::Table(t) => (raw(&t, "verdict"), raw(&t, "reason"), raw(&t, "confidence")),
            other => (other, reason, confidence),
        };
        let verdict = match &verdict {
            Value::String(s) if text(s).trim().eq_ignore_ascii_case("none") => Some(None),
            Value::String(s) => verdict_from_name(&text(s)).map(Some),
            _ => None,
        }
        .ok_or_else(|| bad(hook, &verdict, VERDICT_EXPECTED))?;
        let confidence = match confidence {
            Value::Nil => None,
            Value::Number(n) if (0.0..=1.0).contains(&n) => Some(n),
            Value::Integer(i) if (0..=1).contains(&i) => Some(i as f64),
            other => return Err(bad(hook, &other, "a confidence between 0 and 1, or nil")),
        };
        Ok(VerdictDecision {
            verdict,
            reason: reason_of(hook, reason)?,
            confidence,
        })
    }

    /// Judges a stopped worker: the `salvage` hook, or the built-in rule.
    pub fn salvage(
        &self,
        evidence: &Evidence,
        ctx: &HookCtx,
    ) -> Result<SalvageDecision, PolicyError> {
        let Some((policy, f)) = self.hook(|p| p.salvage.as_ref()) else {
            return Ok(default_salvage(evidence));
        };
        let hook = "salvage";
        let ctx = policy.ctx_table(hook, ctx)?;
        let evidence = policy
            .evidence_table(evidence)
            .map_err(|e| policy_setup(hook, e, policy.memory_limit))?;
        let (first, reason): (Value, Value) = policy.call(hook, f, (evidence, ctx))?;
        let (salvage, reason) = match first {
            Value::Table(t) => (raw(&t, "salvage"), raw(&t, "reason")),
            other => (other, reason),
        };
        let salvage = match &salvage {
            Value::String(s) => match s.to_string_lossy().trim().to_ascii_lowercase().as_str() {
                "success" => Some(Salvage::Success),
                "partial" => Some(Salvage::Partial),
                "nothing" => Some(Salvage::Nothing),
                _ => None,
            },
            _ => None,
        }
        .ok_or_else(|| bad(hook, &salvage, SALVAGE_EXPECTED))?;
        Ok(SalvageDecision {
            salvage,
            reason: reason_of(hook, reason)?,
        })
    }

    /// Asks `guards["FROM -> TO"]` whether the transition may happen; `Allow` when there is
    /// no such guard. The guard must answer with an explicit boolean.
    pub fn guard(
        &self,
        from: SessionState,
        to: SessionState,
        ctx: &HookCtx,
    ) -> Result<GuardOutcome, PolicyError> {
        let (Some(policy), Some((hook, f))) = (self.lua.as_ref(), self.guard_fn(from, to)) else {
            return Ok(GuardOutcome::Allow);
        };
        let ctx = policy.ctx_table(hook, ctx)?;
        let (answer, reason): (Value, Value) = policy.call(hook, f, ctx)?;
        match answer {
            Value::Boolean(true) => Ok(GuardOutcome::Allow),
            Value::Boolean(false) => Ok(GuardOutcome::Veto(
                reason_of(hook, reason)?.unwrap_or_else(|| format!("vetoed by {hook}")),
            )),
            other => Err(bad(hook, &other, "true, or false and a reason")),
        }
    }

    /// The worker's prompt for the next iteration: the `next_prompt` hook, or
    /// the built-in retry prompt when it is absent or returns nil.
    pub fn next_prompt(&self, ctx: &HookCtx) -> Result<String, PolicyError> {
        let from_hook = match self.hook(|p| p.next_prompt.as_ref()) {
            Some((policy, f)) => policy.prompt("next_prompt", f, ctx)?,
            None => None,
        };
        Ok(from_hook.unwrap_or_else(|| default_worker_retry_prompt(ctx)))
    }

    /// The auditor's prompt: the `audit_prompt` hook, or the built-in audit prompt when it is
    /// absent or returns nil.
    pub fn audit_prompt(&self, ctx: &HookCtx) -> Result<String, PolicyError> {
        Ok(self
            .audit_prompt_hook(ctx)?
            .unwrap_or_else(|| default_audit_prompt(ctx)))
    }

    /// The `audit_prompt` hook's own answer: `None` when the policy has no such hook or it
    /// returned nil, so a caller with a built-in prompt of its own (a job's panel) uses that.
    pub fn audit_prompt_hook(&self, ctx: &HookCtx) -> Result<Option<String>, PolicyError> {
        match self.hook(|p| p.audit_prompt.as_ref()) {
            Some((policy, f)) => policy.prompt("audit_prompt", f, ctx),
            None => Ok(None),
        }
    }

    /// Tells the `on_transition` observer about a transition that happened. Its return values
    /// are ignored; its errors are still reported.
    pub fn on_transition(
        &self,
        from: SessionState,
        to: SessionState,
        ctx: &HookCtx,
    ) -> Result<(), PolicyError> {
        let Some((policy, f)) = self.hook(|p| p.on_transition.as_ref()) else {
            return Ok(());
        };
        let hook = "on_transition";
        let ctx = policy.ctx_table(hook, ctx)?;
        policy.call::<()>(hook, f, (from.as_str(), to.as_str(), ctx))
    }

    fn hook<'a>(
        &'a self,
        pick: impl FnOnce(&'a super::schema::Parsed) -> Option<&'a Function>,
    ) -> Option<(&'a LuaPolicy, &'a Function)> {
        let policy = self.lua.as_ref()?;
        pick(&policy.parsed).map(|f| (policy, f))
    }
}

impl LuaPolicy {
    pub(super) fn ctx_table(&self, hook: &str, ctx: &HookCtx) -> Result<Table, PolicyError> {
        self.ctx
            .borrow_mut()
            .fill(ctx)
            .map_err(|e| policy_setup(hook, e, self.memory_limit))
    }

    fn lua_string(&self, hook: &str, s: &str) -> Result<mlua::LuaString, PolicyError> {
        self.lua
            .create_string(s)
            .map_err(|e| policy_setup(hook, e, self.memory_limit))
    }

    fn evidence_table(&self, evidence: &Evidence) -> mlua::Result<Table> {
        let t = self.lua.create_table_with_capacity(0, 6)?;
        t.raw_set("reason", evidence.reason.map(|r| r.as_str()))?;
        t.raw_set("exit_code", evidence.exit_code)?;
        t.raw_set("signal", evidence.signal)?;
        t.raw_set("output_tail", tail(&evidence.output_tail))?;
        t.raw_set(
            "changed_files",
            string_list(&self.lua, &evidence.changed_files)?,
        )?;
        t.raw_set("changes_source", head(&evidence.changes_source))?;
        if let Some(tr) = &evidence.transcript {
            // What the agent's own transcript says it did (Claude): the zombie-success facts.
            let x = self.lua.create_table_with_capacity(0, 4)?;
            x.raw_set("path", head(&tr.path))?;
            x.raw_set("last_message", tr.last_message.as_deref().map(tail))?;
            x.raw_set("tool_results", tr.tool_results)?;
            x.raw_set("files", string_list(&self.lua, &tr.files)?)?;
            x.set_readonly(true);
            t.raw_set("transcript", x)?;
        }
        t.set_readonly(true);
        Ok(t)
    }

    fn prompt(
        &self,
        hook: &str,
        f: &Function,
        ctx: &HookCtx,
    ) -> Result<Option<String>, PolicyError> {
        let ctx = self.ctx_table(hook, ctx)?;
        match self.call::<Value>(hook, f, ctx)? {
            Value::Nil => Ok(None),
            Value::String(s) if !s.to_string_lossy().trim().is_empty() => {
                Ok(Some(s.to_string_lossy()))
            }
            other => Err(bad(
                hook,
                &other,
                "a non-empty string, or nil for the built-in prompt",
            )),
        }
    }
}

fn raw(table: &Table, key: &str) -> Value {
    table.raw_get(key).unwrap_or(Value::Nil)
}

pub(super) fn reason_of(hook: &str, value: Value) -> Result<Option<String>, PolicyError> {
    match value {
        Value::Nil => Ok(None),
        Value::String(s) => {
            let text = text(&s);
            let text = head(&text);
            let cut = if text.len() > MAX_REASON {
                let mut at = MAX_REASON;
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                &text[..at]
            } else {
                text
            };
            Ok(Some(cut.trim().to_string()).filter(|r| !r.is_empty()))
        }
        other => Err(bad(hook, &other, "a reason string, or nil")),
    }
}

/// `s` as text, borrowed from Lua when it is UTF-8 (nearly always): a verdict word or reason
/// is read on every call, and copying it only to look at it cost an allocation each time.
fn text(s: &mlua::LuaString) -> Text {
    match s.to_str() {
        Ok(borrowed) => Text::Lua(borrowed),
        Err(_) => Text::Lossy(s.to_string_lossy()),
    }
}

/// What [`text`] returns: the same characters `to_string_lossy` gives.
enum Text {
    Lua(mlua::BorrowedStr),
    Lossy(String),
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Text::Lua(s) => s,
            Text::Lossy(s) => s,
        }
    }
}

pub(super) fn bad(hook: &str, got: &Value, expected: &str) -> PolicyError {
    PolicyError::BadReturn {
        hook: hook.to_string(),
        got: describe(got),
        expected: expected.to_string(),
    }
}

/// Building a hook's arguments failed (in practice: the Lua state is out of memory).
pub(super) fn policy_setup(hook: &str, err: mlua::Error, limit: usize) -> PolicyError {
    match err {
        mlua::Error::MemoryError(_) => PolicyError::Memory {
            hook: hook.to_string(),
            limit,
        },
        other => PolicyError::Runtime {
            hook: hook.to_string(),
            message: format!("cannot pass arguments to the hook: {other}"),
        },
    }
}
