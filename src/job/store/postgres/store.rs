//! [`JobStore`] for [`PostgresStore`]: each method one statement or one transaction.

use super::db::Db;
use super::{CHANGE_CHANNEL, PostgresStore, WORK_CHANNEL, fenced, is_unique_violation, number};
use crate::job::decision::JobDecision;
use crate::job::record::{ArtifactVersion, AuditEntry, Job, Transition};
use crate::job::store::rows::{self, int};
use crate::job::store::{Claim, Decision, JobStore, JobStoreError, JobSummary, Lease, ListFilter};
use crate::job::{JobState, Migration};
use crate::redact::Redacted;
use postgres::{GenericClient, Transaction};

impl PostgresStore {
    /// Writes a legacy row's migrated state back, and records the migration in the audit
    /// trail (as the SQLite store does).
    fn record_migration(
        &self,
        tx: &mut Db<'_, Transaction<'_>>,
        job: &mut Job,
        migration: &Migration,
    ) -> Result<(), JobStoreError> {
        let entry = rows::migrated(job, migration);
        self.update_job(tx, job)?;
        self.push_audit(tx, &entry)
    }

    /// The lease columns of job `id`'s row.
    fn lease_of(
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

    /// Rows of job `id` in `table`, in `column`'s order, each with its number and record.
    fn numbered<T: serde::de::DeserializeOwned + Send>(
        &self,
        id: &str,
        table: &'static str,
        column: &'static str,
    ) -> Result<Vec<(u64, T)>, JobStoreError> {
        self.with(|c| {
            let id = self.resolve(c, id)?;
            let found = c
                .query(
                    &format!(
                        "SELECT {column}::bigint, data FROM {table} WHERE job_id = $1 ORDER BY {column}"
                    ),
                    &[&id],
                )
                .map_err(|e| self.db(&e))?;
            found
                .iter()
                .map(|r| {
                    let (n, d): (i64, String) = (r.get(0), r.get(1));
                    Ok((number(n), rows::record(&self.shown, &id, table, &d)?))
                })
                .collect()
        })
    }
}

impl JobStore for PostgresStore {
    fn create(
        &self,
        job: &Redacted<Job>,
        audit: &Redacted<AuditEntry>,
    ) -> Result<(), JobStoreError> {
        let (job, audit) = (job.get(), audit.get());
        self.write(|tx| {
            let inserted = tx.execute(
                "INSERT INTO jobs (id, state, data, title, risk, steps, created_ms, updated_ms,
                     nickname)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                &[
                    &job.id,
                    &job.state().as_str(),
                    &rows::to_json(&job.id, job)?,
                    &rows::title(&job.spec.task),
                    &job.spec.risk.as_str(),
                    &(i32::try_from(job.steps).unwrap_or(i32::MAX)),
                    &int(job.created_ms),
                    &int(job.updated_ms),
                    &job.spec.nickname,
                ],
            );
            match inserted {
                Err(e) if is_unique_violation(&e) => {
                    return Err(JobStoreError::Exists { id: job.id.clone() });
                }
                other => other.map_err(|e| self.db(&e))?,
            };
            self.push_audit(tx, audit)?;
            self.changed(tx, &job.id)?;
            self.notify(tx)
        })
        .inspect(|()| crate::job::store::work::raise())
    }

