//! A PostgreSQL failure, said for a person: what happened and what to do, the client's own
//! words (and the server's) kept as the source.

use crate::job::store::{JobStoreError, StoreCause};
use postgres::error::SqlState;
use std::path::Path;

/// Whether `e` is the database refusing a duplicate key.
pub(crate) fn is_unique_violation(e: &postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNIQUE_VIOLATION)
}

/// A PostgreSQL failure, said for a person: what, and what to do.
pub(super) fn db_error(path: &Path, e: &postgres::Error) -> JobStoreError {
    let code = e.code();
    let message = match code {
        Some(c)
            if *c == SqlState::INVALID_PASSWORD
                || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
        {
            "PostgreSQL refused the login; check the user and the password (in the URL, \
             PGPASSWORD or ~/.pgpass)"
                .to_string()
        }
        Some(c) if *c == SqlState::INVALID_CATALOG_NAME => {
            "the database does not exist; create it (`createdb NAME`), then `oneshot store \
             migrate --store URL`"
                .to_string()
        }
        Some(c) if *c == SqlState::UNDEFINED_TABLE => {
            "the store's tables are missing; run `oneshot store migrate --store URL`".to_string()
        }
        Some(c) if *c == SqlState::ADMIN_SHUTDOWN || *c == SqlState::CRASH_SHUTDOWN => {
            "PostgreSQL is shutting down or restarting; nothing was written; try again when \
             it is back (runners reconnect by themselves)"
                .to_string()
        }
        Some(c) if *c == SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT => {
            "this process paused inside a transaction longer than the server allows \
             (stopped or suspended?): the server ended the session and rolled the transaction \
             back, so nothing was written; the next call connects again"
                .to_string()
        }
        Some(c) if *c == SqlState::DISK_FULL => {
            "No space left on device: the database's disk is full; free some space".to_string()
        }
        Some(_) => "the database failed".to_string(),
        None if e.is_closed() => "the connection to PostgreSQL is closed; nothing was \
             written; the next call connects again"
            .to_string(),
        None => "cannot reach PostgreSQL; is it running, and does the URL name the right host \
             and port?"
            .to_string(),
    };
    JobStoreError::Db {
        path: path.to_path_buf(),
        message,
        source: Some(StoreCause::new(PgCause(said(e)))),
    }
}

/// The client's error with its causes, as one line: its own `Display` is only "db error" or
/// "error connecting to server", the server's words (or the OS's) being its source.
fn said(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// The client's error, kept as its words (its type is neither `Clone` nor shareable).
#[derive(Debug)]
struct PgCause(String);

impl std::fmt::Display for PgCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PgCause {}
