//! Where jobs live: the [`JobStore`] trait, and its embedded default [`SqliteStore`].
//!
//! The trait is shaped for a store shared by many runners: a runner **claims a step** (not a
//! whole job) and gets a [`Lease`] — an owner, an expiry it extends with heartbeats, and a
//! fencing token. Every write a runner makes names its lease, and the store refuses it once
//! the token is stale (another runner reclaimed the job after the lease expired, or a human
//! canceled it), so a runner that stalled and woke up can never overwrite newer work. A job in
//! a resting state holds no lease. A PostgreSQL store follows the same contract: `claim` is a
//! `SELECT … FOR UPDATE SKIP LOCKED` plus an `UPDATE` of the lease columns, the fencing token a
//! column incremented by each claim, every runner write an `UPDATE … WHERE fence = $token`.

mod clock;
mod error;
mod location;
mod notifications;
mod open;
mod postgres;
pub(crate) mod rows;
mod runners;
mod sessions;
mod sqlite;
#[cfg(test)]
mod tests;
mod tokens;
pub(crate) mod work;

pub use clock::{ManualClock, StoreClock, SystemClock};
pub use error::{JobStoreError, StoreCause};
pub use location::{PgUrl, StoreLocation};
pub use notifications::{NotificationRecord, NotifyOutcome, NotifyStatus};
pub use open::open;
pub use postgres::{Migrated, PostgresStore};
pub use runners::{RunnerBeat, RunnerRow, RunnerWait, pending_wait};
pub use sessions::{SessionEntry, SessionJournal};
pub use sqlite::SqliteStore;
pub use tokens::{SecretHash, TokenRecord};

use super::JobState;
use super::decision::JobDecision;
use super::record::{ArtifactVersion, AuditEntry, Job, Transition};
use crate::redact::Redacted;

/// A runner's hold on a job for one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The job.
    pub job: String,
    /// The runner holding it (`<host>-<pid>-<nonce>-<n>`, see [`crate::job::runner::runner_id`]).
    pub runner: String,
    /// The fencing token: increases with every claim of the job (and with every human verb
    /// that takes the job away from a runner).
    pub fence: u64,
    /// When it expires unless renewed (ms since the epoch).
    pub until_ms: u64,
}

impl Lease {
    /// Whether the lease is live at `now_ms` (the store's clock), as a claim judges it: it
    /// expires only once `until < now`, so at its last millisecond it still holds. Every
    /// reader that says *live* or *expired* asks this, so none disagrees with a claim.
    pub fn live_at(&self, now_ms: u64) -> bool {
        self.until_ms >= now_ms
    }
}

/// A claimed step: the job as it was when claimed, and the lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The job.
    pub job: Job,
    /// The lease on it.
    pub lease: Lease,
    /// The job was in a transient state under an expired lease: its runner died mid-step and
    /// this claim is to recover it.
    pub reclaimed: bool,
}

/// A row of `job list`: enough to show, without the whole job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSummary {
    /// The id.
    pub id: String,
    /// The state.
    pub state: JobState,
    /// The task's first line.
    pub title: String,
    /// The risk level.
    pub risk: super::record::Risk,
    /// Steps taken.
    pub steps: u32,
    /// Created (ms since the epoch).
    pub created_ms: u64,
    /// Last changed (ms since the epoch).
    pub updated_ms: u64,
    /// The runner holding a live lease on it.
    pub runner: Option<String>,
    /// The job's nickname (`job create --namer`).
    pub nickname: Option<String>,
}

/// Which jobs `list` returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only jobs in this state.
    pub state: Option<JobState>,
}

/// A human's verb, written at once with the audit entry that records it — all of it redacted.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision<'a> {
    /// The job as the verb leaves it.
    pub job: &'a Redacted<Job>,
    /// The state the verb was judged against: the write is refused if the job moved since.
    pub expected: JobState,
    /// The move; `None` for a decision that records without moving (a land).
    pub transition: Option<&'a Redacted<Transition>>,
    /// The audit entry, at the verb's time (whether a lease is live is the store's to judge).
    pub audit: &'a Redacted<AuditEntry>,
    /// The verb may take the job from a runner holding a live lease (cancel): the lease is
    /// revoked and the runner's next write or heartbeat fails.
    pub revoke: bool,
}

