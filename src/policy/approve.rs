//! The `approve(result, job)` hook: in HARVESTING, whether a job's result is accepted without
//! a human (SUCCESS), waits for one (APPROVAL_REQUIRED) or needs one to fix something
//! (INTERVENTION_REQUIRED). Seed 003 §5.5: auto-approval is the policy's call, but only ever
//! for a session that completed — Rust refuses "approve" for anything else.

use super::PolicyHost;
use super::calls::{bad, policy_setup, reason_of};
use super::error::PolicyError;
use super::host::LuaPolicy;
use super::lua_ctx::{head, string_list, tail};
use crate::job::Harvest;
use crate::job::record::{PanelVerdict, Risk};
use mlua::{Lua, Table, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const HOOK: &str = "approve";
const EXPECTED: &str = "\"approve\", \"human\" or \"intervene\" (optionally and a reason), a table \
                        { approval = …, reason = … }, or nil for the built-in rule";

/// What a job's session produced, as the `approve` hook sees it (`result`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalResult {
    /// The session's final state, e.g. `"COMPLETED"` or `"FAILED"`.
    pub outcome: String,
    /// Whether the work counts as done: the session completed (its auditor said done) and,
    /// when the job has a panel, the panel passed.
    pub completed: bool,
    /// The final verdict (`done`, `retry`, `impossible`), when there was one.
    pub verdict: Option<String>,
    /// Why the session ended as it did (the verdict's or the failure's reason).
    pub reason: Option<String>,
    /// The auditors' confidence in `[0, 1]`, when they gave one.
    pub confidence: Option<f64>,
    /// `git diff --stat` of the work, as text.
    pub diff_stat: String,
    /// The files the work changed, workspace-relative.
    pub files: Vec<String>,
    /// Whether the work changed nothing.
    pub empty_diff: bool,
    /// What each auditor of a panel said.
    pub panel: Vec<PanelVerdict>,
    /// Whether the panel passed as the job aggregates it (all, majority); `None` without a
    /// panel. A panel that did not pass leaves `completed` false while `outcome` stays the
    /// session's own (`"COMPLETED"`), and `reason` carries the dissent.
    pub panel_passed: Option<bool>,
}

/// The job the result belongs to, as the `approve` hook sees it (`job`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalJob {
    /// The job id.
    pub id: String,
    /// The job's task.
    pub task: String,
    /// How much a mistake would cost; policies see `"low"`, `"medium"` or `"high"`.
    #[serde(with = "risk_name")]
    pub risk: Risk,
    /// The step this result came from (1 for the first).
    pub step: u32,
    /// How many steps the job may take in all.
    pub max_loops: u32,
    /// The job's counters by name.
    pub counters: BTreeMap<String, u32>,
    /// Retries spent so far.
    pub retries: u32,
    /// Empty diffs in a row.
    pub empty_diffs: u32,
    /// Identical audit findings in a row.
    pub same_findings: u32,
    /// After this many empty diffs or identical findings in a row the job has stopped making
    /// progress (0 = never).
    pub no_progress_limit: u32,
    /// The job's named inputs.
    pub inputs: BTreeMap<String, String>,
}

/// Where HARVESTING sends a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Accepted without a human: SUCCESS.
    Approve,
    /// A human signs off: APPROVAL_REQUIRED.
    Human,
    /// Something failed or stalled; a human must act: INTERVENTION_REQUIRED.
    Intervene,
}

impl Approval {
    /// The word a policy uses (`"approve"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Approval::Approve => "approve",
            Approval::Human => "human",
            Approval::Intervene => "intervene",
        }
    }

    /// The job machine's name for this outcome of HARVESTING.
    pub const fn harvest(self) -> Harvest {
        match self {
            Approval::Approve => Harvest::Success,
            Approval::Human => Harvest::ApprovalRequired,
            Approval::Intervene => Harvest::InterventionRequired,
        }
    }

    fn from_name(name: &str) -> Option<Approval> {
        match name.trim().to_ascii_lowercase().as_str() {
            "approve" => Some(Approval::Approve),
            "human" => Some(Approval::Human),
            "intervene" => Some(Approval::Intervene),
            _ => None,
        }
    }
}

/// What the `approve` hook (or the built-in rule) concluded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApproveDecision {
    /// Approve, human or intervene.
    pub approval: Approval,
    /// Why, for the job's transition record.
    pub reason: Option<String>,
}

/// The built-in rule: a session that did not complete needs intervention, so does a job that
/// stopped making progress; anything else waits for a human. It never auto-approves: that is
/// a risk a policy must choose to take.
pub fn default_approve(result: &ApprovalResult, job: &ApprovalJob) -> ApproveDecision {
    let decide = |approval, reason: String| ApproveDecision {
        approval,
        reason: Some(reason),
    };
    if result.panel_passed == Some(false) {
        let reason = result
            .reason
            .clone()
            .unwrap_or_else(|| "the panel did not pass".into());
        return decide(Approval::Intervene, reason);
    }
    if !result.completed {
        let reason = match &result.reason {
            Some(why) => format!("the session ended {}: {why}", result.outcome),
            None => format!("the session ended {}", result.outcome),
        };
        return decide(Approval::Intervene, reason);
    }
    if let Some(signal) = no_progress(job) {
        return decide(Approval::Intervene, signal);
    }
    decide(
        Approval::Human,
        "a human signs off by default; a policy's approve hook may auto-approve".into(),
    )
}

/// The no-progress signal that fired, in words, or `None`.
fn no_progress(job: &ApprovalJob) -> Option<String> {
    let limit = job.no_progress_limit;
    if limit == 0 {
        return None;
    }
    if job.empty_diffs >= limit {
        return Some(format!(
            "no progress: {} empty diffs in a row (limit {limit})",
            job.empty_diffs
        ));
    }
    if job.same_findings >= limit {
        return Some(format!(
            "no progress: the same findings {} times in a row (limit {limit})",
            job.same_findings
        ));
    }
    None
}

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
            && let Err(why) = crate::job::step::auto_approvable(result)
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

/// `risk` as policies spell it (`"low"`), so a test case's `job` reads like the hook's.
mod risk_name {
    use crate::job::record::Risk;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(risk: &Risk, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(risk.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Risk, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}
