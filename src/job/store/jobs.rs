//! The jobs themselves: what a human's command, a dashboard and a runner's reads see — a job
//! created, found, listed, judged by a human's verb, and its records (transitions, artifact
//! versions, decisions, the audit trail) read back. A runner's writes, which all name a lease,
//! are [`super::Leases`].

use super::JobStoreError;
use crate::job::JobState;
use crate::job::decision::JobDecision;
use crate::job::record::{ArtifactVersion, AuditEntry, Job, Transition};
use crate::redact::Redacted;

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
    pub risk: crate::job::record::Risk,
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

/// The jobs and their records. Every method is one atomic operation.
///
/// Every write takes [`Redacted`] records — a type only a [`crate::redact::Redactor`] makes —
/// so no field of a job, a transition, an artifact or an audit entry reaches a store (nor,
/// through it, a dashboard or another machine) without passing the redactor, whichever
/// store implements this.
pub trait Jobs: Send + Sync {
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

    /// The store's time (ms since the epoch): what every lease is judged by ([`super::StoreClock`]).
    fn now_ms(&self) -> Result<u64, JobStoreError>;

    /// Writes a human's verb if the job is still in `expected` and no runner holds a lease
    /// that is live by the store's clock (unless `revoke`): [`JobStoreError::Conflict`] or
    /// [`JobStoreError::Busy`] otherwise, and nothing is written.
    fn decide(&self, decision: &Decision<'_>) -> Result<(), JobStoreError>;

    /// Appends an audit entry for a human act that moves no state — a workspace cleanup — to
    /// the trail of the job it names ([`JobStoreError::NotFound`] if there is none). Takes no
    /// lease and changes no row but the trail's (in PostgreSQL: one `INSERT … SELECT` that
    /// finds the job).
    fn record(&self, audit: &Redacted<AuditEntry>) -> Result<(), JobStoreError>;

    /// The job's decision records, oldest first.
    fn decisions(&self, id: &str) -> Result<Vec<JobDecision>, JobStoreError>;

    /// The job's transitions, oldest first.
    fn history(&self, id: &str) -> Result<Vec<Transition>, JobStoreError>;

    /// The job's artifact versions, oldest first.
    fn artifacts(&self, id: &str) -> Result<Vec<ArtifactVersion>, JobStoreError>;

    /// The audit trail of one job, or of all, oldest first.
    fn audit(&self, id: Option<&str>) -> Result<Vec<AuditEntry>, JobStoreError>;
}
