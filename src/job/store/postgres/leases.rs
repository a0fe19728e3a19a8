//! [`Leases`] for [`PostgresStore`]: claims — one statement picks the jobs waiting longest
//! with `SKIP LOCKED` and leases them, up to [`CLAIM_BATCH`] at a time — a heartbeat, and
//! every write that names a lease, conditional on its fencing token.

use super::db::Db;
use super::schema::CLAIMABLE;
use super::{CHANGE_CHANNEL, PostgresStore, WORK_CHANNEL, number};
use crate::job::decision::JobDecision;
use crate::job::record::{ArtifactVersion, Job, Transition};
use crate::job::store::rows::{self, int};
use crate::job::store::rules::{self, fenced};
use crate::job::store::{Claim, JobStoreError, Lease, Leases};
use crate::redact::Redacted;
use postgres::GenericClient;

/// The most steps one claim statement takes ([`Leases::claim_up_to`] asks again for more).
const CLAIM_BATCH: usize = 16;

impl PostgresStore {
    /// The lease columns of job `id`'s row.
    pub(super) fn lease_of(
        &self,
        c: &mut Db<'_, impl GenericClient>,
        id: &str,
    ) -> Result<Option<Lease>, JobStoreError> {
        let row = c
            .query_opt(
                "SELECT lease_owner, lease_until, fence FROM jobs WHERE id = $1",
                &[&id],
            )
            .map_err(|e| self.db(&e))?
            .ok_or_else(|| JobStoreError::NotFound { id: id.to_string() })?;
        let owner: Option<String> = row.get(0);
        let until: Option<i64> = row.get(1);
        let fence: i64 = row.get(2);
        Ok(owner.map(|runner| Lease {
            job: id.to_string(),
            runner,
            fence: number(fence),
            until_ms: number(until.unwrap_or(0)),
        }))
    }

    /// Claims up to `max` steps for `runner` (of job `only` when given) in one statement,
    /// atomic by itself: the store's now (the database's clock unless a test clock is
    /// given), the pick, the leases. SKIP LOCKED: runners claiming at once each take
    /// different jobs, none waits for another's row. A claim of any jobs and of one job are
    /// two statements: each has one plan, which the server keeps (a statement for both,
    /// `$2 IS NULL OR id = $2`, would be planned afresh at every call, costing more than
    /// running it). The claims come oldest first.
    fn claims(
        &self,
        runner: &str,
        only: Option<&str>,
        ttl_ms: u64,
        max: usize,
    ) -> Result<Vec<Claim>, JobStoreError> {
        let clock = self.clock.as_ref().map(|c| int(c.now_ms()));
        // The limit is written into the statement, not passed: with a parameter the server's
        // generic plan cannot count on a small limit and stops walking the claimable index
        // in order (measured: half again the server's time a claim). One statement a batch
        // size, up to `CLAIM_BATCH`.
        let max = max.clamp(1, CLAIM_BATCH);
        self.with(|c| {
            let only = match only {
                Some(id) => Some(self.resolve(c, id)?),
                None => None,
            };
            let rows = match &only {
                None => c.query(
                    &format!(
                        "WITH t AS (SELECT COALESCE($1::bigint,
                                 (extract(epoch FROM clock_timestamp()) * 1000)::bigint) AS now),
                         picked AS (
                             SELECT jobs.id, jobs.state FROM jobs, t
                             WHERE {CLAIMABLE}
                               AND (lease_owner IS NULL
                                    OR (lease_until < t.now AND lease_owner <> $2))
                             ORDER BY updated_ms, id LIMIT {max}
                             FOR UPDATE OF jobs SKIP LOCKED)
                         UPDATE jobs j SET lease_owner = $2, lease_until = t.now + $3,
                             fence = j.fence + 1
                         FROM picked, t WHERE j.id = picked.id
                         RETURNING j.id, picked.state, j.fence, j.lease_until, j.data"
                    ),
                    &[&clock, &runner, &int(ttl_ms)],
                ),
                Some(id) => c.query(
                    &format!(
                        "WITH t AS (SELECT COALESCE($1::bigint,
                                 (extract(epoch FROM clock_timestamp()) * 1000)::bigint) AS now),
                         picked AS (
                             SELECT jobs.id, jobs.state FROM jobs, t
                             WHERE id = $4 AND {CLAIMABLE}
                               AND (lease_owner IS NULL
                                    OR (lease_until < t.now AND lease_owner <> $2))
                             FOR UPDATE OF jobs SKIP LOCKED)
                         UPDATE jobs j SET lease_owner = $2, lease_until = t.now + $3,
                             fence = j.fence + 1
                         FROM picked, t WHERE j.id = picked.id
                         RETURNING j.id, picked.state, j.fence, j.lease_until, j.data"
                    ),
                    &[&clock, &runner, &int(ttl_ms), id],
                ),
            }
            .map_err(|e| self.db(&e))?;
            let mut claims = rows
                .into_iter()
                .map(|row| {
                    let (id, state, fence, until, data): (String, String, i64, i64, String) =
                        (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
                    // Claimable states are this version's names: no legacy name to migrate.
                    let (now_state, _) = rows::state(&self.shown, &id, &state, false)?;
                    let job = rows::job(&self.shown, &id, now_state, &data)?;
                    Ok(Claim {
                        job,
                        reclaimed: rules::reclaimed(&state),
                        lease: Lease {
                            job: id,
                            runner: runner.to_string(),
                            fence: number(fence),
                            until_ms: number(until),
                        },
                    })
                })
                .collect::<Result<Vec<_>, JobStoreError>>()?;
            // `RETURNING` keeps no order: the one the pick had.
            claims
                .sort_by(|a, b| (a.job.updated_ms, &a.job.id).cmp(&(b.job.updated_ms, &b.job.id)));
            Ok(claims)
        })
    }
}

