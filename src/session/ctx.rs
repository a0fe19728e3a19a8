//! The `ctx` a hook sees, built from the session value.

use super::Session;
use crate::policy::HookCtx;

impl Session {
    /// The facts a hook may read at `now` (unix milliseconds).
    pub fn hook_ctx(&self, now: u64) -> HookCtx {
        let verdict = self.last_verdict.as_ref();
        HookCtx {
            session_id: self.id.clone(),
            state: Some(self.state()),
            iteration: self.iteration,
            max_iterations: self.max_iterations,
            task: self.task.clone(),
            worker_prompt: self.worker_prompt.clone(),
            exit_code: self.exit_code,
            reason: self.last_reason().map(|r| r.code().to_string()),
            elapsed: now.saturating_sub(self.created_ms) as f64 / 1000.0,
            worker_output: self.worker_output.clone(),
            auditor_output: self.auditor_output.clone(),
            verdict: verdict.map(|v| v.verdict),
            critique: verdict.and_then(|v| v.reason.clone()),
            confidence: verdict.and_then(|v| v.confidence),
            changed_files: self.changed_files.clone(),
            workdir: self.workdir.display().to_string(),
        }
    }
}
