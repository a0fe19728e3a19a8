//! The job store's file: connection settings, the tables, and the schema version.

use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::io::{self, Read};
use std::path::Path;
use std::time::Duration;

/// The schema this build writes (`PRAGMA user_version`). A file with a higher one was written
/// by a newer oneshot and is refused rather than misread.
pub(super) const VERSION: i64 = 7;

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

/// Version 2 adds the policy's judgements (`approve`, `retry`), append-only per job; a
/// version-1 file is brought up to it when it is opened for writing.
const DECISIONS: &str = "CREATE TABLE decisions (
            job_id TEXT NOT NULL REFERENCES jobs (id),
            seq    INTEGER NOT NULL,
            data   TEXT NOT NULL,
            PRIMARY KEY (job_id, seq)
        );";

/// Version 3 adds the runners' heartbeat rows (`oneshot job runners`).
const RUNNERS: &str = "CREATE TABLE runners (
            runner     TEXT PRIMARY KEY NOT NULL,
            host       TEXT NOT NULL,
            pid        INTEGER NOT NULL,
            started_ms INTEGER NOT NULL,
            beat_ms    INTEGER NOT NULL,
            ttl_ms     INTEGER NOT NULL
        );";

/// Version 4 adds what a job's sessions leave in the store (`super::super::sessions`): their
/// log records, numbered per job, and their journals, one per session.
const SESSIONS: &str = "CREATE TABLE session_entries (
            job_id  TEXT NOT NULL REFERENCES jobs (id),
            seq     INTEGER NOT NULL,
            session TEXT NOT NULL,
            data    TEXT NOT NULL,
            log_end INTEGER NOT NULL,
            PRIMARY KEY (job_id, seq)
        );
        CREATE TABLE journals (
            job_id     TEXT NOT NULL REFERENCES jobs (id),
            session    TEXT NOT NULL,
            runner     TEXT NOT NULL,
            first_ms   INTEGER NOT NULL,
            shipped_ms INTEGER NOT NULL,
            data       TEXT NOT NULL,
            PRIMARY KEY (job_id, session)
        );";

/// Version 5 adds the dashboard's access control (`super::super::tokens`): tokens (only the
/// hash of each secret), one-time sign-in codes and browser sessions, each code and session
/// a token's, each secret found by its hash.
pub(super) const TOKENS: &str = "CREATE TABLE tokens (
            name       TEXT PRIMARY KEY NOT NULL,
            hash       TEXT NOT NULL UNIQUE,
            created_ms INTEGER NOT NULL,
            revoked_ms INTEGER,
            data       TEXT NOT NULL
        );
        CREATE TABLE login_codes (
            hash       TEXT PRIMARY KEY NOT NULL,
            token      TEXT NOT NULL REFERENCES tokens (name),
            expires_ms INTEGER NOT NULL
        );
        CREATE TABLE web_sessions (
            hash       TEXT PRIMARY KEY NOT NULL,
            token      TEXT NOT NULL REFERENCES tokens (name),
            created_ms INTEGER NOT NULL,
            expires_ms INTEGER NOT NULL
        );
        CREATE INDEX login_codes_token ON login_codes (token);
        CREATE INDEX web_sessions_token ON web_sessions (token);";

/// Version 6 adds the notifications of needs-a-human events (`super::super::notifications`):
/// one row per (job, kind, cause), inserted if absent by the one process that sends it.
pub(super) const NOTIFICATIONS: &str = "CREATE TABLE notifications (
            job_id     TEXT NOT NULL REFERENCES jobs (id),
            kind       TEXT NOT NULL,
            cause      TEXT NOT NULL,
            sender     TEXT NOT NULL,
            status     TEXT NOT NULL,
            attempts   INTEGER NOT NULL,
            error      TEXT,
            created_ms INTEGER NOT NULL,
            updated_ms INTEGER NOT NULL,
            data       TEXT NOT NULL,
            PRIMARY KEY (job_id, kind, cause)
        );
        CREATE INDEX notifications_created ON notifications (created_ms);";