impl Leases for PostgresStore {
    fn claim(
        &self,
        runner: &str,
        only: Option<&str>,
        ttl_ms: u64,
    ) -> Result<Option<Claim>, JobStoreError> {
        // The statement `claim_up_to` runs, with a batch of one.
        Ok(self.claims(runner, only, ttl_ms, 1)?.pop())
    }

    /// `CLAIM_BATCH` a statement, until `max` or until a statement finds fewer than it
    /// asked for.
    fn claim_up_to(
        &self,
        runner: &str,
        ttl_ms: u64,
        max: usize,
    ) -> Result<Vec<Claim>, JobStoreError> {
        let mut claims: Vec<Claim> = Vec::new();
        while claims.len() < max {
            let asked = (max - claims.len()).min(CLAIM_BATCH);
            let got = self.claims(runner, None, ttl_ms, asked)?;
            let short = got.len() < asked;
            claims.extend(got);
            if short {
                break;
            }
        }
        Ok(claims)
    }

    fn heartbeat(&self, lease: &Lease, ttl_ms: u64) -> Result<Lease, JobStoreError> {
        self.with(|c| {
            let until = self.now(c)?.saturating_add(int(ttl_ms));
            let n = c
                .execute(
                    "UPDATE jobs SET lease_until = $4
                     WHERE id = $1 AND fence = $2 AND lease_owner = $3",
                    &[&lease.job, &int(lease.fence), &lease.runner, &until],
                )
                .map_err(|e| self.db(&e))?;
            if n == 0 {
                return Err(fenced(lease));
            }
            Ok(Lease {
                until_ms: number(until),
                ..lease.clone()
            })
        })
    }