/// The store of jobs. Implementations are shared by threads and processes; every method is
/// one atomic operation.
///
/// Every write takes [`Redacted`] records — a type only a [`crate::redact::Redactor`] makes —
/// so no field of a job, a transition, an artifact or an audit entry reaches a store (nor,
/// through it, a dashboard or another machine) without passing the redactor, whichever
/// store implements this.
pub trait JobStore: Send + Sync {
    /// Adds a new job, with the audit entry of its creation.
    fn create(
        &self,
        job: &Redacted<Job>,
        audit: &Redacted<AuditEntry>,
    ) -> Result<(), JobStoreError>;

    /// The job with this id or unique id prefix. A job written with a legacy state is returned
    /// migrated, the migrated state written back and the migration recorded in the audit
    /// trail (actor `oneshot`, action `migrate`).
    fn get(&self, id: &str) -> Result<Job, JobStoreError>;

    /// Jobs, oldest first.
    fn list(&self, filter: &ListFilter) -> Result<Vec<JobSummary>, JobStoreError>;

    /// The store's time (ms since the epoch): what every lease is judged by ([`StoreClock`]).
    fn now_ms(&self) -> Result<u64, JobStoreError>;

    /// Claims the next step for `runner`: of job `only` when given, else of the job waiting
    /// longest; the lease lasts `ttl_ms` from the store's now. Claimable: a PENDING job, or a
    /// job in a transient state whose lease expired by the store's clock — unless that lease
    /// is `runner`'s own: a runner never claims back a step it holds. `None` when there is
    /// nothing to claim (or `only` is not claimable); [`JobStoreError::NotFound`] (or
    /// `Ambiguous`) when `only` names no job (or several).
    fn claim(
        &self,
        runner: &str,
        only: Option<&str>,
        ttl_ms: u64,
    ) -> Result<Option<Claim>, JobStoreError>;

    /// Claims up to `max` steps for `runner` at once, the jobs waiting longest first, as
    /// [`JobStore::claim`] claims one: a runner with several free slots fills them in one
    /// call (on PostgreSQL one statement, one round trip). Empty when there is nothing to
    /// claim. By default, [`JobStore::claim`] again and again.
    fn claim_up_to(
        &self,
        runner: &str,
        ttl_ms: u64,
        max: usize,
    ) -> Result<Vec<Claim>, JobStoreError> {
        let mut claims = Vec::new();
        while claims.len() < max {
            match self.claim(runner, None, ttl_ms)? {
                Some(c) => claims.push(c),
                None => break,
            }
        }
        Ok(claims)
    }

    /// Extends `lease` to `ttl_ms` from the store's now; [`JobStoreError::Fenced`] when it was
    /// lost.
    fn heartbeat(&self, lease: &Lease, ttl_ms: u64) -> Result<Lease, JobStoreError>;

    /// Hands `lease` back before its job rests (the runner is shutting down): the job stays as
    /// it was last written, and any runner — another process, or this one's next run — may
    /// claim it at once instead of waiting for the lease to expire. A lease that is no longer
    /// current is left alone ([`JobStoreError::Fenced`]).
    fn release(&self, lease: &Lease) -> Result<(), JobStoreError>;

    /// Writes `job` as the runner moved it, with the transition that moved it, if `lease` is
    /// still current; a resting state releases the lease. [`JobStoreError::Fenced`] otherwise,
    /// and nothing is written.
    fn advance(
        &self,
        lease: &Lease,
        job: &Redacted<Job>,
        transition: Option<&Redacted<Transition>>,
    ) -> Result<(), JobStoreError>;

