//! The PostgreSQL store's schema: versioned migrations, applied by `oneshot store migrate`
//! ([`migrate`]) and checked by every runner and command that opens the store ([`check`]),
//! which refuses an older schema with the command to run, and a newer one.
//!
//! Ordering guarantee (the events a reader pages): every record of a job — a transition, an
//! artifact version, a decision, an audit entry — carries a number of that job's (`seq`,
//! `version`, `job_seq`) assigned while the transaction holds the job's row lock, which it
//! keeps to its commit. Appends to one job are therefore serialized, and a number becomes
//! visible only with every number before it: a reader paging a job's records by its number
//! never skips one. (A PostgreSQL sequence would not do: its values are handed out at insert
//! and committed in any order.) A transition's number is the job row's `last_seq` counter,
//! bumped by the same `UPDATE` that writes the job and takes the lock (one statement for a
//! runner's advance: the `UPDATE`'s `RETURNING` gives the bumped value of the row as locked,
//! re-read after waiting for another writer, which a `MAX(seq)` read in the same statement
//! would not see); the other records' numbers are one past the highest, read after locking the
//! row (`SELECT … FOR UPDATE`). The audit table's global `seq` orders entries across jobs for
//! `job audit` but is not for paging.

use postgres::{Client, GenericClient};

/// The schema version this build writes and reads.
pub(crate) const VERSION: i64 = 8;

/// An arbitrary key for the advisory lock migrations take, so that two `store migrate` at once
/// apply each step once.
const MIGRATION_LOCK: i64 = 0x6f6e_6573_686f_7401;

/// The states a claim may pick, as the partial index and the claim query both spell it.
pub(crate) const CLAIMABLE: &str =
    "state IN ('PENDING', 'PROVISIONING', 'EXECUTING', 'RECOVERING', 'HARVESTING')";

/// Migration `n` (from 1) takes the schema from version `n - 1` to `n`.
fn migrations() -> Vec<String> {
    vec![
        // 1: the tables.
        format!(
            "CREATE TABLE jobs (
            id          text PRIMARY KEY,
            state       text NOT NULL,
            data        text NOT NULL,
            title       text NOT NULL,
            risk        text NOT NULL,
            steps       integer NOT NULL,
            created_ms  bigint NOT NULL,
            updated_ms  bigint NOT NULL,
            nickname    text,
            lease_owner text,
            lease_until bigint,
            fence       bigint NOT NULL DEFAULT 0
        );
        CREATE INDEX jobs_created ON jobs (created_ms, id);
        CREATE INDEX jobs_state ON jobs (state, created_ms);
        CREATE INDEX jobs_claimable ON jobs (updated_ms, id) WHERE {CLAIMABLE};
        CREATE TABLE transitions (
            job_id text NOT NULL REFERENCES jobs (id),
            seq    bigint NOT NULL,
            data   text NOT NULL,
            PRIMARY KEY (job_id, seq)
        );
        CREATE TABLE artifacts (
            job_id  text NOT NULL REFERENCES jobs (id),
            version integer NOT NULL,
            data    text NOT NULL,
            PRIMARY KEY (job_id, version)
        );
        CREATE TABLE decisions (
            job_id text NOT NULL REFERENCES jobs (id),
            seq    bigint NOT NULL,
            data   text NOT NULL,
            PRIMARY KEY (job_id, seq)
        );
        CREATE TABLE audit (
            seq     bigserial PRIMARY KEY,
            job_id  text NOT NULL,
            job_seq bigint NOT NULL,
            at_ms   bigint NOT NULL,
            actor   text NOT NULL,
            action  text NOT NULL,
            data    text NOT NULL,
            UNIQUE (job_id, job_seq)
        );
        CREATE TABLE runners (
            runner     text PRIMARY KEY,
            host       text NOT NULL,
            pid        bigint NOT NULL,
            started_ms bigint NOT NULL,
            beat_ms    bigint NOT NULL,
            ttl_ms     bigint NOT NULL
        );"
        ),
        // 2: what a job's sessions leave in the store, so that any machine can read them
        // (`crate::job::store::sessions`): their log records, numbered per job like the
        // transitions, and their journals, one per session.
        "CREATE TABLE session_entries (
            job_id  text NOT NULL REFERENCES jobs (id),
            seq     bigint NOT NULL,
            session text NOT NULL,
            data    text NOT NULL,
            log_end bigint NOT NULL,
            PRIMARY KEY (job_id, seq)
        );
        CREATE TABLE journals (
            job_id     text NOT NULL REFERENCES jobs (id),
            session    text NOT NULL,
            runner     text NOT NULL,
            first_ms   bigint NOT NULL,
            shipped_ms bigint NOT NULL,
            data       text NOT NULL,
            PRIMARY KEY (job_id, session)
        );"
        .to_string(),
        // 3: the number of each job's last transition, kept on its row, so that a runner's
        // advance — the job's columns and its transition — is one statement. Counted from
        // the histories there are (and `IF NOT EXISTS`: a store whose version was taken back
        // by hand may still have the column; it is counted afresh all the same).
        "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS last_seq bigint NOT NULL DEFAULT 0;
         UPDATE jobs SET last_seq =
             COALESCE((SELECT MAX(seq) FROM transitions WHERE job_id = jobs.id), 0);"
            .to_string(),
        // 4: the dashboard's access control (`crate::job::store::tokens`): tokens (only the
        // hash of each secret), one-time sign-in codes and browser sessions, in the store so
        // that every `oneshot serve` on it agrees on them.
        "CREATE TABLE tokens (
            name       text PRIMARY KEY,
            hash       text NOT NULL UNIQUE,
            created_ms bigint NOT NULL,
            revoked_ms bigint,
            data       text NOT NULL
        );
        CREATE TABLE login_codes (
            hash       text PRIMARY KEY,
            token      text NOT NULL REFERENCES tokens (name),
            expires_ms bigint NOT NULL
        );
        CREATE TABLE web_sessions (
            hash       text PRIMARY KEY,
            token      text NOT NULL REFERENCES tokens (name),
            created_ms bigint NOT NULL,
            expires_ms bigint NOT NULL
        );
        CREATE INDEX login_codes_token ON login_codes (token);
        CREATE INDEX web_sessions_token ON web_sessions (token);"
            .to_string(),
        // 5: the notifications of needs-a-human events (`crate::job::store::notifications`):
        // one row per (job, kind, cause), inserted if absent by the one runner that sends it.
        "CREATE TABLE notifications (
            job_id     text NOT NULL REFERENCES jobs (id),
            kind       text NOT NULL,
            cause      text NOT NULL,
            sender     text NOT NULL,
            status     text NOT NULL,
            attempts   bigint NOT NULL,
            error      text,
            created_ms bigint NOT NULL,
            updated_ms bigint NOT NULL,
            data       text NOT NULL,
            PRIMARY KEY (job_id, kind, cause)
        );
        CREATE INDEX notifications_created ON notifications (created_ms);"
            .to_string(),
        // 6: a transition's row names its job without a foreign key. The only insert of a
        // transition takes its job id and number from the job row its own statement just
        // updated (`RETURNING`), and no job is ever deleted, so the key could never fail —
        // while its check, a query a transition, was a sixth of the server's work a step
        // (docs/performance.md, "PostgreSQL store").
        "ALTER TABLE transitions DROP CONSTRAINT IF EXISTS transitions_job_id_fkey;".to_string(),
        // 7: who waits for every change (`super::watchers`): each step's writes announce
        // themselves only while a row here has not expired.
        "CREATE TABLE watchers (
            id       text PRIMARY KEY,
            until_ms bigint NOT NULL
        );"
        .to_string(),
        // 8: what a runner waits for before it claims more (`RunnerWait`, as JSON), with its
        // heartbeat, so that every machine can say why pending jobs are not started.
        "ALTER TABLE runners ADD COLUMN IF NOT EXISTS waiting text;".to_string(),
    ]
}

