//! A runner's hold on a job: it **claims a step** (not a whole job) and gets a [`Lease`] — an
//! owner, an expiry it extends with heartbeats, and a fencing token. Every write a runner makes
//! names its lease, and the store refuses it once the token is stale (another runner
//! reclaimed the job after the lease expired, or a human canceled it), so a runner that
//! stalled and woke up can never overwrite newer work. A job in a resting state holds no
//! lease ([`super::rules`]).

use super::JobStoreError;
use crate::job::decision::JobDecision;
use crate::job::record::{ArtifactVersion, Job, Transition};
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

/// Claims, heartbeats and a runner's writes, each refused once its lease is stale. Every
/// method is one atomic operation.
pub trait Leases: Send + Sync {
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
    /// [`Leases::claim`] claims one: a runner with several free slots fills them in one
    /// call (on PostgreSQL one statement, one round trip). Empty when there is nothing to
    /// claim. By default, [`Leases::claim`] again and again.
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

    /// The live or expired lease on a job, if any.
    fn lease(&self, id: &str) -> Result<Option<Lease>, JobStoreError>;
}
