//! Waking runners when there may be new work: a process-wide signal every store write that can
//! make a job claimable raises (a new job, a human's verb, a lease handed back), which a
//! runner waits on with a timeout — the slow poll that finds what other processes wrote. A
//! PostgreSQL store would raise it from `LISTEN` too; either way it is a hint: a missed one
//! delays work by one poll, never loses it.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A count that writers raise and waiters sleep on until it moves.
#[derive(Debug)]
pub(crate) struct Signal {
    count: Mutex<u64>,
    woken: Condvar,
}

impl Signal {
    /// A signal at zero.
    pub(crate) const fn new() -> Signal {
        Signal {
            count: Mutex::new(0),
            woken: Condvar::new(),
        }
    }

    /// Says that something happened (called after the write commits).
    pub(crate) fn raise(&self) {
        if let Ok(mut n) = self.count.lock() {
            *n = n.wrapping_add(1);
        }
        self.woken.notify_all();
    }

    /// The count now: what [`Signal::wait`] compares against, so that a raise between a
    /// look at the store and the wait is not missed.
    pub(crate) fn seen(&self) -> u64 {
        self.count.lock().map_or(0, |n| *n)
    }

    /// Blocks until the count moves past `since` or `timeout` passes; whether it moved.
    pub(crate) fn wait(&self, since: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let Ok(mut n) = self.count.lock() else {
            return false;
        };
        while *n == since {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            n = match self.woken.wait_timeout(n, left) {
                Ok((n, _)) => n,
                Err(_) => return false,
            };
        }
        true
    }
}

/// There may be new work: raised by every write that can make a job claimable.
static WORK: Signal = Signal::new();

/// The store may have changed: raised by this process's writes that raise [`WORK`], for a
/// store that hears no other process ([`crate::job::store::Signals::wait_for_change`]'s
/// default; SQLite and PostgreSQL hear every process, each with a signal of its own).
pub(crate) static CHANGE: Signal = Signal::new();

/// Says that there may be new work (called after the write commits); a change too.
pub(crate) fn raise() {
    WORK.raise();
    CHANGE.raise();
}

/// The work signal's count now, for [`wait`].
pub(crate) fn seen() -> u64 {
    WORK.seen()
}

/// Blocks until the work signal moves past `since` or `timeout` passes; whether it moved.
pub(crate) fn wait(since: u64, timeout: Duration) -> bool {
    WORK.wait(since, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raise_wakes_a_waiter_and_a_quiet_store_times_out() {
        let since = seen();
        let waiter = std::thread::spawn(move || wait(since, Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(50));
        raise();
        assert!(waiter.join().unwrap(), "woken by the raise");
        // A raise before the wait is not missed: the count already moved.
        let since = seen();
        raise();
        assert!(wait(since, Duration::from_secs(30)));
        // Quiet: the wait times out. (The signal is the process's: another test's store write
        // may wake one wait; not ten in a row.)
        let timed_out = (0..10).any(|_| {
            let start = Instant::now();
            !wait(seen(), Duration::from_millis(30)) && start.elapsed() >= Duration::from_millis(30)
        });
        assert!(timed_out, "a quiet wait times out");
    }
}
