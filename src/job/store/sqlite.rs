//! The embedded job store: one SQLite file in WAL mode. Every write is a `BEGIN IMMEDIATE`
//! transaction, so two processes sharing the file take turns and never both claim a job; the
//! fencing token is a column every claim and every revoking verb increments, and every runner
//! write is conditional on it.

mod jobs;
mod leases;
mod notices;
mod runners;
mod schema;
mod sessions;
mod signals;
mod tokens;

use super::rows::{self, int, uint};
use super::rules::fenced;
use super::{JobStoreError, Lease};
use crate::job::Migration;
use crate::job::record::{AuditEntry, Job, Transition};
use rusqlite::{
    Connection, ErrorCode, OptionalExtension, Transaction, TransactionBehavior, params,
};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// How many ids an ambiguous prefix error names.
const AMBIGUOUS_SHOWN: usize = 5;

/// A [`JobStore`](super::JobStore) in one SQLite file. Each process (or runner thread) opens its own; they
/// coordinate through the file's locks.
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    // One connection per store: SQLite connections are not shareable across threads at once,
    // and every operation is short.
    conn: Mutex<Connection>,
    /// What leases are judged by.
    clock: std::sync::Arc<dyn super::StoreClock>,
    /// The watch on the store's files, started by the first look for changes.
    watcher: std::sync::OnceLock<Option<notify::RecommendedWatcher>>,
    /// Raised by that watch: this store's files changed (another store's do not wake it).
    changes: std::sync::Arc<super::work::Signal>,
}

impl SqliteStore {
    /// Opens the store at `path`, creating the file, its directory and its tables if needed;
    /// leases are judged by this machine's clock.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, JobStoreError> {
        SqliteStore::open_with_clock(path, std::sync::Arc::new(super::SystemClock))
    }

    /// [`SqliteStore::open`] with leases judged by `clock` (a [`super::ManualClock`] in tests).
    pub fn open_with_clock(
        path: impl AsRef<Path>,
        clock: std::sync::Arc<dyn super::StoreClock>,
    ) -> Result<SqliteStore, JobStoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| JobStoreError::Db {
                path: path.clone(),
                message: format!(
                    "cannot create its directory {}; check the permissions",
                    dir.display()
                ),
                source: Some(super::StoreCause::new(e)),
            })?;
        }
        // Looked at read-only first: a file that is not a job store is left as it was.
        let conn = schema::inspect(&path)
            .and_then(|()| schema::open(&path))
            .map_err(|r| match r {
                schema::Refusal::Sql(e) => db_error(&path, &e),
                schema::Refusal::Foreign(message) => JobStoreError::Db {
                    path: path.clone(),
                    message,
                    source: None,
                },
            })?;
        Ok(SqliteStore {
            path,
            conn: Mutex::new(conn),
            clock,
            watcher: std::sync::OnceLock::new(),
            changes: std::sync::Arc::new(super::work::Signal::new()),
        })
    }

    /// The store's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic elsewhere while holding the lock left no transaction open (a dropped
        // rusqlite transaction rolls back), so the connection is still good.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn db(&self, e: rusqlite::Error) -> JobStoreError {
        db_error(&self.path, &e)
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction, committed when `f` succeeds.
    fn write<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, JobStoreError>,
    ) -> Result<T, JobStoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.db(e))?;
        let out = f(&tx)?;
        tx.commit().map_err(|e| self.db(e))?;
        Ok(out)
    }

    /// The full id of the job `id` names: itself, or the one job it is a prefix of.
    fn resolve(&self, conn: &Connection, id: &str) -> Result<String, JobStoreError> {
        let exact: Option<String> = conn
            .query_row("SELECT id FROM jobs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| self.db(e))?;
        if let Some(found) = exact {
            return Ok(found);
        }
        if id.is_empty() {
            return Err(JobStoreError::NotFound { id: id.to_string() });
        }
        // Ids sort after their prefixes: a range scan of the primary key finds them.
        let mut stmt = conn
            .prepare("SELECT id FROM jobs WHERE id > ?1 ORDER BY id LIMIT ?2")
            .map_err(|e| self.db(e))?;
        let matches: Vec<String> = stmt
            .query_map(params![id, int(AMBIGUOUS_SHOWN as u64)], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        let matches: Vec<String> = matches
            .into_iter()
            .take_while(|m: &String| m.starts_with(id))
            .collect();
        rows::one_of(id, matches)
    }

    /// The job row `id` (a full id): the job, and the migration when its state was a legacy
    /// name. A legacy RUNNING counts as stuck when no runner holds a lease on it: the store
    /// reads no clock outside methods given `now_ms`, and rows of the old lifecycle were never
    /// leased, so any lease there means a runner of this version took it.
    fn read(&self, conn: &Connection, id: &str) -> Result<(Job, Option<Migration>), JobStoreError> {
        let (name, data, owner): (String, String, Option<String>) = conn
            .query_row(
                "SELECT state, data, lease_owner FROM jobs WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| self.db(e))?
            .ok_or_else(|| JobStoreError::NotFound { id: id.to_string() })?;
        let (state, migration) = rows::state(&self.path, id, &name, owner.is_none())?;
        let job = rows::job(&self.path, id, state, &data)?;
        Ok((job, migration))
    }

    /// Writes `job`'s columns (not the lease ones) to its row.
    fn update_job(&self, tx: &Transaction<'_>, job: &Job) -> Result<(), JobStoreError> {
        tx.execute(
            "UPDATE jobs SET state = ?2, data = ?3, title = ?4, risk = ?5, steps = ?6,
                 updated_ms = ?7 WHERE id = ?1",
            params![
                job.id,
                job.state().as_str(),
                rows::to_json(&job.id, job)?,
                rows::title(&job.spec.task),
                job.spec.risk.as_str(),
                job.steps,
                int(job.updated_ms),
            ],
        )
        .map_err(|e| self.db(e))?;
        Ok(())
    }

    /// Appends a transition to the job's history.
    fn push_transition(
        &self,
        tx: &Transaction<'_>,
        id: &str,
        transition: &Transition,
    ) -> Result<(), JobStoreError> {
        tx.execute(
            "INSERT INTO transitions (job_id, seq, data)
             SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2 FROM transitions WHERE job_id = ?1",
            params![id, rows::to_json(id, transition)?],
        )
        .map_err(|e| self.db(e))?;
        Ok(())
    }

    /// The number the next row of job `id` in `table` gets: one past the highest `column`
    /// (1 for the first). Asked inside the write that inserts the row, which holds SQLite's
    /// write lock, so two writers never get the same number.
    fn next_number(
        &self,
        tx: &Transaction<'_>,
        table: &'static str,
        column: &'static str,
        id: &str,
    ) -> Result<u64, JobStoreError> {
        let last: i64 = tx
            .query_row(
                &format!("SELECT COALESCE(MAX({column}), 0) FROM {table} WHERE job_id = ?1"),
                [id],
                |r| r.get(0),
            )
            .map_err(|e| self.db(e))?;
        Ok(uint(last).saturating_add(1))
    }

    /// The rows of job `id` (an id or unique prefix) in `table`, in `column`'s order, each with
    /// its number and its record.
    fn numbered<T: serde::de::DeserializeOwned>(
        &self,
        id: &str,
        table: &'static str,
        column: &'static str,
    ) -> Result<Vec<(u64, T)>, JobStoreError> {
        let conn = self.conn();
        let id = self.resolve(&conn, id)?;
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {column}, data FROM {table} WHERE job_id = ?1 ORDER BY {column}"
            ))
            .map_err(|e| self.db(e))?;
        let data: Vec<(i64, String)> = stmt
            .query_map([&id], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        data.iter()
            .map(|(n, d)| Ok((uint(*n), rows::record(&self.path, &id, table, d)?)))
            .collect()
    }

    /// Appends an audit entry; its `seq` is the row's.
    fn push_audit(&self, tx: &Transaction<'_>, entry: &AuditEntry) -> Result<(), JobStoreError> {
        tx.execute(
            "INSERT INTO audit (job_id, at_ms, actor, action, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                entry.entity_id,
                int(entry.at_ms),
                entry.actor,
                entry.action.as_str(),
                rows::to_json(&entry.entity_id, entry)?,
            ],
        )
        .map_err(|e| self.db(e))?;
        Ok(())
    }

    /// Whether `lease` is still the job's current one.
    fn holds(&self, tx: &Transaction<'_>, lease: &Lease) -> Result<(), JobStoreError> {
        let held: Option<i64> = tx
            .query_row(
                "SELECT 1 FROM jobs WHERE id = ?1 AND fence = ?2 AND lease_owner = ?3",
                params![lease.job, int(lease.fence), lease.runner],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.db(e))?;
        held.map(|_| ()).ok_or_else(|| fenced(lease))
    }

    /// The (stale-free) lease columns of a job row.
    fn lease_of(&self, tx: &Transaction<'_>, id: &str) -> Result<Option<Lease>, JobStoreError> {
        tx.query_row(
            "SELECT lease_owner, lease_until, fence FROM jobs WHERE id = ?1",
            [id],
            |r| {
                let owner: Option<String> = r.get(0)?;
                let until: Option<i64> = r.get(1)?;
                let fence: i64 = r.get(2)?;
                Ok(owner.map(|runner| Lease {
                    job: id.to_string(),
                    runner,
                    fence: uint(fence),
                    until_ms: uint(until.unwrap_or(0)),
                }))
            },
        )
        .optional()
        .map_err(|e| self.db(e))?
        .ok_or_else(|| JobStoreError::NotFound { id: id.to_string() })
    }
}

