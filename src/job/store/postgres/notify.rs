//! Waiting for work on PostgreSQL: a connection of its own that `LISTEN`s on the work channel.
//! Every write that may make work (a job created, a verb given, a lease handed back) sends a
//! `NOTIFY` with its commit; a runner on any machine that waits wakes up. A hint only: a lost
//! notification (the connection broke, the listener was not up yet) delays work by the slow
//! poll, never loses it, because the caller claims after every wait.

use super::{CHANGE_CHANNEL, PostgresStore, WORK_CHANNEL, connect, off_runtime};
use postgres::fallible_iterator::FallibleIterator;
use std::time::Duration;

impl PostgresStore {
    /// Blocks until a notification arrives (or one came since the last wait), this process
    /// raised the work signal after `since`, or `timeout` passes.
    pub(super) fn wait(&self, since: u64, timeout: Duration) -> bool {
        if crate::job::store::work::seen() > since {
            return true;
        }
        off_runtime(|| {
            let mut guard = self.listener.lock().unwrap_or_else(|p| p.into_inner());
            if guard.as_ref().is_none_or(postgres::Client::is_closed) {
                let listening = connect(&self.url, &self.shown).and_then(|mut c| {
                    c.batch_execute(&format!("LISTEN {WORK_CHANNEL}"))
                        .map_err(|e| self.db(&e))
                        .map(|()| c)
                });
                match listening {
                    Ok(c) => *guard = Some(c),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot listen for work; polling instead");
                        drop(guard);
                        std::thread::sleep(timeout);
                        return false;
                    }
                }
            }
            let Some(client) = guard.as_mut() else {
                return false;
            };
            let mut notes = client.notifications();
            // What arrived since the last wait first, without blocking.
            if notes.iter().next().ok().flatten().is_some() {
                while notes.iter().next().ok().flatten().is_some() {}
                return true;
            }
            let woken = matches!(notes.timeout_iter(timeout).next(), Ok(Some(_)));
            // Several notifications for one burst of work: one wake-up.
            while notes.iter().next().ok().flatten().is_some() {}
            woken
        })
    }

    /// Makes sure a connection `LISTEN`s for changes; whether it had to be (re)made — when
    /// it was, changes may have gone unheard and the caller must look again.
    pub(super) fn listen_for_changes(&self) -> bool {
        off_runtime(|| {
            let mut guard = self.changes.lock().unwrap_or_else(|p| p.into_inner());
            if guard.as_ref().is_some_and(|c| !c.is_closed()) {
                return false;
            }
            let listening = connect(&self.url, &self.shown).and_then(|mut c| {
                c.batch_execute(&format!("LISTEN {CHANGE_CHANNEL}"))
                    .map_err(|e| self.db(&e))
                    .map(|()| c)
            });
            match listening {
                Ok(c) => *guard = Some(c),
                Err(e) => tracing::warn!(error = %e, "cannot listen for changes"),
            }
            true
        })
    }

    /// Blocks until a change notification arrives (or came since the last wait: they queue
    /// on the listening connection, so none made after [`JobStore::change_seen`] is missed —
    /// `since` is not needed), the listening connection had to be made again (what happened
    /// meanwhile is unknown: a wake-up), or `timeout` passes.
    ///
    /// [`JobStore::change_seen`]: crate::job::store::JobStore::change_seen
    pub(super) fn wait_change(&self, _since: u64, timeout: Duration) -> bool {
        if self.listen_for_changes() {
            return true;
        }
        off_runtime(|| {
            let mut guard = self.changes.lock().unwrap_or_else(|p| p.into_inner());
            let Some(client) = guard.as_mut() else {
                drop(guard);
                // No connection to listen on (the warning said why): the slow poll.
                std::thread::sleep(timeout);
                return true;
            };
            let mut notes = client.notifications();
            if notes.iter().next().ok().flatten().is_some() {
                while notes.iter().next().ok().flatten().is_some() {}
                return true;
            }
            let woken = match notes.timeout_iter(timeout).next() {
                Ok(Some(_)) => true,
                Ok(None) => false,
                // The connection broke: the next look makes another, and looks again.
                Err(_) => true,
            };
            while notes.iter().next().ok().flatten().is_some() {}
            woken
        })
    }
}
