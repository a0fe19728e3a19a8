//! A panel of auditors judging one step's harvested work at once (seed 003 §1.3): each asked
//! for a verdict that fits the `verdict` schema, all awaited before the machine moves.
//!
//! A panel member is an auditor like a session's: its prompt is the policy's `audit_prompt`
//! (else the built-in panel prompt), its answer is read as a session reads its auditor's — the
//! object in it that fits the `verdict` schema as `ctx.structured`, and the policy's `verdict`
//! hook (else the built-in reader) on its text, so a command may answer `VERDICT: DONE` or, to
//! a policy that reads it, `LGTM` — and its tool requests are answered by the policy's `permit`
//! (else the built-in auditor rule). The policy is the step's own copy,
//! shared with its judge, on a thread of its own ([`PolicyService`]): the asks may run
//! anywhere.

use super::session::Player;
use crate::ask::{Ask, AskError, Denial, Permits, Reading, Target};
use crate::job::record::{Job, PanelVerdict, PanelWord, Workspace};
use crate::machine::Verdict;
use crate::policy::{HookCtx, NO_VERDICT_REASON, PolicyService};
use crate::schema::Registry;
use std::sync::Arc;
use std::time::Duration;

/// The diff shown to a panel auditor is cut to this many bytes.
const DIFF_SHOWN: usize = 64 * 1024;

/// Asks every auditor of `panel` in parallel; one that fails says `error` with why.
///
/// The auditors are confined as a session's agents are, `state_dir` (the job store, the
/// sessions, the other jobs' worktrees) hidden from them but for the workspace they judge.
pub(super) async fn audit(
    job: &Job,
    ws: &Workspace,
    panel: &[String],
    state_dir: &std::path::Path,
    policy: Result<PolicyService, String>,
) -> Vec<PanelVerdict> {
    let all_failed = |why: String| panel.iter().map(|a| failed(a, why.clone())).collect();
    let schema = match Registry::builtin().resolve("verdict") {
        Ok(s) => s,
        Err(e) => return all_failed(format!("the verdict schema: {e}")),
    };
    let diff = {
        let ws = ws.clone();
        tokio::task::spawn_blocking(move || crate::job::workspace::diff(&ws))
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    };
    let policy = match policy {
        Ok(p) => p,
        Err(e) => return all_failed(format!("the job's policy: {e}")),
    };
    let ctx = Arc::new(panel_ctx(job, ws, &diff));
    let prompt = match policy.audit_prompt_hook(&ctx).await {
        Ok(Some(prompt)) => prompt,
        Ok(None) => builtin_prompt(job, &diff),
        Err(e) => {
            return all_failed(format!("the job's policy: {}", crate::error::failure(&e)));
        }
    };
    let asks = panel.iter().map(|auditor| {
        let schema = schema.clone();
        let prompt = prompt.clone();
        let dir = ws.path.clone();
        let auditor = auditor.clone();
        let state_dir = state_dir.to_path_buf();
        let permit = Permits {
            policy: policy.clone(),
            ctx: Arc::clone(&ctx),
        };
        async move {
            let auditor = &auditor;
            let target = match Player::parse(auditor) {
                Ok(Player::Agent(a)) => Target::Agent(a),
                Ok(Player::Command(c)) => Target::Command(c),
                Err(e) => return failed(auditor, e),
            };
            let mut ask = Ask::new(target, schema, prompt);
            ask.dir = dir;
            ask.hidden = vec![state_dir];
            ask.timeout = Duration::from_secs(600);
            ask.permit = Some(permit.clone());
            let read = |text: String| -> Reading<PanelVerdict> {
                Box::pin(judge(permit.clone(), auditor.clone(), text))
            };
            match crate::ask::ask_with(&ask, read).await {
                Ok(answer) => with_refusals(answer.value, &answer.denied),
                // Asked again while the answers held no verdict, as a session's auditor is.
                Err(AskError::NoFit {
                    attempts, problems, ..
                }) => failed(
                    auditor,
                    format!("the policy's verdict found none in {attempts} answer(s): {problems}"),
                ),
                Err(e) => failed(auditor, e.to_string()),
            }
        }
    });
    futures_join_all(asks).await
}

