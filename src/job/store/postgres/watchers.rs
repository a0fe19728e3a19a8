//! Who waits for every change: a row per process that does (a dashboard, `oneshot say` waiting),
//! dated by the database's clock, so that the writes made many times a step — a transition,
//! a session's records, its journal — announce themselves (`NOTIFY` on the change channel)
//! only while someone listens for them.
//!
//! Why: a `NOTIFY` is not free. At the commit of every transaction that sent one, PostgreSQL
//! takes a lock all such commits in the cluster share, and appends to its notification queue;
//! sent with every advance, it cost a fifth of the fleet's claims rate (docs/performance.md, "PostgreSQL
//! store"), whether or not anyone listened. The rare writes (a job created, a verb, an audit
//! entry such as a message said to a job, an artifact, a decision, a lease handed back) always
//! announce themselves: a runner's relay of messages waits for those alone
//! ([`Signals::wait_for_news`]) and registers nothing.
//!
//! A watcher's row lasts [`WATCH_TTL`] and is renewed every [`WATCH_RENEW`] while it waits; a
//! process that dies leaves a row that stops counting when it expires. A writer does not ask
//! the table at every write (a subquery in each advance cost half of what the `NOTIFY` did):
//! each store reads whether anyone watches at most once every [`WATCHERS_SEEN`], so a new
//! watcher may go unannounced for that long — its waits for that long after it registered
//! end by then and say "look again" ([`PostgresStore::fresh_watch`]), and every later step's
//! writes are announced.
//!
//! [`Signals::wait_for_news`]: crate::job::store::Signals::wait_for_news

use super::PostgresStore;
use crate::job::store::JobStoreError;
use std::time::{Duration, Instant};

/// How long a watcher's row counts after it was written.
pub(super) const WATCH_TTL: Duration = Duration::from_secs(60);

/// How often a waiting watcher renews its row: a wait lasts at most this long between two
/// renewals, so the row never expires under a watcher that still waits.
pub(super) const WATCH_RENEW: Duration = Duration::from_secs(20);

/// How long a writer trusts what it last read of the `watchers` table.
pub(crate) const WATCHERS_SEEN: Duration = Duration::from_secs(1);

/// The SQL condition "some process waits for every change", by the database's clock.
const WATCHED: &str = "EXISTS (SELECT 1 FROM watchers
     WHERE until_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint)";

impl PostgresStore {
    /// Writes (or renews) this store's watcher row when it is due; whether it was written now
    /// (changes made before it may have gone unannounced: the caller looks again).
    pub(super) fn watch(&self) -> Result<bool, JobStoreError> {
        let mut last = self.watched.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|at| at.elapsed() < WATCH_RENEW) {
            return Ok(false);
        }
        // A first row, or one that has expired meanwhile (this process was stopped).
        let fresh = last.is_none_or(|at| at.elapsed() >= WATCH_TTL);
        self.with(|c| {
            c.execute(
                "WITH t AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now),
                 gone AS (DELETE FROM watchers USING t WHERE until_ms < t.now)
                 INSERT INTO watchers (id, until_ms) SELECT $1, t.now + $2 FROM t
                 ON CONFLICT (id) DO UPDATE SET until_ms = EXCLUDED.until_ms",
                &[&self.watcher, &(WATCH_TTL.as_millis() as i64)],
            )
            .map_err(|e| self.db(&e))
        })?;
        let now = Instant::now();
        *last = Some(now);
        if fresh {
            *self.registered.lock().unwrap_or_else(|p| p.into_inner()) = Some(now);
        }
        Ok(fresh)
    }

    /// How long, from now, writers may still not know of this store's new watcher row (at
    /// most [`WATCHERS_SEEN`] and a margin after it was written); `None` once they all do.
    pub(super) fn fresh_watch(&self) -> Option<Duration> {
        let registered = *self.registered.lock().unwrap_or_else(|p| p.into_inner());
        let known = registered? + WATCHERS_SEEN + WATCHERS_SEEN / 2;
        known.checked_duration_since(Instant::now())
    }

    /// Whether some process waits for every change, as last read (at most
    /// [`WATCHERS_SEEN`] ago; read now on `c` when older).
    pub(super) fn watched(
        &self,
        c: &mut super::Db<'_, impl postgres::GenericClient>,
    ) -> Result<bool, JobStoreError> {
        let mut seen = self.seen_watchers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, watched)) = *seen
            && at.elapsed() < WATCHERS_SEEN
        {
            return Ok(watched);
        }
        let watched: bool = c
            .query_one(&format!("SELECT {WATCHED}"), &[])
            .map_err(|e| self.db(&e))?
            .get(0);
        *seen = Some((Instant::now(), watched));
        Ok(watched)
    }

    /// Removes this store's watcher row, if it wrote one (best effort: it expires anyway).
    pub(super) fn unwatch(&self) {
        let watched = self.watched.lock().map(|w| w.is_some()).unwrap_or(true);
        if !watched {
            return;
        }
        let gone = self.with(|c| {
            c.execute("DELETE FROM watchers WHERE id = $1", &[&self.watcher])
                .map_err(|e| self.db(&e))
        });
        if let Err(e) = gone {
            tracing::debug!(error = %e, "could not remove the watcher row; it expires");
        }
    }
}