    /// Appends an artifact version (its `version` is assigned here and returned), if `lease`
    /// is still current.
    fn add_artifact(
        &self,
        lease: &Lease,
        artifact: &Redacted<ArtifactVersion>,
    ) -> Result<u32, JobStoreError>;

    /// Appends a judgement of the job's policy (its `seq`, 1, 2, … per job, is assigned here
    /// and returned), if `lease` is still current.
    fn add_decision(
        &self,
        lease: &Lease,
        decision: &Redacted<JobDecision>,
    ) -> Result<u64, JobStoreError>;

    /// The job's decision records, oldest first.
    fn decisions(&self, id: &str) -> Result<Vec<JobDecision>, JobStoreError>;

    /// Writes a human's verb if the job is still in `expected` and no runner holds a lease
    /// that is live by the store's clock (unless `revoke`): [`JobStoreError::Conflict`] or
    /// [`JobStoreError::Busy`] otherwise, and nothing is written.
    fn decide(&self, decision: &Decision<'_>) -> Result<(), JobStoreError>;

    /// Appends an audit entry for a human act that moves no state — a workspace cleanup — to
    /// the trail of the job it names ([`JobStoreError::NotFound`] if there is none). Takes no
    /// lease and changes no row but the trail's (in PostgreSQL: one `INSERT … SELECT` that
    /// finds the job).
    fn record(&self, audit: &Redacted<AuditEntry>) -> Result<(), JobStoreError>;

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

    /// The job's transitions, oldest first.
    fn history(&self, id: &str) -> Result<Vec<Transition>, JobStoreError>;

    /// The job's artifact versions, oldest first.
    fn artifacts(&self, id: &str) -> Result<Vec<ArtifactVersion>, JobStoreError>;

    /// The audit trail of one job, or of all, oldest first.
    fn audit(&self, id: Option<&str>) -> Result<Vec<AuditEntry>, JobStoreError>;

    /// The live or expired lease on a job, if any.
    fn lease(&self, id: &str) -> Result<Option<Lease>, JobStoreError>;

    /// Says runner `beat.runner` is alive now (by the store's clock): its row is made, or its
    /// heartbeat moved on.
    fn runner_beat(&self, beat: &RunnerBeat) -> Result<(), JobStoreError>;

    /// Runner `runner` stopped cleanly: its row goes (a runner that died leaves it, stale).
    fn runner_gone(&self, runner: &str) -> Result<(), JobStoreError>;

    /// Every runner that said it was alive and did not stop cleanly, with the leases each holds,
    /// oldest first.
    fn runners(&self) -> Result<Vec<RunnerRow>, JobStoreError>;

    /// Adds a token: its record (`created_ms` is the store's now, `revoked_ms` none) and the
    /// hash of its secret. [`JobStoreError::TokenExists`] when the name is taken, revoked or
    /// not. Returns the record as stored.
    fn add_token(
        &self,
        token: &Redacted<TokenRecord>,
        hash: &SecretHash,
    ) -> Result<TokenRecord, JobStoreError>;

    /// Every token, revoked ones too, oldest first.
    fn tokens(&self) -> Result<Vec<TokenRecord>, JobStoreError>;

    /// Revokes token `name` at the store's now, and ends its sign-in codes and browser
    /// sessions in the same write. Revoking a revoked token changes nothing. Returns the
    /// record; [`JobStoreError::NoToken`] when no token has the name.
    fn revoke_token(&self, name: &str) -> Result<TokenRecord, JobStoreError>;

    /// The token that is not revoked whose secret hashes to `hash`, with the hash as stored
    /// (for the caller's constant-time comparison).
    fn token_by_hash(
        &self,
        hash: &SecretHash,
    ) -> Result<Option<(TokenRecord, SecretHash)>, JobStoreError>;

    /// Keeps a one-time sign-in code (its hash) for token `name`, valid `ttl_ms` from the
    /// store's now; returns when it expires. [`JobStoreError::NoToken`] when the token does
    /// not exist or is revoked.
    fn add_login_code(
        &self,
        name: &str,
        code: &SecretHash,
        ttl_ms: u64,
    ) -> Result<u64, JobStoreError>;

    /// Redeems a sign-in code, once: in one write, the code is removed and — when it had not
    /// expired by the store's clock and its token is not revoked — a browser session `session`
    /// of that token is kept for `ttl_ms` from the store's now. The token, or `None` when the
    /// code is unknown, used already, expired, or its token revoked.
    fn redeem_login_code(
        &self,
        code: &SecretHash,
        session: &SecretHash,
        ttl_ms: u64,
    ) -> Result<Option<TokenRecord>, JobStoreError>;

    /// The token of a browser session that has not expired by the store's clock and whose
    /// token is not revoked.
    fn web_session(&self, session: &SecretHash) -> Result<Option<TokenRecord>, JobStoreError>;

    /// Ends a browser session (signing out); one that is not there is no error.
    fn end_web_session(&self, session: &SecretHash) -> Result<(), JobStoreError>;

    /// Claims a notification to send: inserts its record (status [`NotifyStatus::Sending`],
    /// `created_ms` and `updated_ms` the store's now) unless one with the same (job, kind,
    /// cause) is there. Whether this insert took effect: only then may the caller send it, so
    /// that an event is sent once however many processes see it.
    fn claim_notification(
        &self,
        record: &Redacted<NotificationRecord>,
    ) -> Result<bool, JobStoreError>;

    /// Writes how a claimed notification's delivery ended (`updated_ms` the store's now);
    /// [`JobStoreError::NotFound`] (naming the job) when no such notification was claimed.
    fn notification_outcome(&self, outcome: &Redacted<NotifyOutcome>) -> Result<(), JobStoreError>;

    /// The notifications of one job, or of all, oldest first.
    fn notifications(&self, id: Option<&str>) -> Result<Vec<NotificationRecord>, JobStoreError>;

    /// Blocks until there may be new work — a job created, a verb given, a lease handed back,
    /// by this process (SQLite) or by any (a store that can be told, as PostgreSQL's `LISTEN`)
    /// — or until `timeout` passes, which is the slow poll that finds other processes' work;
    /// whether it was woken. A hint only: the caller claims to find out. `since` is
    /// [`JobStore::work_seen`] taken before the caller last looked, so a wake-up in between is
    /// not missed.
    fn wait_for_work(&self, since: u64, timeout: std::time::Duration) -> bool {
        work::wait(since, timeout)
    }

    /// Where the work signal stands now, for [`JobStore::wait_for_work`].
    fn work_seen(&self) -> u64 {
        work::seen()
    }

    /// Blocks until the store may have changed since `since` ([`JobStore::change_seen`]) —
    /// a job created or moved, a session's records shipped, a verb, an artifact, a lease
    /// handed back — by any process this store can hear: SQLite watches its file, PostgreSQL
    /// `LISTEN`s; this default hears this process only. Or until `timeout`; whether it was
    /// woken. A hint, never the news itself: the caller reads the store to find out, so a
    /// spurious wake-up costs a read and a missed one is impossible once listening started.
    fn wait_for_change(&self, since: u64, timeout: std::time::Duration) -> bool {
        work::CHANGE.wait(since, timeout)
    }

    /// As [`JobStore::wait_for_change`], for a waiter that needs only what people and other
    /// processes do to jobs — a job created, a verb, an audit entry (a message said to a
    /// job), an artifact, a decision, a lease handed back — and not each step's progress (its
    /// transitions, its session's records and journal): PostgreSQL announces those only while
    /// some process waits in [`JobStore::wait_for_change`], which costs every runner's every
    /// step a `NOTIFY`. It may still wake for progress. By default, `wait_for_change`.
    fn wait_for_news(&self, since: u64, timeout: std::time::Duration) -> bool {
        self.wait_for_change(since, timeout)
    }

    /// Where the change signal stands now, for [`JobStore::wait_for_change`]. The first call
    /// starts listening, so take it before the first read that the waits are to follow.
    fn change_seen(&self) -> u64 {
        work::CHANGE.seen()
    }
}
