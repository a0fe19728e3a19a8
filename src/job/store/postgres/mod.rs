//! The shared job store: one PostgreSQL database for a fleet of runners on many machines.
//!
//! The same contract as the SQLite store ([`super::JobStore`], each domain in a file of its
//! own here), kept by the database: a claim is
//! a `SELECT … FOR UPDATE SKIP LOCKED` of the job waiting longest plus an `UPDATE` of its lease
//! columns, the fencing token a column every claim (and every revoking verb) increments, and
//! every runner write an `UPDATE … WHERE fence = $token`. **Leases are judged by the
//! database's clock** (`clock_timestamp()`), never a runner's: a runner whose clock runs ahead
//! cannot steal a live lease. Appends to one job are serialized by a lock on the job's row, so
//! the numbers a reader pages by have no gaps ([`schema`]). Wake-ups travel by `LISTEN/NOTIFY`
//! on channel `oneshot_work`, a hint only: runners also poll slowly.
//!
//! The client is the synchronous `postgres` crate: `JobStore` is synchronous, and its callers
//! are blocking threads. A call made on a thread that runs a tokio runtime is moved to a
//! scoped thread of its own (the client runs a small runtime of its own, which cannot start
//! inside another). A connection that broke (PostgreSQL restarted) is made again at the next
//! call.

mod db;
mod error;
mod jobs;
mod leases;
mod notices;
mod runners;
pub(crate) mod schema;
mod sessions;
mod signals;
mod tokens;
mod watchers;
#[cfg(test)]
pub(crate) use watchers::WATCHERS_SEEN;

pub use schema::Migrated;

use super::location::PgUrl;
use super::rows::{self, int, uint};
use super::rules::fenced;
use super::{JobStoreError, Lease, StoreClock};
use crate::job::Migration;
use crate::job::record::{AuditEntry, Job, Transition};
use db::Db;
use error::db_error;
pub(crate) use error::is_unique_violation;
use postgres::{Client, GenericClient, NoTls, Transaction};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// How many ids an ambiguous prefix error names.
const AMBIGUOUS_SHOWN: i64 = 5;

/// The `NOTIFY` channel of new work.
pub(crate) const WORK_CHANNEL: &str = "oneshot_work";

/// The `NOTIFY` channel of changes a dashboard shows: every write to a job's records, the
/// job's id as the payload (`Signals::wait_for_change`).
pub(crate) const CHANGE_CHANNEL: &str = "oneshot_change";