/// Version 7 adds what a runner waits for before it claims more (`RunnerWait`, as JSON).
const RUNNER_WAITING: &str = "ALTER TABLE runners ADD COLUMN waiting TEXT;";

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

/// The first bytes of every SQLite database file.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The tables every store version has; a file that claims a version without them is not a
/// oneshot store.
const TABLES: [&str; 4] = ["jobs", "transitions", "artifacts", "audit"];

/// Looks at an existing file at `path` without writing to it: refuses it, byte for byte
/// untouched (no journal mode set, no `-wal` or `-shm` file made), when it is not a SQLite
/// database, is another program's, or was written by a newer oneshot. A file that is not there
/// or is empty is a new store; one that passes may be opened for writing ([`open`], which
/// checks again under its write lock, since the file may change in between).
pub(super) fn inspect(path: &Path) -> Result<(), Refusal> {
    let mut head = Vec::with_capacity(MAGIC.len());
    match crate::store::regular::open_read(path) {
        Ok(file) => {
            file.take(MAGIC.len() as u64)
                .read_to_end(&mut head)
                .map_err(|e| {
                    Refusal::Foreign(format!("cannot read it ({e}); check its permissions"))
                })?;
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) if crate::store::regular::is_not_regular(&e) => {
            return Err(Refusal::Foreign(format!("{e}")));
        }
        // A directory, a permission problem: SQLite's own error says it when it opens.
        Err(_) => return Ok(()),
    }
    if head.is_empty() {
        return Ok(());
    }
    if head != MAGIC {
        return Err(Refusal::Foreign(NOT_SQLITE.to_string()));
    }
    // Read-only: SQLite makes no journal for a reader of a rollback-journal database, and
    // nothing here asks for write-ahead logging.
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > VERSION {
        return Err(newer(version));
    }
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    )?;
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let ours = if version == 0 {
        tables.is_empty()
    } else {
        TABLES.iter().all(|t| tables.iter().any(|have| have == t))
    };
    if ours { Ok(()) } else { Err(foreign()) }
}

/// What a file that is no SQLite database is told.
pub(super) const NOT_SQLITE: &str = "not a SQLite database, so not a oneshot job store; nothing \
     was written to it; move the file away or point oneshot at another one";

fn newer(version: i64) -> Refusal {
    Refusal::Foreign(format!(
        "written by a newer oneshot (schema version {version}; this one knows up to \
         {VERSION}); nothing was written to it; upgrade oneshot, or point it at another store"
    ))
}

fn foreign() -> Refusal {
    Refusal::Foreign(
        "a SQLite database, but not a oneshot job store (it has tables of its own); nothing \
         was written to it; point oneshot at another file"
            .to_string(),
    )
}

/// Opens `path` with the store's settings and makes sure it holds the current schema. Call
/// [`inspect`] first: this sets the journal mode before it can look.
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
        return Err(newer(version));
    }
    if version == 0 {
        let existing: i64 = tx.query_row(
            "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'",
            [],
            |r| r.get(0),
        )?;
        if existing > 0 {
            return Err(foreign());
        }
        tx.execute_batch(&tables())?;
    }
    if version < 2 {
        tx.execute_batch(DECISIONS)?;
    }
    if version < 3 {
        tx.execute_batch(RUNNERS)?;
    }
    if version < 4 {
        tx.execute_batch(SESSIONS)?;
    }
    if version < 5 {
        tx.execute_batch(TOKENS)?;
    }
    if version < 6 {
        tx.execute_batch(NOTIFICATIONS)?;
    }
    if version < 7 {
        tx.execute_batch(RUNNER_WAITING)?;
    }
    if version < VERSION {
        tx.execute_batch(&format!("PRAGMA user_version = {VERSION}"))?;
    }
    tx.commit()?;
    Ok(conn)
}
