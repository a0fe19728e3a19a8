//! The `ctx` a hook sees, built from the session value.

use super::Session;
use crate::policy::HookCtx;
use std::fmt::Write;

impl Session {
    /// The facts a hook may read at `now` (unix milliseconds).
    pub fn hook_ctx(&self, now: u64) -> HookCtx {
        let mut ctx = HookCtx::default();
        self.fill_hook_ctx(now, &mut ctx);
        ctx
    }

    /// [`Session::hook_ctx`] written over `ctx`, reusing its strings' buffers: replay asks
    /// 100,000 questions in a row, and a fresh context of owned strings per question costs
    /// more than the question.
    pub(crate) fn fill_hook_ctx(&self, now: u64, ctx: &mut HookCtx) {
        let verdict = self.last_verdict.as_ref();
        ctx.session_id.clone_from(&self.id);
        ctx.state = Some(self.state());
        ctx.iteration = self.iteration;
        ctx.max_iterations = self.max_iterations;
        ctx.task.clone_from(&self.task);
        ctx.worker_prompt.clone_from(&self.worker_prompt);
        ctx.exit_code = self.exit_code;
        set(&mut ctx.reason, self.last_reason().map(|r| r.code()));
        ctx.elapsed = now.saturating_sub(self.created_ms) as f64 / 1000.0;
        ctx.worker_output.clone_from(&self.worker_output);
        ctx.auditor_output.clone_from(&self.auditor_output);
        ctx.verdict = verdict.map(|v| v.verdict);
        set(&mut ctx.critique, verdict.and_then(|v| v.reason.as_deref()));
        ctx.confidence = verdict.and_then(|v| v.confidence);
        ctx.open_criteria_streak = verdict.map_or(0, |v| v.open_criteria_streak);
        ctx.changed_files.clone_from(&self.changed_files);
        ctx.checks.clone_from(&self.checks);
        ctx.messages.clone_from(&self.messages);
        ctx.egress.clone_from(&self.egress);
        // Only the verdict question carries the auditor's structured answer.
        ctx.structured = None;
        ctx.workdir.clear();
        // What `display()` writes, without the formatter when the path is UTF-8 (always, in
        // practice): per question, the formatter cost more than the copy.
        match self.workdir.to_str() {
            Some(path) => ctx.workdir.push_str(path),
            None => {
                let _ = write!(ctx.workdir, "{}", self.workdir.display());
            }
        }
    }
}

/// `*slot = value.map(String::from)`, keeping the buffer already there.
fn set(slot: &mut Option<String>, value: Option<&str>) {
    match (slot.as_mut(), value) {
        (Some(s), Some(v)) => {
            s.clear();
            s.push_str(v);
        }
        (_, v) => *slot = v.map(String::from),
    }
}
