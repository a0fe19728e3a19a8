//! `oneshot job runners`: the fleet as the store knows it — every runner that said it was alive
//! and did not stop cleanly, its machine and process, how long ago (by the store's clock) it
//! last said so, whether that is past its ttl (*stale*: it died, lost the store, or is
//! stopped), and the leases it holds.

use super::{Cx, store_error};
use crate::cli::exit;
use anyhow::Result;
use clap::Args;
use serde::Serialize;

/// Options of `job runners`.
#[derive(Debug, Args)]
pub struct RunnersArgs {
    /// One JSON object per runner, one per line: `runner_id`, `host`, `pid`, `started_at`,
    /// `last_beat_at`, `beat_age_ms`, `state` (`live` or `stale`), `leases` (each `job_id`,
    /// `fence`, `until_at`, `live`) (docs/json.md).
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct LeaseRow<'a> {
    job_id: &'a str,
    fence: u64,
    until_at: String,
    live: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    runner_id: &'a str,
    host: &'a str,
    pid: u32,
    started_at: String,
    last_beat_at: String,
    beat_age_ms: u64,
    state: &'static str,
    leases: Vec<LeaseRow<'a>>,
    /// What it waits for before it claims more.
    #[serde(skip_serializing_if = "Option::is_none")]
    waiting: Option<&'a oneshot::job::store::RunnerWait>,
}

/// `job runners`.
pub fn runners(cx: &Cx, a: RunnersArgs) -> Result<i32> {
    let store = cx.store()?;
    let rows = store
        .runners()
        .map_err(|e| store_error("list the runners", e))?;
    let now = store
        .now_ms()
        .map_err(|e| store_error("read the store's clock", e))?;
    let at = crate::cli::show::rfc3339;
    if a.json {
        for r in &rows {
            let row = Row {
                runner_id: &r.runner,
                host: &r.host,
                pid: r.pid,
                started_at: at(r.started_ms),
                last_beat_at: at(r.beat_ms),
                beat_age_ms: now.saturating_sub(r.beat_ms),
                state: if r.stale(now) { "stale" } else { "live" },
                leases: r
                    .leases
                    .iter()
                    .map(|l| LeaseRow {
                        job_id: &l.job,
                        fence: l.fence,
                        until_at: at(l.until_ms),
                        live: l.live_at(now),
                    })
                    .collect(),
                waiting: r.waiting.as_ref(),
            };
            outln!("{}", serde_json::to_string(&row)?);
        }
        return Ok(exit::OK);
    }
    if rows.is_empty() {
        errln!("no runners; `oneshot job run` starts one (it says so here while it runs)");
        return Ok(exit::OK);
    }
    outln!(
        "{:<32}  {:<16}  {:>7}  {:<6}  {:>9}  LEASES",
        "RUNNER",
        "HOST",
        "PID",
        "STATE",
        "LAST BEAT"
    );
    for r in &rows {
        let leases: Vec<String> = r
            .leases
            .iter()
            .map(|l| {
                let live = if l.live_at(now) { "" } else { " (expired)" };
                format!("{}{live}", l.job)
            })
            .collect();
        outln!(
            "{:<32}  {:<16}  {:>7}  {:<6}  {:>8.1}s  {}",
            r.runner,
            r.host,
            r.pid,
            if r.stale(now) { "stale" } else { "live" },
            now.saturating_sub(r.beat_ms) as f64 / 1000.0,
            if leases.is_empty() {
                "-".to_string()
            } else {
                leases.join(", ")
            }
        );
        if let Some(w) = &r.waiting {
            outln!("  {w}");
        }
    }
    Ok(exit::OK)
}
