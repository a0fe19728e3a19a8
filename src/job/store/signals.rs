//! Wake-ups: a runner waits for work, a dashboard for changes, instead of polling hard. Each
//! is a hint, never the news itself: the waiter reads the store to find out what happened.

use super::work;

/// Waiting for work and for changes. The defaults hear this process only (the process-wide
/// signals `work.rs` raises); SQLite also watches its file, PostgreSQL `LISTEN`s.
pub trait Signals: Send + Sync {
    /// Blocks until there may be new work — a job created, a verb given, a lease handed back,
    /// by this process (SQLite) or by any (a store that can be told, as PostgreSQL's `LISTEN`)
    /// — or until `timeout` passes, which is the slow poll that finds other processes' work;
    /// whether it was woken. A hint only: the caller claims to find out. `since` is
    /// [`Signals::work_seen`] taken before the caller last looked, so a wake-up in between is
    /// not missed.
    fn wait_for_work(&self, since: u64, timeout: std::time::Duration) -> bool {
        work::wait(since, timeout)
    }

    /// Where the work signal stands now, for [`Signals::wait_for_work`].
    fn work_seen(&self) -> u64 {
        work::seen()
    }

    /// Blocks until the store may have changed since `since` ([`Signals::change_seen`]) —
    /// a job created or moved, a session's records shipped, a verb, an artifact, a lease
    /// handed back — by any process this store can hear: SQLite watches its file, PostgreSQL
    /// `LISTEN`s; this default hears this process only. Or until `timeout`; whether it was
    /// woken. A hint, never the news itself: the caller reads the store to find out, so a
    /// spurious wake-up costs a read and a missed one is impossible once listening started.
    fn wait_for_change(&self, since: u64, timeout: std::time::Duration) -> bool {
        work::CHANGE.wait(since, timeout)
    }

    /// As [`Signals::wait_for_change`], for a waiter that needs only what people and other
    /// processes do to jobs — a job created, a verb, an audit entry (a message said to a
    /// job), an artifact, a decision, a lease handed back — and not each step's progress (its
    /// transitions, its session's records and journal): PostgreSQL announces those only while
    /// some process waits in [`Signals::wait_for_change`], which costs every runner's every
    /// step a `NOTIFY`. It may still wake for progress. By default, `wait_for_change`.
    fn wait_for_news(&self, since: u64, timeout: std::time::Duration) -> bool {
        self.wait_for_change(since, timeout)
    }

    /// Where the change signal stands now, for [`Signals::wait_for_change`]. The first call
    /// starts listening, so take it before the first read that the waits are to follow.
    fn change_seen(&self) -> u64 {
        work::CHANGE.seen()
    }
}
