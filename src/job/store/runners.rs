//! Runners as the store knows them: each running `oneshot job run` (or an embedder's runner)
//! keeps a row — its name, where it runs, when it last said it was alive by the store's clock —
//! so that `oneshot job runners` on any machine lists the fleet with the leases each holds, and
//! a runner that went silent reads as *stale*, never as running.

use super::Lease;

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
}

impl RunnerRow {
    /// Whether it has been silent past its ttl at the store's `now_ms`: it died, or lost the
    /// store, or is stopped (SIGSTOP); its leases expire the same way.
    pub fn stale(&self, now_ms: u64) -> bool {
        now_ms.saturating_sub(self.beat_ms) > self.ttl_ms
    }
}