/// A [`JobStore`](super::JobStore) in a PostgreSQL database.
pub struct PostgresStore {
    url: PgUrl,
    /// The URL as errors name it (password masked), as a path for [`JobStoreError::Db`].
    shown: PathBuf,
    /// The connection, with the statements prepared on it.
    client: Mutex<Option<(Client, db::Prepared)>>,
    /// The connection that `LISTEN`s, made at the first wait for work.
    listener: Mutex<Option<Client>>,
    /// The connection that `LISTEN`s for changes, made at the first look for them.
    changes: Mutex<Option<Client>>,
    /// What leases are judged by when not the database's clock (tests).
    clock: Option<Arc<dyn StoreClock>>,
    /// This store's row in the `watchers` table ([`watchers`]), unique to it.
    watcher: String,
    /// When that row was last written, once it was.
    watched: Mutex<Option<std::time::Instant>>,
    /// When that row was written anew (first, or after it expired).
    registered: Mutex<Option<std::time::Instant>>,
    /// Whether some process waits for every change, and when that was read.
    seen_watchers: Mutex<Option<(std::time::Instant, bool)>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &self.url.shown())
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the store at `url`; refuses a database whose schema is not this build's
    /// (saying to run `oneshot store migrate`). Leases are judged by the database's clock.
    pub fn connect(url: &PgUrl) -> Result<PostgresStore, JobStoreError> {
        PostgresStore::open(url, None)
    }

    /// [`PostgresStore::connect`] with leases judged by `clock` instead of the database's
    /// (a [`super::ManualClock`] in tests of lease expiry).
    pub fn connect_with_clock(
        url: &PgUrl,
        clock: Arc<dyn StoreClock>,
    ) -> Result<PostgresStore, JobStoreError> {
        PostgresStore::open(url, Some(clock))
    }

    fn open(
        url: &PgUrl,
        clock: Option<Arc<dyn StoreClock>>,
    ) -> Result<PostgresStore, JobStoreError> {
        let store = PostgresStore {
            url: url.clone(),
            shown: PathBuf::from(url.shown()),
            client: Mutex::new(None),
            listener: Mutex::new(None),
            changes: Mutex::new(None),
            clock,
            watcher: crate::job::runner::runner_id(),
            watched: Mutex::new(None),
            registered: Mutex::new(None),
            seen_watchers: Mutex::new(None),
        };
        store.with(|c| {
            let found = schema::found(c.client()).map_err(|e| store.db(&e))?;
            match schema::refusal(found) {
                None => Ok(()),
                Some(message) => Err(JobStoreError::Db {
                    path: store.shown.clone(),
                    message,
                    source: None,
                }),
            }
        })?;
        Ok(store)
    }

    /// Creates or upgrades the store's tables at `url` (`oneshot store migrate`).
    pub fn migrate(url: &PgUrl) -> Result<Migrated, JobStoreError> {
        let shown = PathBuf::from(url.shown());
        off_runtime(|| {
            let mut client = connect(url, &shown)?;
            match schema::migrate(&mut client).map_err(|e| db_error(&shown, &e))? {
                Ok(m) => Ok(m),
                Err(message) => Err(JobStoreError::Db {
                    path: shown.clone(),
                    message,
                    source: None,
                }),
            }
        })
    }

    /// The URL, its password masked.
    pub fn url(&self) -> &str {
        self.url.shown()
    }

    fn db(&self, e: &postgres::Error) -> JobStoreError {
        db_error(&self.shown, e)
    }

    fn lock(&self) -> MutexGuard<'_, Option<(Client, db::Prepared)>> {
        // A panic while holding the lock left no transaction open (a dropped transaction
        // rolls back), so the connection is still good.
        self.client.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the store's connection (made again when it broke), off any tokio runtime.
    fn with<T: Send>(
        &self,
        f: impl FnOnce(&mut Db<'_, Client>) -> Result<T, JobStoreError> + Send,
    ) -> Result<T, JobStoreError> {
        off_runtime(|| {
            let mut guard = self.lock();
            if guard.as_ref().is_none_or(|(c, _)| c.is_closed()) {
                *guard = Some((connect(&self.url, &self.shown)?, db::Prepared::new()));
            }
            let (client, prepared) = guard.as_mut().ok_or_else(|| self.gone())?;
            let out = f(&mut Db::new(client, prepared));
            if client.is_closed() {
                // The next call connects afresh.
                *guard = None;
            }
            out
        })
    }

    fn gone(&self) -> JobStoreError {
        JobStoreError::Db {
            path: self.shown.clone(),
            message: "the connection is gone".into(),
            source: None,
        }
    }

    /// Runs `f` in a transaction, committed when `f` succeeds.
    fn write<T: Send>(
        &self,
        f: impl FnOnce(&mut Db<'_, Transaction<'_>>) -> Result<T, JobStoreError> + Send,
    ) -> Result<T, JobStoreError> {
        off_runtime(|| {
            let mut guard = self.lock();
            if guard.as_ref().is_none_or(|(c, _)| c.is_closed()) {
                *guard = Some((connect(&self.url, &self.shown)?, db::Prepared::new()));
            }
            let (client, prepared) = guard.as_mut().ok_or_else(|| self.gone())?;
            let out = (|| {
                let mut tx = client.transaction().map_err(|e| self.db(&e))?;
                let out = f(&mut Db::new(&mut tx, prepared))?;
                tx.commit().map_err(|e| self.db(&e))?;
                Ok(out)
            })();
            if client.is_closed() {
                *guard = None;
            }
            out
        })
    }

    /// The store's now, in ms: the database's clock, or the test clock.
    fn now(&self, c: &mut Db<'_, impl GenericClient>) -> Result<i64, JobStoreError> {
        if let Some(clock) = &self.clock {
            return Ok(int(clock.now_ms()));
        }
        c.query_one(
            "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
            &[],
        )
        .map(|r| r.get(0))
        .map_err(|e| self.db(&e))
    }

    /// The full id of the job `id` names: itself, or the one job it is a prefix of.
    fn resolve(
        &self,
        c: &mut Db<'_, impl GenericClient>,
        id: &str,
    ) -> Result<String, JobStoreError> {
        let exact = c
            .query_opt("SELECT id FROM jobs WHERE id = $1", &[&id])
            .map_err(|e| self.db(&e))?;
        if let Some(r) = exact {
            return Ok(r.get(0));
        }
        if id.is_empty() {
            return Err(JobStoreError::NotFound { id: id.to_string() });
        }
        let matches: Vec<String> = c
            .query(
                "SELECT id FROM jobs WHERE id > $1 ORDER BY id LIMIT $2",
                &[&id, &AMBIGUOUS_SHOWN],
            )
            .map_err(|e| self.db(&e))?
            .iter()
            .map(|r| r.get::<_, String>(0))
            .take_while(|m| m.starts_with(id))
            .collect();
        rows::one_of(id, matches)
    }

    /// The job row `id` (a full id), locked for the transaction when `lock`: the job, and the
    /// migration when its state was a legacy name.
    fn read(
        &self,
        c: &mut Db<'_, impl GenericClient>,
        id: &str,
        lock: bool,
    ) -> Result<(Job, Option<Migration>), JobStoreError> {
        let sql = if lock {
            "SELECT state, data, lease_owner FROM jobs WHERE id = $1 FOR UPDATE"
        } else {
            "SELECT state, data, lease_owner FROM jobs WHERE id = $1"
        };
        let row = c
            .query_opt(sql, &[&id])
            .map_err(|e| self.db(&e))?
            .ok_or_else(|| JobStoreError::NotFound { id: id.to_string() })?;
        let (name, data, owner): (String, String, Option<String>) =
            (row.get(0), row.get(1), row.get(2));
        let (state, migration) = rows::state(&self.shown, id, &name, owner.is_none())?;
        let job = rows::job(&self.shown, id, state, &data)?;
        Ok((job, migration))
    }

    /// Locks job `id`'s row for the transaction (appends to it are serialized by this).
    fn lock_job(&self, tx: &mut Db<'_, Transaction<'_>>, id: &str) -> Result<(), JobStoreError> {
        tx.query_opt("SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", &[&id])
            .map_err(|e| self.db(&e))?
            .map(|_| ())
            .ok_or_else(|| JobStoreError::NotFound { id: id.to_string() })
    }

    /// Writes `job`'s columns (not the lease ones) to its row.
    fn update_job(&self, tx: &mut Db<'_, Transaction<'_>>, job: &Job) -> Result<(), JobStoreError> {
        tx.execute(
            "UPDATE jobs SET state = $2, data = $3, title = $4, risk = $5, steps = $6,
                 updated_ms = $7, nickname = $8 WHERE id = $1",
            &[
                &job.id,
                &job.state().as_str(),
                &rows::to_json(&job.id, job)?,
                &rows::title(&job.spec.task),
                &job.spec.risk.as_str(),
                &(i32::try_from(job.steps).unwrap_or(i32::MAX)),
                &int(job.updated_ms),
                &job.spec.nickname,
            ],
        )
        .map_err(|e| self.db(&e))?;
        Ok(())
    }

    /// The number the next row of job `id` in `table` gets (the job's row is locked).
    fn next_number(
        &self,
        tx: &mut Db<'_, Transaction<'_>>,
        table: &'static str,
        column: &'static str,
        id: &str,
    ) -> Result<i64, JobStoreError> {
        let last: i64 = tx
            .query_one(
                &format!(
                    "SELECT COALESCE(MAX({column})::bigint, 0) FROM {table} WHERE job_id = $1"
                ),
                &[&id],
            )
            .map_err(|e| self.db(&e))?
            .get(0);
        Ok(last.saturating_add(1))
    }

    /// Appends a transition to the job's history, numbered by the job row's counter, bumped
    /// in the same statement (under the row's lock, held to the commit: appends to the job
    /// are serialized, as a runner's advance does them).
    fn push_transition(
        &self,
        tx: &mut Db<'_, Transaction<'_>>,
        id: &str,
        t: &Transition,
    ) -> Result<(), JobStoreError> {
        tx.execute(
            "WITH j AS (
                 UPDATE jobs SET last_seq = last_seq + 1 WHERE id = $1 RETURNING id, last_seq)
             INSERT INTO transitions (job_id, seq, data) SELECT id, last_seq, $2 FROM j",
            &[&id, &rows::to_json(id, t)?],
        )
        .map_err(|e| self.db(&e))?;
        Ok(())
    }

    /// Appends an audit entry (the job's row is locked, when there is one).
    fn push_audit(
        &self,
        tx: &mut Db<'_, Transaction<'_>>,
        entry: &AuditEntry,
    ) -> Result<(), JobStoreError> {
        let id = &entry.entity_id;
        let job_seq = self.next_number(tx, "audit", "job_seq", id)?;
        tx.execute(
            "INSERT INTO audit (job_id, job_seq, at_ms, actor, action, data)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                id,
                &job_seq,
                &int(entry.at_ms),
                &entry.actor,
                &entry.action.as_str(),
                &rows::to_json(id, entry)?,
            ],
        )
        .map_err(|e| self.db(&e))?;
        Ok(())
    }

    /// Whether `lease` is still the job's current one; locks the job's row.
    fn holds(&self, tx: &mut Db<'_, Transaction<'_>>, lease: &Lease) -> Result<(), JobStoreError> {
        tx.query_opt(
            "SELECT 1 FROM jobs WHERE id = $1 AND fence = $2 AND lease_owner = $3 FOR UPDATE",
            &[&lease.job, &int(lease.fence), &lease.runner],
        )
        .map_err(|e| self.db(&e))?
        .map(|_| ())
        .ok_or_else(|| fenced(lease))
    }

    /// Tells every listening runner there may be work (delivered when the transaction commits).
    fn notify(&self, tx: &mut Db<'_, Transaction<'_>>) -> Result<(), JobStoreError> {
        tx.batch_execute(&format!("NOTIFY {WORK_CHANNEL}"))
            .map_err(|e| self.db(&e))
    }

    /// Tells every listening dashboard that job `id` changed (delivered at the commit; a
    /// rolled-back write tells nobody).
    fn changed(&self, tx: &mut Db<'_, Transaction<'_>>, id: &str) -> Result<(), JobStoreError> {
        tx.execute("SELECT pg_notify($1, $2)", &[&CHANGE_CHANNEL, &id])
            .map(|_| ())
            .map_err(|e| self.db(&e))
    }

    /// [`PostgresStore::changed`] for the writes made many times a step (a session's records,
    /// its journal): sent only while some process waits for every change ([`watchers`]).
    fn progressed(&self, tx: &mut Db<'_, Transaction<'_>>, id: &str) -> Result<(), JobStoreError> {
        if !self.watched(tx)? {
            return Ok(());
        }
        self.changed(tx, id)
    }
}

