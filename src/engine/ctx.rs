//! Builds the `ctx` a hook sees from the state file.

use crate::policy::HookCtx;
use crate::store::SessionFile;

pub(crate) use crate::pipeline::now_ms;

/// RFC 3339 with milliseconds, UTC.
pub(crate) fn rfc3339_now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// The facts of `file` as a hook context.
pub(crate) fn hook_ctx(file: &SessionFile) -> HookCtx {
    let verdict = file.last_verdict.as_ref();
    HookCtx {
        session_id: file.oneshot_id.clone(),
        state: Some(file.state),
        iteration: file.iteration_count,
        max_iterations: file.max_iterations,
        task: file.task.clone(),
        worker_prompt: file.worker_prompt.clone(),
        exit_code: file.evidence.as_ref().and_then(|e| e.exit_code),
        reason: file.history.last().and_then(|h| h.reason.clone()),
        elapsed: now_ms().saturating_sub(file.created_ms) as f64 / 1000.0,
        worker_output: file.worker_output_tail.clone(),
        auditor_output: file.auditor_output_tail.clone(),
        verdict: verdict.map(|v| v.verdict),
        critique: verdict.and_then(|v| v.reason.clone()),
        confidence: verdict.and_then(|v| v.confidence),
        changed_files: file
            .evidence
            .as_ref()
            .map(|e| e.changed_files.clone())
            .unwrap_or_default(),
        workdir: file.workdir.display().to_string(),
    }
}