/// A SQLite failure, said for a person: what, and what to do.
fn db_error(path: &Path, e: &rusqlite::Error) -> JobStoreError {
    // SQLite's words follow as the source; the message says what they mean and what to do.
    let message = match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            "still locked after waiting {} s; is another program holding it (a long write, a \
             sqlite3 shell with an open transaction)?",
            schema::BUSY_TIMEOUT.as_secs()
        ),
        Some(ErrorCode::NotADatabase) => schema::NOT_SQLITE.to_string(),
        Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            "cannot open it; check that its directory exists and is writable".to_string()
        }
        Some(ErrorCode::ReadOnly) => {
            "it is read-only; oneshot needs to write it and its -wal file".to_string()
        }
        // SQLite's own words ("database or disk is full") hide the OS's, which are the ones
        // people search for and `df` confirms.
        Some(ErrorCode::DiskFull) => {
            "No space left on device: the disk is full; free some space".to_string()
        }
        Some(ErrorCode::DatabaseCorrupt) => "the file is damaged; restore it from a backup \
             (sqlite3's .recover may save some of it)"
            .to_string(),
        _ => "the database failed".to_string(),
    };
    JobStoreError::Db {
        path: path.to_path_buf(),
        message,
        source: Some(super::StoreCause::new(clone_error(e))),
    }
}

/// `e` as an owned error to keep (rusqlite's error is not `Clone`): its code and words.
fn clone_error(e: &rusqlite::Error) -> rusqlite::Error {
    match e {
        rusqlite::Error::SqliteFailure(err, msg) => {
            rusqlite::Error::SqliteFailure(*err, msg.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
}
