//! A panel of auditors judging one step's harvested work at once (seed 003 §1.3): each asked
//! for a verdict that fits the `verdict` schema, all awaited before the machine moves.

use super::session::Player;
use crate::ask::{Ask, Target};
use crate::job::record::{Job, PanelVerdict, PanelWord, Workspace};
use crate::schema::Registry;
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
) -> Vec<PanelVerdict> {
    let schema = match Registry::builtin().resolve("verdict") {
        Ok(s) => s,
        Err(e) => {
            return panel
                .iter()
                .map(|a| failed(a, format!("the verdict schema: {e}")))
                .collect();
        }
    };
    let diff = {
        let ws = ws.clone();
        tokio::task::spawn_blocking(move || crate::job::workspace::diff(&ws))
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
    };
    let mut cut = diff.len().min(DIFF_SHOWN);
    while !diff.is_char_boundary(cut) {
        cut -= 1;
    }
    let prompt = format!(
        "You are one of several auditors judging another agent's work on this task. Check the \
         working directory and the changes below, and decide whether the task is complete and \
         correct.\n\nTASK:\n{}\n\nCHANGES (git diff against the job's base):\n{}{}\n",
        job.spec.task.trim_end(),
        &diff[..cut],
        if cut < diff.len() {
            "\n[… diff cut …]"
        } else {
            ""
        }
    );
    let asks = panel.iter().map(|auditor| {
        let schema = schema.clone();
        let prompt = prompt.clone();
        let dir = ws.path.clone();
        let auditor = auditor.clone();
        let state_dir = state_dir.to_path_buf();
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
            match crate::ask::ask(&ask).await {
                Ok(answer) => {
                    let v = &answer.value;
                    PanelVerdict {
                        auditor: auditor.clone(),
                        verdict: PanelWord::read(v["verdict"].as_str().unwrap_or("")),
                        reason: v["reason"].as_str().unwrap_or("").to_string(),
                        confidence: v["confidence"].as_f64(),
                    }
                }
                Err(e) => failed(auditor, e.to_string()),
            }
        }
    });
    futures_join_all(asks).await
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