    fn release(&self, lease: &Lease) -> Result<(), JobStoreError> {
        self.with(|c| {
            // One statement: the lease handed back if it is still current, and then (the
            // subquery is correlated with the updated row) the wake-up, sent at the commit.
            c.query_opt(
                "WITH r AS (
                     UPDATE jobs SET lease_owner = NULL, lease_until = NULL
                     WHERE id = $1 AND fence = $2 AND lease_owner = $3
                     RETURNING id)
                 SELECT (SELECT count(*) FROM pg_notify($4, '') WHERE r.id IS NOT NULL),
                     (SELECT count(*) FROM pg_notify($5, r.id))
                 FROM r",
                &[
                    &lease.job,
                    &int(lease.fence),
                    &lease.runner,
                    &WORK_CHANNEL,
                    &CHANGE_CHANNEL,
                ],
            )
            .map_err(|e| self.db(&e))?
            .map(|_| ())
            .ok_or_else(|| fenced(lease))
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
        let transition = transition.map(|t| rows::to_json(&job.id, t)).transpose()?;
        self.with(|c| {
            let watched = self.watched(c)?;
            // One statement, so one round trip, committed by itself: the job's columns, and
            // its lease released when it comes to rest, in an update conditional on the
            // lease (no row, no current lease) that also takes the row's lock and bumps the
            // job's transition counter; the transition inserted under that number; and —
            // back to PENDING (a retry after a failure), work for any runner on any machine —
            // the wake-up, sent at the commit. The lock is held to the commit, so numbers are
            // handed out in commit order with no gap ([`super::schema`]). The notifications'
            // subqueries are correlated with the updated row: a refused write sends none; the
            // dashboards' is sent only while one watches, as this store last read
            // ([`super::watchers`]).
            let row = c
                .query_opt(
                    "WITH j AS (
                         UPDATE jobs SET state = $4, data = $5, title = $6, risk = $7,
                             steps = $8, updated_ms = $9, nickname = $10,
                             lease_owner = CASE WHEN $11 THEN NULL ELSE lease_owner END,
                             lease_until = CASE WHEN $11 THEN NULL ELSE lease_until END,
                             last_seq = last_seq + CASE WHEN $12::text IS NULL THEN 0 ELSE 1 END
                         WHERE id = $1 AND fence = $2 AND lease_owner = $3
                         RETURNING id, last_seq),
                     t AS (
                         INSERT INTO transitions (job_id, seq, data)
                         SELECT id, last_seq, $12 FROM j WHERE $12::text IS NOT NULL)
                     SELECT (SELECT count(*) FROM pg_notify($14, '')
                             WHERE $13 AND j.id IS NOT NULL),
                         (SELECT count(*) FROM pg_notify($15, j.id) WHERE $16)
                     FROM j",
                    &[
                        &lease.job,
                        &int(lease.fence),
                        &lease.runner,
                        &job.state().as_str(),
                        &rows::to_json(&job.id, job)?,
                        &rows::title(&job.spec.task),
                        &job.spec.risk.as_str(),
                        &(i32::try_from(job.steps).unwrap_or(i32::MAX)),
                        &int(job.updated_ms),
                        &job.spec.nickname,
                        &save.releases,
                        &transition,
                        &save.wakes,
                        &WORK_CHANNEL,
                        &CHANGE_CHANNEL,
                        &watched,
                    ],
                )
                .map_err(|e| self.db(&e))?;
            row.map(|_| ()).ok_or_else(|| fenced(lease))
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
            tx.execute(
                "INSERT INTO artifacts (job_id, version, data) VALUES ($1, $2, $3)",
                &[
                    &lease.job,
                    &(i32::try_from(version).unwrap_or(i32::MAX)),
                    &rows::to_json(&lease.job, &stored)?,
                ],
            )
            .map_err(|e| self.db(&e))?;
            self.changed(tx, &lease.job)?;
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
                seq: number(seq),
                ..decision.clone()
            };
            tx.execute(
                "INSERT INTO decisions (job_id, seq, data) VALUES ($1, $2, $3)",
                &[&lease.job, &seq, &rows::to_json(&lease.job, &stored)?],
            )
            .map_err(|e| self.db(&e))?;
            self.changed(tx, &lease.job)?;
            Ok(number(seq))
        })
    }

    fn lease(&self, id: &str) -> Result<Option<Lease>, JobStoreError> {
        self.with(|c| {
            let id = self.resolve(c, id)?;
            self.lease_of(c, &id)
        })
    }
}
