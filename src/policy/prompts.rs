//! The built-in prompt templates, used when a policy has no `next_prompt` / `audit_prompt` hook.

use super::HookCtx;

/// The worker's prompt for the next iteration: the task, then the feedback block of seed 003
/// §5.3 (`PREVIOUS ATTEMPT` / `CRITIQUE` / `INSTRUCTION`), so the worker sees what it did and
/// what the auditor said about it.
pub fn default_worker_retry_prompt(ctx: &HookCtx) -> String {
    let previous = non_empty(&ctx.worker_output).unwrap_or("(the previous attempt left no output)");
    let critique = ctx
        .critique
        .as_deref()
        .and_then(non_empty)
        .unwrap_or("(the auditor gave no critique)");
    format!(
        "{task}\n\nPREVIOUS ATTEMPT: {previous}\nCRITIQUE: {critique}\nINSTRUCTION: Improve the previous attempt based on the critique.\n",
        task = ctx.task.trim_end(),
        previous = previous.trim_end(),
        critique = critique.trim_end(),
    )
}

/// The auditor's prompt: the task, the worker's final output, and how to answer so the built-in
/// verdict parser ([`super::parse_verdict`]) can read it.
pub fn default_audit_prompt(ctx: &HookCtx) -> String {
    let output = non_empty(&ctx.worker_output).unwrap_or("(the worker left no output)");
    format!(
        "You are auditing another agent's work. Check the working directory and decide whether \
         the task below is complete and correct.\n\n\
         TASK:\n{task}\n\n\
         WORKER'S FINAL OUTPUT:\n{output}\n\n\
         End your answer with a line `VERDICT: DONE`, `VERDICT: RETRY` or `VERDICT: IMPOSSIBLE` \
         followed by a line `REASON: ...` explaining why (for RETRY, say what to fix). \
         Alternatively, end with a JSON object on one line: \
         {{\"verdict\": \"done|retry|impossible\", \"reason\": \"...\"}}\n",
        task = ctx.task.trim_end(),
        output = output.trim_end(),
    )
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.trim().is_empty()).then_some(s)
}
