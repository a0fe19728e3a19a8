//! The shipper: what a session leaves on this machine's disk — its activity log, record by
//! record, and its journal (the state file) — copied into the job store as the session runs,
//! under the step's lease, so that `job log`, `job show` and a runner on another machine read
//! it there (`crate::job::store::sessions`).
//!
//! Each time the session's log is flushed to its file while the session runs (the engine says
//! so: output reaches the file within about 70 ms, so a dashboard shows a line soon after), at
//! most every [`EVERY`] and at least every [`QUIET`], and once more when it ends, the log's complete
//! lines past what the store already holds go in as one write, each record redacted again by
//! the job's redactor (the log on disk is redacted already; the store's writes take nothing
//! unredacted), and the journal goes in when the file changed. Where a shipment starts is the
//! store's to say ([`crate::job::store::Shipments::shipped_to`]), so a runner that ships again after a crash —
//! or resumes the session — sends no line twice.

use crate::job::store::{JobStore, JobStoreError, Lease, SessionEntry, SessionJournal};
use crate::redact::Redactor;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The least time between two shipments of a running session: a burst of flushes is one
/// store write.
pub(super) const EVERY: Duration = Duration::from_millis(20);

/// The most time between two looks at a running session's files, told of no flush (its
/// journal changes without a log flush).
pub(super) const QUIET: Duration = Duration::from_secs(1);

/// Why a shipment did not go in.
#[derive(Debug, thiserror::Error)]
pub(super) enum ShipError {
    /// The store refused it (a stale lease: the step is lost; the heartbeat says so too).
    #[error(transparent)]
    Store(#[from] JobStoreError),
    /// The session's files could not be read.
    #[error("{0}")]
    Read(String),
}

/// Ships one session's records into the job store.
pub(super) struct Shipper {
    store: Arc<dyn JobStore>,
    lease: Lease,
    redactor: Arc<Redactor>,
    runner: String,
    session: String,
    log: PathBuf,
    state: PathBuf,
    /// Where the next shipment of the log starts; `None` until the store was asked.
    offset: Option<u64>,
    /// The journal file as last shipped (modified time, length).
    journal: Option<(SystemTime, u64)>,
}

impl Shipper {
    /// A shipper of session `session` (in `state_dir`) under `lease`.
    pub(super) fn new(
        store: Arc<dyn JobStore>,
        lease: Lease,
        redactor: Arc<Redactor>,
        runner: &str,
        state_dir: &std::path::Path,
        session: &str,
    ) -> Shipper {
        let dir = state_dir.join("sessions").join(session);
        Shipper {
            store,
            lease,
            redactor,
            runner: runner.to_string(),
            session: session.to_string(),
            log: dir.join(crate::store::LOG_FILE),
            state: dir.join("oneshot.json"),
            offset: None,
            journal: None,
        }
    }

    /// Ships what is new since the last shipment: blocking (file reads and a store write).
    pub(super) fn ship(&mut self) -> Result<(), ShipError> {
        let offset = match self.offset {
            Some(o) => o,
            None => self.store.shipped_to(&self.lease.job, &self.session)?,
        };
        self.offset = Some(offset);
        match crate::store::read_from(&self.log, offset) {
            Ok(chunk) if !chunk.records.is_empty() => {
                let mut entries = Vec::with_capacity(chunk.records.len());
                for record in chunk.records {
                    let entry = SessionEntry {
                        seq: 0,
                        session: self.session.clone(),
                        record,
                        // One write per chunk: every entry of it ends where the chunk does.
                        log_end: chunk.offset,
                    };
                    entries.push(
                        self.redactor
                            .seal(&entry)
                            .map_err(|e| ShipError::Read(e.to_string()))?,
                    );
                }
                self.store.add_session_entries(&self.lease, &entries)?;
                self.offset = Some(chunk.offset);
            }
            Ok(_) => {}
            // Not written yet: nothing to ship.
            Err(crate::store::LogError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ShipError::Read(crate::error::chain(&e))),
        }
        self.ship_journal()
    }