#[cfg(test)]
impl PostgresStore {
    /// A write that locks job `id`'s row, says so on `locked`, then waits `pause` before
    /// its commit: a runner stopped inside a transaction.
    pub(crate) fn stall_in_transaction(
        &self,
        id: &str,
        locked: std::sync::mpsc::Sender<()>,
        pause: std::time::Duration,
    ) -> Result<(), JobStoreError> {
        self.write(|tx| {
            tx.query("SELECT id FROM jobs WHERE id = $1 FOR UPDATE", &[&id])
                .map_err(|e| self.db(&e))?;
            let _ = locked.send(());
            std::thread::sleep(pause);
            Ok(())
        })
    }
}

impl Drop for PostgresStore {
    /// The clients shut their connections down on their own runtimes, which cannot run on a
    /// thread that runs another: dropped where the last handle went (a runner's task), they
    /// would panic. Off any runtime, then.
    fn drop(&mut self) {
        self.unwatch();
        let client = self.client.get_mut().map(Option::take).unwrap_or(None);
        let listener = self.listener.get_mut().map(Option::take).unwrap_or(None);
        let changes = self.changes.get_mut().map(Option::take).unwrap_or(None);
        off_runtime(move || drop((client, listener, changes)));
    }
}

/// Runs `f` here, or — on a thread that runs a tokio runtime, where the client's own runtime
/// cannot start — on a scoped thread of its own.
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// How long a connection of ours may sit inside a transaction waiting for its client before
/// the server ends the session. Our transactions only run statements back to back, so a pause
/// this long means the process is stopped (SIGSTOP, a debugger, a suspended laptop): while it
/// is, the rows it locked stay locked and every other runner's `SKIP LOCKED` claim passes its
/// job by — after its lease ran out too. The server aborting the transaction frees them; the
/// stopped process, woken, finds its connection closed, reconnects, and is fenced. Shorter
/// than the shortest lease ([`crate::job::runner::MIN_LEASE`] is 1 s) would risk aborting a
/// merely slow client; a URL setting it (`?options=-cidle_in_transaction_session_timeout=…`)
/// is kept.
pub(crate) const IDLE_IN_TRANSACTION: std::time::Duration = std::time::Duration::from_secs(2);

/// A new connection to `url`, with [`IDLE_IN_TRANSACTION`] set on it unless the URL sets it.
fn connect(url: &PgUrl, shown: &Path) -> Result<Client, JobStoreError> {
    let mut client = url.config.connect(NoTls).map_err(|e| db_error(shown, &e))?;
    let set_by_url = url
        .config
        .get_options()
        .is_some_and(|o| o.contains("idle_in_transaction_session_timeout"));
    if !set_by_url {
        client
            .batch_execute(&format!(
                "SET idle_in_transaction_session_timeout = {}",
                IDLE_IN_TRANSACTION.as_millis()
            ))
            .map_err(|e| db_error(shown, &e))?;
    }
    Ok(client)
}

/// An INTEGER column as u64, for the numbers the store assigns.
pub(crate) fn number(n: i64) -> u64 {
    uint(n)
}
