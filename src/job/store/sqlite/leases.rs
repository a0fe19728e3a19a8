//! [`Leases`] for [`SqliteStore`]: a claim, a heartbeat and every write that names a lease,
//! each one immediate transaction that checks the lease's fencing token first.

use super::schema::CLAIMABLE;
use super::{SqliteStore, int, uint};
use crate::job::decision::JobDecision;
use crate::job::record::{ArtifactVersion, Job, Transition};
use crate::job::store::rules::{self, fenced};
use crate::job::store::{Claim, JobStoreError, Lease, Leases, rows};
use crate::redact::Redacted;
use rusqlite::{OptionalExtension, params};

impl Leases for SqliteStore {
    fn claim(
        &self,
        runner: &str,
        only: Option<&str>,
        ttl_ms: u64,
    ) -> Result<Option<Claim>, JobStoreError> {
        let now_ms = self.clock.now_ms();
        let only = match only {
            Some(id) => Some(self.resolve(&self.conn(), id)?),
            None => None,
        };
        self.write(|tx| {
            // `CLAIMABLE` spelled as in the partial index, so the scan walks it in updated_ms
            // order and stops at the first job whose lease is free. A lease of this runner's
            // own is never free to it, expired or not: it still drives the step (its
            // heartbeat is late) or gave the job up for the next runner.
            let sql = format!(
                "SELECT id, state FROM jobs INDEXED BY jobs_claimable
                 WHERE {CLAIMABLE}
                   AND (lease_owner IS NULL OR (lease_until < ?1 AND lease_owner <> ?3))
                   AND (?2 IS NULL OR id = ?2)
                 ORDER BY updated_ms, id LIMIT 1"
            );
            let picked: Option<(String, String)> = tx
                .query_row(&sql, params![int(now_ms), only, runner], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(|e| self.db(e))?;
            let Some((id, state)) = picked else {
                return Ok(None);
            };
            let until = now_ms.saturating_add(ttl_ms);
            let fence: i64 = tx
                .query_row(
                    "UPDATE jobs SET lease_owner = ?2, lease_until = ?3, fence = fence + 1
                     WHERE id = ?1 RETURNING fence",
                    params![id, runner, int(until)],
                    |r| r.get(0),
                )
                .map_err(|e| self.db(e))?;
            let (job, _) = self.read(tx, &id)?;
            Ok(Some(Claim {
                job,
                reclaimed: rules::reclaimed(&state),
                lease: Lease {
                    job: id,
                    runner: runner.to_string(),
                    fence: uint(fence),
                    until_ms: until,
                },
            }))
        })
    }

    fn heartbeat(&self, lease: &Lease, ttl_ms: u64) -> Result<Lease, JobStoreError> {
        let until = self.clock.now_ms().saturating_add(ttl_ms);
        self.write(|tx| {
            let n = tx
                .execute(
                    "UPDATE jobs SET lease_until = ?4
                     WHERE id = ?1 AND fence = ?2 AND lease_owner = ?3",
                    params![lease.job, int(lease.fence), lease.runner, int(until)],
                )
                .map_err(|e| self.db(e))?;
            if n == 0 {
                return Err(fenced(lease));
            }
            Ok(Lease {
                until_ms: until,
                ..lease.clone()
            })
        })
    }

    fn release(&self, lease: &Lease) -> Result<(), JobStoreError> {
        self.write(|tx| {
            // No owner: claimable by anyone now. The fence stays; the next claim raises it.
            let n = tx
                .execute(
                    "UPDATE jobs SET lease_owner = NULL, lease_until = NULL
                     WHERE id = ?1 AND fence = ?2 AND lease_owner = ?3",
                    params![lease.job, int(lease.fence), lease.runner],
                )
                .map_err(|e| self.db(e))?;
            if n == 0 {
                return Err(fenced(lease));
            }
            Ok(())
        })
        .inspect(|()| crate::job::store::work::raise())
    }

    fn advance(
        &self,
        lease: &Lease,
        job: &Redacted<Job>,
        transition: Option<&Redacted<Transition>>,
    ) -> Result<(), JobStoreError> {
        let (job, transition) = (job.get(), transition.map(Redacted::get));
        let save = rules::save(lease, job)?;
        self.write(|tx| {
            self.holds(tx, lease)?;
            self.update_job(tx, job)?;
            if save.releases {
                tx.execute(
                    "UPDATE jobs SET lease_owner = NULL, lease_until = NULL WHERE id = ?1",
                    [&job.id],
                )
                .map_err(|e| self.db(e))?;
            }
            if let Some(t) = transition {
                self.push_transition(tx, &job.id, t)?;
            }
            Ok(())
        })
        .inspect(|()| {
            if save.wakes {
                crate::job::store::work::raise();
            }
        })
    }

    fn add_artifact(
        &self,
        lease: &Lease,
        artifact: &Redacted<ArtifactVersion>,
    ) -> Result<u32, JobStoreError> {
        let artifact = artifact.get();
        self.write(|tx| {
            self.holds(tx, lease)?;
            let next = self.next_number(tx, "artifacts", "version", &lease.job)?;
            let version = u32::try_from(next).unwrap_or(u32::MAX);
            let stored = ArtifactVersion {
                version,
                ..artifact.clone()
            };
            // A plain INSERT: the UNIQUE (job_id, version) makes an overwrite impossible.
            tx.execute(
                "INSERT INTO artifacts (job_id, version, data) VALUES (?1, ?2, ?3)",
                params![lease.job, version, rows::to_json(&lease.job, &stored)?],
            )
            .map_err(|e| self.db(e))?;
            Ok(version)
        })
    }

    fn add_decision(
        &self,
        lease: &Lease,
        decision: &Redacted<JobDecision>,
    ) -> Result<u64, JobStoreError> {
        let decision = decision.get();
        self.write(|tx| {
            self.holds(tx, lease)?;
            let seq = self.next_number(tx, "decisions", "seq", &lease.job)?;
            let stored = JobDecision {
                seq,
                ..decision.clone()
            };
            tx.execute(
                "INSERT INTO decisions (job_id, seq, data) VALUES (?1, ?2, ?3)",
                params![lease.job, int(seq), rows::to_json(&lease.job, &stored)?],
            )
            .map_err(|e| self.db(e))?;
            Ok(seq)
        })
    }

    fn lease(&self, id: &str) -> Result<Option<Lease>, JobStoreError> {
        let mut conn = self.conn();
        let id = self.resolve(&conn, id)?;
        // A deferred transaction only to reuse `lease_of`; it reads and writes nothing else.
        let tx = conn.transaction().map_err(|e| self.db(e))?;
        self.lease_of(&tx, &id)
    }
}
