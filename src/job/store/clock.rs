//! The time a job store judges leases by: its own, never a runner's. Runners on several
//! machines disagree about the time by whatever their clocks drift; a lease judged by the
//! writer's clock would expire early for one runner and late for another. The store is the one
//! party every runner talks to, so its clock decides: this process's for the embedded SQLite
//! store (every process that opens the file runs on the one machine), the database's `now()`
//! for a PostgreSQL store. Tests inject a [`ManualClock`].

use std::sync::atomic::{AtomicU64, Ordering};

/// A store's clock, in ms since the epoch.
pub trait StoreClock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now_ms(&self) -> u64;
}

/// The machine's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl StoreClock for SystemClock {
    fn now_ms(&self) -> u64 {
        // With the offset a test may inject (`ONESHOT_CLOCK_OFFSET`).
        crate::pipeline::now_ms()
    }
}

/// A clock that moves only when told: for tests of lease expiry without waiting.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock at `ms`.
    pub fn new(ms: u64) -> ManualClock {
        ManualClock(AtomicU64::new(ms))
    }

    /// Sets it to `ms`.
    pub fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::SeqCst);
    }

    /// Moves it on by `ms`.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl StoreClock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
