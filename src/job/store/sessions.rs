//! What a job's sessions leave in the job store, so that any machine can read them: each
//! session's activity log, record by record, and its journal (the state file). The runner
//! that runs a session ships both as the session runs (`crate::job::runner`'s shipper); `job
//! log`, `job show` and a runner that recovers the job on another machine read them back.
//!
//! Entries are numbered per job (1, 2, …) inside the transaction that holds the job's row,
//! like its transitions: a reader paging them by number never skips one.

use super::{JobStoreError, Lease};
use crate::redact::Redacted;
use serde::{Deserialize, Serialize};

/// One record of a session's activity log (`oneshot-log.json`), as its runner shipped it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEntry {
    /// Its number among the job's session entries, gap-free from 1; assigned by the store
    /// (0 in what a runner hands it).
    #[serde(default)]
    pub seq: u64,
    /// The session the record is of.
    pub session: String,
    /// The record, as the log file holds it (a blob's text is its own record, before the
    /// record that refers to it).
    pub record: serde_json::Value,
    /// The byte offset just past the record's line in the session's log file: where the
    /// next shipment of the session's log starts ([`Shipments::shipped_to`]), so a
    /// runner that ships again after a crash sends no line twice.
    pub log_end: u64,
}

/// A session's journal — its state file (`oneshot.json`) — as last shipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionJournal {
    /// The session.
    pub session: String,
    /// The runner that ran it (`<host>-<pid>-<nonce>-<n>`).
    pub runner: String,
    /// When it was shipped (ms since the epoch, the store's clock); assigned by the store.
    #[serde(default)]
    pub shipped_ms: u64,
    /// The state file's JSON.
    pub state: serde_json::Value,
}

impl SessionJournal {
    /// The session's state, read from the journal the way `oneshot status` reads a state file.
    pub fn session(&self) -> Result<crate::session::Session, String> {
        serde_json::from_value(self.state.clone())
            .map_err(|e| format!("session {}'s journal in the store: {e}", self.session))
    }
}

/// Shipping a job's sessions: a runner ships each session's log and journal as it runs
/// (writes naming its lease); `job log`, `job show`, a dashboard and a runner recovering the
/// job on another machine read them back.
pub trait Shipments: Send + Sync {
    /// Appends records of a session the step runs — its activity log, as written to disk —
    /// to the job's session entries, if `lease` is still current; each is numbered one past
    /// the job's last (its `seq` is assigned here). Returns the last number given (0 when
    /// `entries` is empty: nothing is written).
    fn add_session_entries(
        &self,
        lease: &Lease,
        entries: &[Redacted<SessionEntry>],
    ) -> Result<u64, JobStoreError>;

    /// Writes a session's journal (its state file as it is now), replacing the one shipped
    /// before, if `lease` is still current; `shipped_ms` is the store's now.
    fn put_journal(
        &self,
        lease: &Lease,
        journal: &Redacted<SessionJournal>,
    ) -> Result<(), JobStoreError>;

    /// The job's session entries numbered above `after`, oldest first, at most `limit`.
    fn session_entries(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<SessionEntry>, JobStoreError>;

    /// Where the shipment of session `session`'s log stands: the highest
    /// [`SessionEntry::log_end`] of its entries in job `id`, 0 when none was shipped.
    fn shipped_to(&self, id: &str, session: &str) -> Result<u64, JobStoreError>;

    /// The journals of the job's sessions, first shipped first.
    fn journals(&self, id: &str) -> Result<Vec<SessionJournal>, JobStoreError>;
}
