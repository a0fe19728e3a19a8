//! Runners as the store knows them: each running `oneshot job run` (or an embedder's runner)
//! keeps a row — its name, where it runs, when it last said it was alive by the store's clock —
//! so that `oneshot job runners` on any machine lists the fleet with the leases each holds, and
//! a runner that went silent reads as *stale*, never as running.

use super::{JobStoreError, Lease};

/// What a runner says about itself with each heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerBeat {
    /// Its id (`HOST-PID-NONCE-N`): what its leases name.
    pub runner: String,
    /// The machine.
    pub host: String,
    /// Its process id there.
    pub pid: u32,
    /// How long it may stay silent before it reads as stale (its lease time).
    pub ttl_ms: u64,
    /// What it waits for before it claims more, if anything.
    pub waiting: Option<RunnerWait>,
}

/// What a runner waits for before it claims another job, stored with its heartbeat (JSON in
/// the `waiting` column), so that `job list`, `job runners` and the board on any machine say
/// why pending jobs are not started.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "for", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunnerWait {
    /// Memory: the machine has less available than the runner's reserve
    /// (`job run --reserve`, a policy's `limits.reserve`).
    Memory {
        /// Bytes available when it last looked.
        available: u64,
        /// The reserve it keeps, in bytes.
        reserve: u64,
    },
}

impl RunnerWait {
    /// The column's text.
    pub fn to_column(&self) -> String {
        // A plain enum of numbers: serializing it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The column read back; text this build does not know reads as nothing to wait for
    /// (a newer runner's reason).
    pub fn from_column(text: Option<&str>) -> Option<RunnerWait> {
        serde_json::from_str(text?).ok()
    }
}

impl std::fmt::Display for RunnerWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::sandbox::limits::format_size;
        match self {
            RunnerWait::Memory { available, reserve } => write!(
                f,
                "waiting for memory: {} available, reserve {}",
                format_size(*available),
                format_size(*reserve)
            ),
        }
    }
}

/// A runner as `job runners` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerRow {
    /// Its id.
    pub runner: String,
    /// The machine.
    pub host: String,
    /// Its process id there.
    pub pid: u32,
    /// When it first said it was alive (ms since the epoch, the store's clock).
    pub started_ms: u64,
    /// When it last did.
    pub beat_ms: u64,
    /// How long it may stay silent.
    pub ttl_ms: u64,
    /// The leases it holds (live or expired) on jobs.
    pub leases: Vec<Lease>,
    /// What it waits for before it claims more, as of its last heartbeat.
    pub waiting: Option<RunnerWait>,
}

impl RunnerRow {
    /// Whether it has been silent past its ttl at the store's `now_ms`: it died, or lost the
    /// store, or is stopped (SIGSTOP); its leases expire the same way.
    pub fn stale(&self, now_ms: u64) -> bool {
        now_ms.saturating_sub(self.beat_ms) > self.ttl_ms
    }
}

/// Why pending jobs wait, at the store's `now_ms`: when every live runner holds back for the
/// same kind of reason, the first one's; `None` when some live runner would claim them (or
/// none runs: then they wait for a runner, which `job runners` shows).
pub fn pending_wait(rows: &[RunnerRow], now_ms: u64) -> Option<&RunnerWait> {
    let mut live = rows.iter().filter(|r| !r.stale(now_ms)).peekable();
    live.peek()?;
    let mut first = None;
    for r in live {
        let w = r.waiting.as_ref()?;
        first.get_or_insert(w);
    }
    first
}

/// The runners' heartbeat rows: who runs, where, and what each holds.
pub trait Runners: Send + Sync {
    /// Says runner `beat.runner` is alive now (by the store's clock): its row is made, or its
    /// heartbeat moved on.
    fn runner_beat(&self, beat: &RunnerBeat) -> Result<(), JobStoreError>;

    /// Runner `runner` stopped cleanly: its row goes (a runner that died leaves it, stale).
    fn runner_gone(&self, runner: &str) -> Result<(), JobStoreError>;

    /// Every runner that said it was alive and did not stop cleanly, with the leases each holds,
    /// oldest first.
    fn runners(&self) -> Result<Vec<RunnerRow>, JobStoreError>;
}