/// What a panel auditor's hooks see as `ctx` (docs/policy.md, "A job's panel"): the job's task,
/// its step and loop bound, the session that did the work, the workspace, the changed files
/// and the diff; no worker prompt or output, and no state (a panel is not a session).
fn panel_ctx(job: &Job, ws: &Workspace, diff: &str) -> HookCtx {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    HookCtx {
        session_id: job.session().unwrap_or_default().to_string(),
        iteration: job.steps,
        max_iterations: job.spec.limits.max_loops,
        task: job.spec.task.clone(),
        elapsed: now.saturating_sub(job.created_ms) as f64 / 1000.0,
        changed_files: changed_files(diff),
        workdir: ws.path.display().to_string(),
        diff: Some(diff.to_string()),
        ..HookCtx::default()
    }
}

/// `diff` cut to [`DIFF_SHOWN`] bytes, at a character boundary.
fn shown(diff: &str) -> &str {
    let mut cut = diff.len().min(DIFF_SHOWN);
    while !diff.is_char_boundary(cut) {
        cut -= 1;
    }
    &diff[..cut]
}

/// The files a git diff touches, by their new names (`diff --git a/X b/X` headers).
fn changed_files(diff: &str) -> Vec<String> {
    diff.lines()
        .filter_map(|l| l.strip_prefix("diff --git "))
        .filter_map(|l| l.rsplit_once(" b/").map(|(_, b)| b.to_string()))
        .collect()
}

/// The prompt when the policy has no `audit_prompt`: the task and the diff.
fn builtin_prompt(job: &Job, diff: &str) -> String {
    let cut = shown(diff);
    format!(
        "You are one of several auditors judging another agent's work on this task. Check the \
         working directory and the changes below, and decide whether the task is complete and \
         correct.\n\nTASK:\n{}\n\nCHANGES (git diff against the job's base):\n{}{}\n",
        job.spec.task.trim_end(),
        cut,
        if cut.len() < diff.len() {
            "\n[… diff cut …]"
        } else {
            ""
        }
    )
}

/// A panel member's answer read as a session reads its auditor's: the object in it that fits
/// the `verdict` schema is `ctx.structured`, and the policy's `verdict` hook (the built-in
/// reader when it has none) reads the text. `Err` when it holds no verdict (the member is asked
/// again), saying what was missing; a hook that fails is an `error` verdict.
async fn judge(permit: Permits, auditor: String, text: String) -> Result<PanelVerdict, String> {
    let structured = crate::policy::structured_verdict(&text);
    let mut ctx = (*permit.ctx).clone();
    ctx.auditor_output = text.clone();
    ctx.structured = structured.as_ref().ok().cloned();
    let d = match permit.policy.verdict(&text, &Arc::new(ctx)).await {
        Ok(d) => d,
        Err(e) => {
            let why = format!("the job's policy: {}", crate::error::failure(&e));
            return Ok(failed(&auditor, why));
        }
    };
    let Some(v) = d.verdict else {
        let none = d.reason.unwrap_or_else(|| NO_VERDICT_REASON.to_string());
        return Err(match structured {
            Ok(_) => none,
            Err(misfit) => format!("{none}; {misfit}"),
        });
    };
    Ok(PanelVerdict {
        auditor,
        verdict: match v {
            Verdict::Done => PanelWord::Done,
            Verdict::Retry => PanelWord::Retry,
            Verdict::Impossible => PanelWord::Impossible,
        },
        reason: d.reason.unwrap_or_default(),
        confidence: d.confidence,
    })
}

/// `verdict` with the tool requests the policy refused said after its reason.
fn with_refusals(mut verdict: PanelVerdict, denied: &[Denial]) -> PanelVerdict {
    if !denied.is_empty() {
        let said: Vec<String> = denied
            .iter()
            .map(|d| format!("{}: {}", d.tool, d.reason))
            .collect();
        verdict.reason = format!(
            "{} (tool requests refused: {})",
            verdict.reason,
            said.join("; ")
        );
    }
    verdict
}

fn failed(auditor: &str, reason: String) -> PanelVerdict {
    PanelVerdict {
        auditor: auditor.to_string(),
        verdict: PanelWord::Error,
        reason,
        confidence: None,
    }
}

/// Awaits all of `futs` concurrently on this task, keeping their order.
async fn futures_join_all<F>(futs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + 'static,
    F::Output: 'static,
{
    let mut set = tokio::task::JoinSet::new();
    let mut out: Vec<Option<F::Output>> = Vec::new();
    for (i, f) in futs.enumerate() {
        out.push(None);
        set.spawn_local(async move { (i, f.await) });
    }
    while let Some(done) = set.join_next().await {
        if let Ok((i, v)) = done {
            out[i] = Some(v);
        }
    }
    out.into_iter().flatten().collect()
}

#[cfg(test)]
#[path = "panel_tests.rs"]
mod tests;
