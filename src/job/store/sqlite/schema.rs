//! The job store's file: connection settings, the tables, and the schema version.

use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;
use std::time::Duration;

/// The schema this build writes (`PRAGMA user_version`). A file with a higher one was written
/// by a newer oneshot and is refused rather than misread.
pub(super) const VERSION: i64 = 1;

/// How long a write waits for another process's write to end before giving up: long enough
/// for any single store operation, short enough that a stuck holder is reported.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The states a claim may pick: PENDING, or a transient state whose runner's lease expired.
/// Kept in one place because the partial index below and the claim query must spell it alike
/// for SQLite to use the index.
pub(super) const CLAIMABLE: &str =
    "state IN ('PENDING', 'PROVISIONING', 'EXECUTING', 'RECOVERING', 'HARVESTING')";

/// Version 1. `state` is authoritative; `data` is the whole `Job` as JSON. `title`, `risk`
/// and `steps` repeat what `list` shows so that listing never parses a job's JSON.
fn tables() -> String {
    format!(
        "CREATE TABLE jobs (
            id          TEXT PRIMARY KEY NOT NULL,
            state       TEXT NOT NULL,
            data        TEXT NOT NULL,
            title       TEXT NOT NULL,
            risk        TEXT NOT NULL,
            steps       INTEGER NOT NULL,
            created_ms  INTEGER NOT NULL,
            updated_ms  INTEGER NOT NULL,
            lease_owner TEXT,
            lease_until INTEGER,
            fence       INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX jobs_state_updated ON jobs (state, updated_ms);
        CREATE INDEX jobs_created ON jobs (created_ms, id);
        -- The claim scans this in updated_ms order and stops at the first free row, however
        -- many resting jobs the store holds.
        CREATE INDEX jobs_claimable ON jobs (updated_ms, id) WHERE {CLAIMABLE};
        CREATE TABLE transitions (
            job_id TEXT NOT NULL REFERENCES jobs (id),
            seq    INTEGER NOT NULL,
            data   TEXT NOT NULL,
            PRIMARY KEY (job_id, seq)
        );
        -- Append-only (seed 003 §4.2): a version is inserted once and never updated.
        CREATE TABLE artifacts (
            job_id  TEXT NOT NULL REFERENCES jobs (id),
            version INTEGER NOT NULL,
            data    TEXT NOT NULL,
            UNIQUE (job_id, version)
        );
        -- Seed 003 §4.5. AUTOINCREMENT: a seq is never reused, even after the last row goes.
        CREATE TABLE audit (
            seq    INTEGER PRIMARY KEY AUTOINCREMENT,
            job_id TEXT NOT NULL,
            at_ms  INTEGER NOT NULL,
            actor  TEXT NOT NULL,
            action TEXT NOT NULL,
            data   TEXT NOT NULL
        );
        CREATE INDEX audit_job ON audit (job_id, seq);"
    )
}

/// Why a file cannot be used as a job store, besides SQLite's own errors.
pub(super) enum Refusal {
    /// SQLite failed.
    Sql(rusqlite::Error),
    /// The file is a SQLite database of something else, or of a newer oneshot.
    Foreign(String),
}

impl From<rusqlite::Error> for Refusal {
    fn from(e: rusqlite::Error) -> Self {
        Refusal::Sql(e)
    }
}

/// Opens `path` with the store's settings and makes sure it holds the current schema.
pub(super) fn open(path: &Path) -> Result<Connection, Refusal> {
    let mut conn = Connection::open(path)?;
    // Set first: switching to WAL and creating the tables may wait for another process.
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // WAL: readers never block the writer, and a commit is one append. NORMAL sync in WAL loses
    // at most the last commits on power loss, never consistency.
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Refusal::Foreign(format!(
            "SQLite refused write-ahead logging (journal mode stays {mode:?}); put the store on \
             a local disk"
        )));
    }
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;

    // Immediate: two processes opening a fresh file at once must not both create the tables.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > VERSION {
        return Err(Refusal::Foreign(format!(
            "written by a newer oneshot (schema version {version}; this one knows up to \
             {VERSION}); upgrade oneshot, or point it at another store"
        )));
    }
    if version == 0 {
        let existing: i64 = tx.query_row(
            "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'",
            [],
            |r| r.get(0),
        )?;
        if existing > 0 {
            return Err(Refusal::Foreign(
                "a SQLite database, but not a oneshot job store (it has tables of its own); \
                 point oneshot at another file"
                    .to_string(),
            ));
        }
        tx.execute_batch(&tables())?;
        tx.execute_batch(&format!("PRAGMA user_version = {VERSION}"))?;
    }
    tx.commit()?;
    Ok(conn)
}