/// Where the schema of a database stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// No oneshot tables at all: a new store.
    Empty,
    /// Tables of another program, and no oneshot version table.
    Foreign,
    /// This version.
    At(i64),
}

/// What the database holds.
pub(crate) fn found(client: &mut impl GenericClient) -> Result<Found, postgres::Error> {
    let has_meta: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.tables
                 WHERE table_schema = current_schema() AND table_name = 'oneshot_schema')",
            &[],
        )?
        .get(0);
    if has_meta {
        let v: i64 = client
            .query_one("SELECT COALESCE(MAX(version), 0) FROM oneshot_schema", &[])?
            .get(0);
        return Ok(Found::At(v));
    }
    let tables: i64 = client
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
            &[],
        )?
        .get(0);
    Ok(if tables == 0 {
        Found::Empty
    } else {
        Found::Foreign
    })
}

/// Why a database cannot be used as it is.
pub(crate) fn refusal(found: Found) -> Option<String> {
    match found {
        Found::At(v) if v == VERSION => None,
        Found::Empty => Some(
            "the database holds no oneshot job store yet; create its tables with `oneshot \
             store migrate --store URL` (once, from any machine)"
                .into(),
        ),
        Found::Foreign => Some(
            "the database holds tables of another program and no oneshot schema; nothing was \
             written; give oneshot a database (or a schema, `?options=-csearch_path=NAME`) of \
             its own"
                .into(),
        ),
        Found::At(v) if v < VERSION => Some(format!(
            "the store's schema is version {v}, older than this oneshot's {VERSION}; nothing \
             was written; run `oneshot store migrate --store URL` (every runner of the older \
             version should be stopped first)"
        )),
        Found::At(v) => Some(format!(
            "the store's schema is version {v}, written by a newer oneshot (this one knows up \
             to {VERSION}); nothing was written; upgrade oneshot"
        )),
    }
}

/// What [`migrate`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// The version found.
    pub from: i64,
    /// The version now.
    pub to: i64,
}

/// Brings the database's schema to [`VERSION`], in one transaction, under an advisory lock;
/// refuses a database of another program or of a newer oneshot.
pub(crate) fn migrate(client: &mut Client) -> Result<Result<Migrated, String>, postgres::Error> {
    migrate_to(client, VERSION)
}

/// [`migrate`], stopping at version `to` (tests of an upgrade start from an older schema).
pub(crate) fn migrate_to(
    client: &mut Client,
    to: i64,
) -> Result<Result<Migrated, String>, postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    let from = match found(&mut tx)? {
        Found::Foreign => return Ok(Err(refusal(Found::Foreign).unwrap_or_default())),
        Found::At(v) if v > VERSION => return Ok(Err(refusal(Found::At(v)).unwrap_or_default())),
        Found::At(v) => v,
        Found::Empty => {
            tx.batch_execute(
                "CREATE TABLE oneshot_schema (
                    version    bigint PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                 );",
            )?;
            0
        }
    };
    for (i, step) in migrations().iter().enumerate() {
        let version = i as i64 + 1;
        if version <= from || version > to {
            continue;
        }
        tx.batch_execute(step)?;
        tx.execute(
            "INSERT INTO oneshot_schema (version) VALUES ($1)",
            &[&version],
        )?;
    }
    tx.commit()?;
    Ok(Ok(Migrated {
        from,
        to: to.max(from),
    }))
}
