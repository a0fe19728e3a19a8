//! The job runner: claims steps from a [`JobStore`] and carries them out.
//!
//! # How it works
//!
//! Each claimed step is driven by [`drive`]: the decision core ([`super::step::Step`]) says
//! what to do, this module does it — provision the workspace (git, on the blocking pool), run
//! the session (an [`crate::Engine`] on this thread), harvest, ask a panel of auditors in
//! parallel — and feeds back what happened. A heartbeat task renews the step's lease; when the
//! store refuses it (another runner reclaimed the job, or a human canceled it) the session is
//! killed and nothing more is written. `run` keeps up to `parallel` steps going on one
//! current-thread runtime (the engine holds Lua states and is not `Send`), all sharing it.

mod drive;
mod panel;
mod session;

pub use session::Player;

use super::store::{JobStore, JobStoreError};
use crate::pipeline::now_ms;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;

pub use drive::StepEnd;

/// How a runner runs.
#[derive(Clone)]
pub struct RunnerOptions {
    /// The state directory: sessions in `sessions/`, workspaces in `worktrees/`.
    pub state_dir: PathBuf,
    /// This runner's id, written with its leases and transitions.
    pub runner: String,
    /// How long a lease lasts without a heartbeat (heartbeats come every third of it).
    pub lease_ttl: Duration,
    /// Steps run at once.
    pub parallel: usize,
    /// Stop after this many steps (all jobs' together).
    pub max_steps: Option<usize>,
    /// Step only this job.
    pub only: Option<String>,
    /// Told each move of each job, as it happens.
    pub on_note: Rc<dyn Fn(&Note)>,
}

/// What the runner tells its caller as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    /// A job moved.
    Moved {
        /// The job.
        job: String,
        /// The move.
        transition: super::record::Transition,
    },
    /// A step ended (the job rests, or the runner lost it).
    Ended(StepEnd),
}

/// Why a run stopped short.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] JobStoreError),
}

/// A runner id unique on this machine for this process: `HOST-PID-N`.
pub fn runner_id() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "host".into());
    format!(
        "{host}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Claims and drives steps until none is left to claim (or `max_steps` ran), `parallel` at a
/// time; returns how each step ended. Must be polled inside a [`tokio::task::LocalSet`].
pub async fn run(
    store: Arc<dyn JobStore>,
    opts: RunnerOptions,
) -> Result<Vec<StepEnd>, RunnerError> {
    let mut running = JoinSet::new();
    let mut ends = Vec::new();
    let mut claimed = 0usize;
    let parallel = opts.parallel.max(1);
    loop {
        let room = opts.max_steps.is_none_or(|m| claimed < m);
        if room && running.len() < parallel {
            let ttl = opts.lease_ttl.as_millis() as u64;
            match store.claim(&opts.runner, opts.only.as_deref(), ttl, now_ms())? {
                Some(claim) => {
                    claimed += 1;
                    let store = Arc::clone(&store);
                    let opts = opts.clone();
                    running.spawn_local(async move { drive::drive(store, claim, &opts).await });
                    continue;
                }
                None if running.is_empty() => break,
                None => {}
            }
        }
        if running.is_empty() {
            break;
        }
        // Wait for a step to end; with room to spare, look for new work now and then too
        // (another process may have added or released some).
        let wait = tokio::time::sleep(Duration::from_millis(500));
        tokio::select! {
            done = running.join_next() => {
                if let Some(Ok(end)) = done {
                    (opts.on_note)(&Note::Ended(end.clone()));
                    ends.push(end);
                }
                // A panicked step: its lease expires and another claim recovers the job.
            }
            _ = wait, if room && running.len() < parallel => {}
        }
    }
    Ok(ends)
}
