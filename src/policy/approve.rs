//! The `approve(result, job)` hook: in HARVESTING, whether a job's result is accepted without
//! a human (SUCCESS), waits for one (APPROVAL_REQUIRED) or needs one to fix something
//! (INTERVENTION_REQUIRED). Seed 003 §5.5: auto-approval is the policy's call, but only ever
//! for a session that completed — Rust refuses "approve" for anything else. What the hook is
//! shown, what it answers and the built-in rule are `crate::approval`'s; here is the Lua side.

use super::PolicyHost;
use super::calls::{bad, policy_setup, reason_of};
use super::error::PolicyError;
use super::host::LuaPolicy;
use super::lua_ctx::{head, string_list, tail};
use crate::approval::{
    Approval, ApprovalJob, ApprovalResult, ApproveDecision, PanelVerdict, auto_approvable,
    default_approve,
};
use mlua::{Lua, Table, Value};
use std::collections::BTreeMap;

const HOOK: &str = "approve";
const EXPECTED: &str = "\"approve\", \"human\" or \"intervene\" (optionally and a reason), a table \
                        { approval = …, reason = … }, or nil for the built-in rule";

impl PolicyHost {
    /// Decides where HARVESTING sends a job: the `approve` hook, or the built-in rule when
    /// the policy has none or it returns nil. The hook may not approve a session that did not
    /// complete; that answer is a [`PolicyError`], never a SUCCESS.
    pub fn approve(
        &self,
        result: &ApprovalResult,
        job: &ApprovalJob,
    ) -> Result<ApproveDecision, PolicyError> {
        let Some(policy) = self.lua.as_ref() else {
            return Ok(default_approve(result, job));
        };
        let Some(f) = policy.parsed.approve.as_ref() else {
            return Ok(default_approve(result, job));
        };
        let (result_t, job_t) = policy
            .approval_tables(result, job)
            .map_err(|e| policy_setup(HOOK, e, policy.memory_limit))?;
        let (first, reason): (Value, Value) = policy.call(HOOK, f, (result_t, job_t))?;
        let (word, reason) = match first {
            Value::Nil => return Ok(default_approve(result, job)),
            Value::Table(t) => (
                t.raw_get("approval").unwrap_or(Value::Nil),
                t.raw_get("reason").unwrap_or(Value::Nil),
            ),
            other => (other, reason),
        };
        let approval = match &word {
            Value::String(s) => Approval::from_name(&s.to_string_lossy()),
            _ => None,
        }
        .ok_or_else(|| bad(HOOK, &word, EXPECTED))?;
        if approval == Approval::Approve
            && let Err(why) = auto_approvable(result)
        {
            // The job core's bound, said here too so that `policy test` shows the error a job
            // would get.
            return Err(PolicyError::BadReturn {
                hook: HOOK.to_string(),
                got: "\"approve\"".to_string(),
                expected: format!("\"human\" or \"intervene\": {why}"),
            });
        }
        Ok(ApproveDecision {
            approval,
            reason: reason_of(HOOK, reason)?,
        })
    }
}

impl LuaPolicy {
    /// The hook's two read-only arguments.
    fn approval_tables(
        &self,
        result: &ApprovalResult,
        job: &ApprovalJob,
    ) -> mlua::Result<(Table, Table)> {
        let lua = &self.lua;
        let r = lua.create_table_with_capacity(0, 10)?;
        r.raw_set("outcome", result.outcome.as_str())?;
        r.raw_set("completed", result.completed)?;
        r.raw_set("verdict", result.verdict.as_deref())?;
        r.raw_set("reason", result.reason.as_deref().map(tail))?;
        r.raw_set("confidence", result.confidence)?;
        r.raw_set("diff_stat", tail(&result.diff_stat))?;
        r.raw_set("files", string_list(lua, &result.files)?)?;
        r.raw_set("empty_diff", result.empty_diff)?;
        r.raw_set("panel", panel_table(lua, &result.panel)?)?;
        r.raw_set("panel_passed", result.panel_passed)?;
        r.set_readonly(true);

        let j = lua.create_table_with_capacity(0, 11)?;
        j.raw_set("id", job.id.as_str())?;
        j.raw_set("task", head(&job.task))?;
        j.raw_set("risk", job.risk.as_str())?;
        j.raw_set("step", job.step)?;
        j.raw_set("max_loops", job.max_loops)?;
        j.raw_set("counters", map_table(lua, &job.counters)?)?;
        j.raw_set("retries", job.retries)?;
        j.raw_set("empty_diffs", job.empty_diffs)?;
        j.raw_set("same_findings", job.same_findings)?;
        j.raw_set("no_progress_limit", job.no_progress_limit)?;
        let inputs = job.inputs.iter().map(|(k, v)| (k.as_str(), head(v)));
        j.raw_set("inputs", readonly(lua.create_table_from(inputs)?))?;
        j.set_readonly(true);
        Ok((r, j))
    }
}

fn readonly(t: Table) -> Table {
    t.set_readonly(true);
    t
}

fn panel_table(lua: &Lua, panel: &[PanelVerdict]) -> mlua::Result<Table> {
    let list = lua.create_table_with_capacity(panel.len(), 0)?;
    for p in panel {
        let t = lua.create_table_with_capacity(0, 4)?;
        t.raw_set("auditor", p.auditor.as_str())?;
        t.raw_set("verdict", p.verdict.as_str())?;
        t.raw_set("reason", tail(&p.reason))?;
        t.raw_set("confidence", p.confidence)?;
        list.raw_push(readonly(t))?;
    }
    Ok(readonly(list))
}

fn map_table(lua: &Lua, map: &BTreeMap<String, u32>) -> mlua::Result<Table> {
    let t = lua.create_table_from(map.iter().map(|(k, v)| (k.as_str(), *v)))?;
    Ok(readonly(t))
}
