//! [`Signals`] for [`PostgresStore`]: waiting for work on a connection of its own that
//! `LISTEN`s on the work channel, and for changes on another.
//! Every write that may make work (a job created, a verb given, a lease handed back) sends a
//! `NOTIFY` with its commit; a runner on any machine that waits wakes up. A hint only: a lost
//! notification (the connection broke, the listener was not up yet) delays work by the slow
//! poll, never loses it, because the caller claims after every wait.

use super::{CHANGE_CHANNEL, PostgresStore, WORK_CHANNEL, connect, off_runtime};
use crate::job::store::Signals;
use postgres::fallible_iterator::FallibleIterator;
use std::time::Duration;

impl Signals for PostgresStore {
    /// Blocks until a notification arrives (or one came since the last wait), this process
    /// raised the work signal after `since`, or `timeout` passes.
    fn wait_for_work(&self, since: u64, timeout: Duration) -> bool {
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

    fn wait_for_change(&self, since: u64, timeout: std::time::Duration) -> bool {
        // Registered as a watcher first, so that every step's writes announce themselves;
        // renewed between waits of at most WATCH_RENEW.
        match self.watch() {
            Ok(true) => return true,
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "cannot register to hear every change"),
        }
        // Writers learn of a new watcher within a second: until they all have, a wait ends
        // then and says to look again, for what they did not announce.
        if let Some(left) = self.fresh_watch()
            && left <= timeout
        {
            self.wait_for_news(since, left);
            return true;
        }
        self.wait_for_news(since, timeout.min(super::watchers::WATCH_RENEW))
    }

    /// Blocks until a change notification arrives (or came since the last wait: they queue
    /// on the listening connection, so none made after [`Signals::change_seen`] is missed —
    /// `since` is not needed), the listening connection had to be made again (what happened
    /// meanwhile is unknown: a wake-up), or `timeout` passes. The rare writes always
    /// announce themselves; each step's progress only while someone waits in
    /// [`Signals::wait_for_change`] (`postgres/watchers.rs`).
    fn wait_for_news(&self, _since: u64, timeout: Duration) -> bool {
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

    fn change_seen(&self) -> u64 {
        // Listening from here on; what arrives queues on the connection.
        self.listen_for_changes();
        0
    }
}

impl PostgresStore {
    /// Makes sure a connection `LISTEN`s for changes; whether it had to be (re)made — when
    /// it was, changes may have gone unheard and the caller must look again.
    fn listen_for_changes(&self) -> bool {
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
}
