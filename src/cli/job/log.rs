//! `job log ID [--follow] [--json] [--raw]`: the activity logs of a job's sessions, read from
//! the job store — where the runner that ran each session shipped it as it ran — so they read
//! the same on any machine, whichever runner ran the job.

use super::{Cx, store_error};
use crate::cli::log::Printer;
use anyhow::Result;
use clap::Args;
use clap_complete::engine::ArgValueCandidates;
use std::collections::HashMap;
use std::time::Duration;

/// Entries read per store call.
const PAGE: usize = 1000;

/// How often `--follow` looks for more.
const POLL: Duration = Duration::from_millis(300);

/// Options of `job log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Job id (`job-1a2b3c4d`) or a unique prefix of it.
    #[arg(add = ArgValueCandidates::new(crate::cli::complete::jobs))]
    pub id: String,
    /// Keep printing as the job's sessions go on, until the job rests in a state other than
    /// PENDING (one that waits for a human, or the end).
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// One JSON object per record: `{"seq", "session_id", "record"}`, `record` as the session's
    /// log holds it (docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Show the agents' protocol lines as they are, not their accounts.
    #[arg(long)]
    pub raw: bool,
}

/// `job log ID`.
pub fn log(cx: &Cx, a: LogArgs) -> Result<i32> {
    let store = cx.store()?;
    let job = store
        .get(&a.id)
        .map_err(|e| store_error(&format!("log {}", a.id), e))?;
    let id = job.id.clone();
    let see_raw = format!("`oneshot job log {} --raw` shows them", id);
    let mut printers: HashMap<String, Printer> = HashMap::new();
    let mut current: Option<String> = None;
    let mut after = 0u64;
    let mut printed = false;
    loop {
        // Decided before reading, so the entries written just before the job rested are read.
        // PENDING is a rest a runner ends on its own: followed on.
        let rested = a.follow && {
            let state = store
                .get(&id)
                .map_err(|e| store_error(&format!("log {id}"), e))?
                .state();
            state.is_resting() && state != oneshot::job::JobState::Pending
        };
        loop {
            let page = store
                .session_entries(&id, after, PAGE)
                .map_err(|e| store_error(&format!("log {id}"), e))?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            let full = page.len() == PAGE;
            for e in page {
                printed = true;
                if a.json {
                    outln!(
                        "{}",
                        serde_json::json!({"seq": e.seq, "session_id": e.session, "record": e.record})
                    );
                    continue;
                }
                if current.as_deref() != Some(e.session.as_str()) {
                    outln!("── session {} ──", e.session);
                    current = Some(e.session.clone());
                }
                printers
                    .entry(e.session.clone())
                    .or_insert_with(|| Printer::new(a.raw, false, see_raw.clone()))
                    .print_one(&e.record);
            }
            if !full {
                break;
            }
        }
        if !a.follow || rested {
            break;
        }
        std::thread::sleep(POLL);
    }
    if !printed && !a.json {
        errln!(
            "oneshot: job {id} has no session records in the store yet ({}: no session has run, \
             or it ran before sessions were kept in the store)",
            job.state()
        );
    }
    Ok(0)
}