    fn get(&self, id: &str) -> Result<Job, JobStoreError> {
        let (full, job, migration) = self.with(|c| {
            let full = self.resolve(c, id)?;
            let (job, migration) = self.read(c, &full, false)?;
            Ok((full, job, migration))
        })?;
        if migration.is_none() {
            return Ok(job);
        }
        self.write(|tx| {
            let (mut job, migration) = self.read(tx, &full, true)?;
            if let Some(migration) = migration {
                self.record_migration(tx, &mut job, &migration)?;
            }
            Ok(job)
        })
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<JobSummary>, JobStoreError> {
        let state = filter.state.map(JobState::as_str);
        self.with(|c| {
            let found = c
                .query(
                    "SELECT id, state, title, risk, steps, created_ms, updated_ms, lease_owner,
                            nickname
                     FROM jobs WHERE $1::text IS NULL OR state = $1 ORDER BY created_ms, id",
                    &[&state],
                )
                .map_err(|e| self.db(&e))?;
            let mut out = Vec::with_capacity(found.len());
            for r in &found {
                let id: String = r.get(0);
                let name: String = r.get(1);
                let runner: Option<String> = r.get(7);
                let (state, _) = rows::state(&self.shown, &id, &name, runner.is_none())?;
                let risk: String = r.get(3);
                let steps: i32 = r.get(4);
                out.push(JobSummary {
                    risk: rows::risk(&self.shown, &id, &risk)?,
                    state,
                    title: r.get(2),
                    steps: u32::try_from(steps).unwrap_or(0),
                    created_ms: number(r.get(5)),
                    updated_ms: number(r.get(6)),
                    runner,
                    nickname: r.get(8),
                    id,
                });
            }
            Ok(out)
        })
    }

    fn now_ms(&self) -> Result<u64, JobStoreError> {
        self.with(|c| self.now(c).map(number))
    }

    fn claim(
        &self,
        runner: &str,
        only: Option<&str>,
        ttl_ms: u64,
    ) -> Result<Option<Claim>, JobStoreError> {
        Ok(self.claims(runner, only, ttl_ms, 1)?.pop())
    }

    fn claim_up_to(
        &self,
        runner: &str,
        ttl_ms: u64,
        max: usize,
    ) -> Result<Vec<Claim>, JobStoreError> {
        self.claims_in_batches(runner, ttl_ms, max)
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
        if job.id != lease.job {
            return Err(fenced(lease));
        }
        let notify = job.state() == JobState::Pending;
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
                        &job.state().is_resting(),
                        &transition,
                        &notify,
                        &WORK_CHANNEL,
                        &CHANGE_CHANNEL,
                        &watched,
                    ],
                )
                .map_err(|e| self.db(&e))?;
            row.map(|_| ()).ok_or_else(|| fenced(lease))
        })
        .inspect(|()| {
            if notify {
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

    fn decisions(&self, id: &str) -> Result<Vec<JobDecision>, JobStoreError> {
        let rows = self.numbered::<JobDecision>(id, "decisions", "seq")?;
        Ok(rows
            .into_iter()
            .map(|(seq, d)| JobDecision { seq, ..d })
            .collect())
    }

    fn decide(&self, d: &Decision<'_>) -> Result<(), JobStoreError> {
        let (job, audit) = (d.job.get(), d.audit.get());
        let id = &job.id;
        let (expected, revoke) = (d.expected, d.revoke);
        let transition = d.transition.map(Redacted::get);
        self.write(|tx| {
            let (now_job, _) = self.read(tx, id, true)?;
            if now_job.state() != expected {
                return Err(JobStoreError::Conflict {
                    id: id.clone(),
                    expected,
                    now: now_job.state(),
                });
            }
            // Bound to the step it was judged at: a runner's new step (a new result) in
            // between makes the verb stale, whatever the state.
            if now_job.steps != job.steps {
                return Err(JobStoreError::Stepped {
                    id: id.clone(),
                    seen: job.steps,
                    now: now_job.steps,
                });
            }
            let now = self.now(tx)?;
            if let Some(lease) = self.lease_of(tx, id)?
                && lease.live_at(number(now))
                && !revoke
            {
                return Err(JobStoreError::Busy {
                    id: id.clone(),
                    runner: lease.runner,
                });
            }
            self.update_job(tx, job)?;
            tx.execute(
                "UPDATE jobs SET lease_owner = NULL, lease_until = NULL, fence = fence + 1
                 WHERE id = $1",
                &[id],
            )
            .map_err(|e| self.db(&e))?;
            if let Some(t) = transition {
                self.push_transition(tx, id, t)?;
            }
            self.push_audit(tx, audit)?;
            self.changed(tx, id)?;
            self.notify(tx)
        })
        .inspect(|()| crate::job::store::work::raise())
    }

    fn record(&self, audit: &Redacted<AuditEntry>) -> Result<(), JobStoreError> {
        let audit = audit.get();
        self.write(|tx| {
            self.lock_job(tx, &audit.entity_id)?;
            self.push_audit(tx, audit)?;
            self.changed(tx, &audit.entity_id)
        })
    }

    fn history(&self, id: &str) -> Result<Vec<Transition>, JobStoreError> {
        let rows = self.numbered::<Transition>(id, "transitions", "seq")?;
        Ok(rows.into_iter().map(|(_, t)| t).collect())
    }

    fn artifacts(&self, id: &str) -> Result<Vec<ArtifactVersion>, JobStoreError> {
        let rows = self.numbered::<ArtifactVersion>(id, "artifacts", "version")?;
        Ok(rows
            .into_iter()
            .map(|(version, a)| ArtifactVersion {
                version: u32::try_from(version).unwrap_or(0),
                ..a
            })
            .collect())
    }

    fn audit(&self, id: Option<&str>) -> Result<Vec<AuditEntry>, JobStoreError> {
        self.with(|c| {
            let id = id.map(|id| self.resolve(c, id)).transpose()?;
            let found = c
                .query(
                    "SELECT seq, job_id, data FROM audit WHERE $1::text IS NULL OR job_id = $1
                     ORDER BY seq",
                    &[&id],
                )
                .map_err(|e| self.db(&e))?;
            found
                .iter()
                .map(|r| {
                    let (seq, job, d): (i64, String, String) = (r.get(0), r.get(1), r.get(2));
                    let mut entry: AuditEntry = rows::record(&self.shown, &job, "audit", &d)?;
                    entry.seq = number(seq);
                    Ok(entry)
                })
                .collect()
        })
    }

    fn runner_beat(&self, beat: &crate::job::store::RunnerBeat) -> Result<(), JobStoreError> {
        self.beat(beat)
    }

    fn runner_gone(&self, runner: &str) -> Result<(), JobStoreError> {
        self.forget_runner(runner)
    }

    fn add_session_entries(
        &self,
        lease: &Lease,
        entries: &[Redacted<crate::job::store::SessionEntry>],
    ) -> Result<u64, JobStoreError> {
        self.push_entries(lease, entries)
    }

    fn put_journal(
        &self,
        lease: &Lease,
        journal: &Redacted<crate::job::store::SessionJournal>,
    ) -> Result<(), JobStoreError> {
        self.put_journal_row(lease, journal)
    }

    fn session_entries(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<crate::job::store::SessionEntry>, JobStoreError> {
        self.entries_after(id, after, limit)
    }

    fn shipped_to(&self, id: &str, session: &str) -> Result<u64, JobStoreError> {
        self.shipped_to_row(id, session)
    }

    fn journals(&self, id: &str) -> Result<Vec<crate::job::store::SessionJournal>, JobStoreError> {
        self.journal_rows(id)
    }

    fn runners(&self) -> Result<Vec<crate::job::store::RunnerRow>, JobStoreError> {
        self.runner_rows()
    }

    fn lease(&self, id: &str) -> Result<Option<Lease>, JobStoreError> {
        self.with(|c| {
            let id = self.resolve(c, id)?;
            self.lease_of(c, &id)
        })
    }

    fn wait_for_work(&self, since: u64, timeout: std::time::Duration) -> bool {
        self.wait(since, timeout)
    }

    fn wait_for_change(&self, since: u64, timeout: std::time::Duration) -> bool {
        // Registered as a watcher first, so that every step's writes announce themselves;
        // renewed between waits of at most WATCH_RENEW.
        match self.watch() {
            Ok(true) => return true,
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "cannot register to hear every change"),
        }
        // Writers learn of a new watcher within a second: until they all have, a wait ends
        // then and says to look again, for what they did not announce.
        if let Some(left) = self.fresh_watch()
            && left <= timeout
        {
            self.wait_change(since, left);
            return true;
        }
        self.wait_change(since, timeout.min(super::watchers::WATCH_RENEW))
    }

    fn wait_for_news(&self, since: u64, timeout: std::time::Duration) -> bool {
        self.wait_change(since, timeout)
    }

    fn change_seen(&self) -> u64 {
        // Listening from here on; what arrives queues on the connection.
        self.listen_for_changes();
        0
    }

    fn claim_notification(
        &self,
        record: &Redacted<crate::job::store::NotificationRecord>,
    ) -> Result<bool, JobStoreError> {
        self.insert_notification(record)
    }

    fn notification_outcome(
        &self,
        outcome: &Redacted<crate::job::store::NotifyOutcome>,
    ) -> Result<(), JobStoreError> {
        self.write_notification_outcome(outcome)
    }

    fn notifications(
        &self,
        id: Option<&str>,
    ) -> Result<Vec<crate::job::store::NotificationRecord>, JobStoreError> {
        self.notification_rows(id)
    }

    fn add_token(
        &self,
        token: &Redacted<crate::job::store::TokenRecord>,
        hash: &crate::job::store::SecretHash,
    ) -> Result<crate::job::store::TokenRecord, JobStoreError> {
        self.insert_token(token, hash)
    }

    fn tokens(&self) -> Result<Vec<crate::job::store::TokenRecord>, JobStoreError> {
        self.token_rows()
    }

    fn revoke_token(&self, name: &str) -> Result<crate::job::store::TokenRecord, JobStoreError> {
        self.revoke_token_row(name)
    }

    fn token_by_hash(
        &self,
        hash: &crate::job::store::SecretHash,
    ) -> Result<
        Option<(
            crate::job::store::TokenRecord,
            crate::job::store::SecretHash,
        )>,
        JobStoreError,
    > {
        self.token_by_hash_row(hash)
    }

    fn add_login_code(
        &self,
        name: &str,
        code: &crate::job::store::SecretHash,
        ttl_ms: u64,
    ) -> Result<u64, JobStoreError> {
        self.insert_login_code(name, code, ttl_ms)
    }

    fn redeem_login_code(
        &self,
        code: &crate::job::store::SecretHash,
        session: &crate::job::store::SecretHash,
        ttl_ms: u64,
    ) -> Result<Option<crate::job::store::TokenRecord>, JobStoreError> {
        self.redeem_code(code, session, ttl_ms)
    }

    fn web_session(
        &self,
        session: &crate::job::store::SecretHash,
    ) -> Result<Option<crate::job::store::TokenRecord>, JobStoreError> {
        self.web_session_row(session)
    }

    fn end_web_session(
        &self,
        session: &crate::job::store::SecretHash,
    ) -> Result<(), JobStoreError> {
        self.end_web_session_row(session)
    }
}