    fn ship_journal(&mut self) -> Result<(), ShipError> {
        let Ok(meta) = std::fs::metadata(&self.state) else {
            return Ok(());
        };
        let seen = (
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            meta.len(),
        );
        if self.journal == Some(seen) {
            return Ok(());
        }
        let bytes = std::fs::read(&self.state)
            .map_err(|e| ShipError::Read(format!("read {}: {e}", self.state.display())))?;
        // The state file is replaced whole (write, then rename): what is read is one version.
        let state: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| ShipError::Read(format!("{}: {e}", self.state.display())))?;
        let journal = SessionJournal {
            session: self.session.clone(),
            runner: self.runner.clone(),
            shipped_ms: 0,
            state,
        };
        let sealed = self
            .redactor
            .seal(&journal)
            .map_err(|e| ShipError::Read(e.to_string()))?;
        self.store.put_journal(&self.lease, &sealed)?;
        self.journal = Some(seen);
        Ok(())
    }

    /// Ships on the blocking pool, handing the shipper back with what came of it.
    async fn ship_off_loop(mut self) -> (Shipper, Result<(), ShipError>) {
        match tokio::task::spawn_blocking(move || {
            let r = self.ship();
            (self, r)
        })
        .await
        {
            Ok(done) => done,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}

/// A shipment on the blocking pool, giving the shipper back.
type Flight = std::pin::Pin<Box<dyn Future<Output = (Shipper, Result<(), ShipError>)>>>;

/// Runs `work` (a session's run) while shipping its records as `flushes` says its log grew
/// (at most every [`EVERY`], at least every [`QUIET`]), then ships once more after it ends, so
/// the store holds the whole log before the job moves on. A refused shipment stops the
/// shipping (the step is lost, and the heartbeat ends it); a failed one is said and tried
/// again at the next wake-up.
pub(super) async fn alongside<T>(
    work: impl Future<Output = T>,
    shipper: Shipper,
    flushes: &tokio::sync::Notify,
) -> T {
    let mut work = std::pin::pin!(work);
    let mut idle = Some(shipper);
    let mut flight: Option<Flight> = None;
    let mut refused = false;
    // When the next shipment may start, at the earliest.
    let mut next = tokio::time::Instant::now();
    let out = loop {
        tokio::select! {
            out = &mut work => break out,
            () = async {
                tokio::select! {
                    () = flushes.notified() => tokio::time::sleep_until(next).await,
                    () = tokio::time::sleep(QUIET) => {}
                }
            }, if flight.is_none() && !refused => {
                if let Some(s) = idle.take() {
                    next = tokio::time::Instant::now() + EVERY;
                    flight = Some(Box::pin(s.ship_off_loop()));
                }
            }
            (s, r) = async { flight.as_mut().expect("guarded").await }, if flight.is_some() => {
                flight = None;
                refused = said(&s, r);
                idle = Some(s);
            }
        }
    };
    if let Some(f) = flight.take() {
        let (s, r) = f.await;
        refused = said(&s, r);
        idle = Some(s);
    }
    if let (Some(s), false) = (idle, refused) {
        let (s, r) = s.ship_off_loop().await;
        said(&s, r);
    }
    out
}

/// Ships once, now: what a session that ended before its runner could ship it left.
pub(super) async fn once(shipper: Shipper) {
    let (s, r) = shipper.ship_off_loop().await;
    said(&s, r);
}

/// Says a failed shipment; whether the store refused it for good (a lost lease).
fn said(s: &Shipper, r: Result<(), ShipError>) -> bool {
    match r {
        Ok(()) => false,
        Err(ShipError::Store(
            e @ (JobStoreError::Fenced { .. } | JobStoreError::NotFound { .. }),
        )) => {
            tracing::warn!(job = %s.lease.job, session = %s.session, "stopped shipping the session's records: {e}");
            true
        }
        Err(e) => {
            tracing::warn!(job = %s.lease.job, session = %s.session, "could not ship the session's records (tried again): {e}");
            false
        }
    }
}
