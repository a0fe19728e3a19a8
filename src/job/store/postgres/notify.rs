//! Waiting for work on PostgreSQL: a connection of its own that `LISTEN`s on the work channel.
//! Every write that may make work (a job created, a verb given, a lease handed back) sends a
//! `NOTIFY` with its commit; a runner on any machine that waits wakes up. A hint only: a lost
//! notification (the connection broke, the listener was not up yet) delays work by the slow
//! poll, never loses it, because the caller claims after every wait.

use super::{PostgresStore, WORK_CHANNEL, connect, off_runtime};
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
}
