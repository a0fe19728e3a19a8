//! The facts a hook sees as `ctx`.

use crate::machine::{SessionState, Verdict};
use serde::{Deserialize, Serialize};

/// Everything a hook may read about the session at the moment it is asked. Converted to a
/// read-only Lua table whose keys are these field names (`ctx.iteration`, `ctx.worker_output`,
/// …); the large fields (the task, prompts, outputs and diffs) are built into Lua only when a hook reads them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookCtx {
    /// The session id (a UUID).
    pub session_id: String,
    /// The session's current state (for guards: the `from` state).
    pub state: Option<SessionState>,
    /// The worker iteration, starting at 1 (0 before the first worker run).
    pub iteration: u32,
    /// The effective iteration budget.
    pub max_iterations: u32,
    /// The task as the user gave it.
    pub task: String,
    /// The prompt the worker got in this iteration.
    pub worker_prompt: String,
    /// Exit code of the process that just finished, if any.
    pub exit_code: Option<i32>,
    /// Why the last process stopped or the last transition happened (e.g. `inactivity_timeout`).
    pub reason: Option<String>,
    /// Seconds since the session was created.
    pub elapsed: f64,
    /// The tail of the worker's last output (redacted).
    pub worker_output: String,
    /// The tail of the auditor's last stdout, its answer (redacted); never its stderr.
    pub auditor_output: String,
    /// The auditor's last verdict, if any.
    pub verdict: Option<Verdict>,
    /// The auditor's last reason/critique, if any.
    pub critique: Option<String>,
    /// The auditor's confidence, if it gave one.
    pub confidence: Option<f64>,
    /// How many verdicts in a row (in the `verdict` hook: the one being judged included) named
    /// the same, non-empty open criteria; 0 when the last named none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub open_criteria_streak: u32,
    /// Files changed in the workdir by the last worker run (workdir-relative).
    pub changed_files: Vec<String>,
    /// The auditor's answer as the object it gave, when it fits the `verdict` schema
    /// (`verdict`, `reason`, `confidence`, `open_criteria`): set for the `verdict` hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
    /// The session's working directory.
    pub workdir: String,
    /// The changes being judged, as a git diff against the job's base: set for a job's panel
    /// auditors (their `audit_prompt`, `verdict` and `permit`); `None` in a session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The checks of this audit, in the order they ran (empty before they ran, or when there
    /// are none): what the `verdict` hook, and every later one, can read as `ctx.checks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<crate::check::CheckResult>,
    /// The humans' messages to the worker (`oneshot say`), oldest first, with where each
    /// stands: what `ctx.messages` reads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<crate::session::Said>,
    /// The connections the egress proxy refused the session's agents so far, oldest first
    /// (`host`, `port`, `agent`, `role`, `rule`, …): what `ctx.egress` reads, so a verdict can
    /// say a task failed because the network was closed to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress: Vec<crate::session::record::EgressRefusal>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
