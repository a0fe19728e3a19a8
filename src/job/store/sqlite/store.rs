//! [`JobStore`] for [`SqliteStore`]: each method one statement or one immediate transaction.

use super::schema::CLAIMABLE;
use super::{SqliteStore, fenced, int, uint};
use crate::job::decision::JobDecision;
use crate::job::record::{ArtifactVersion, AuditEntry, Job, Transition};
use crate::job::store::rows;
use crate::job::store::{Claim, Decision, JobStore, JobStoreError, JobSummary, Lease, ListFilter};
use crate::job::{JobState, Migration};
use crate::redact::Redacted;
use rusqlite::{ErrorCode, OptionalExtension, Transaction, params};

impl SqliteStore {
    /// Writes a legacy row's migrated state back, and records the migration in the audit
    /// trail (the transition matrix has no trigger for it). The store reads no clock: the
    /// entry is dated at the job's last change.
    fn record_migration(
        &self,
        tx: &Transaction<'_>,
        job: &mut Job,
        migration: &Migration,
    ) -> Result<(), JobStoreError> {
        let entry = rows::migrated(job, migration);
        self.update_job(tx, job)?;
        self.push_audit(tx, &entry)
    }

    /// The (stale-free) lease columns of a job row.
    fn lease_of(&self, tx: &Transaction<'_>, id: &str) -> Result<Option<Lease>, JobStoreError> {
        tx.query_row(
            "SELECT lease_owner, lease_until, fence FROM jobs WHERE id = ?1",
            [id],
            |r| {
                let owner: Option<String> = r.get(0)?;
                let until: Option<i64> = r.get(1)?;
                let fence: i64 = r.get(2)?;
                Ok(owner.map(|runner| Lease {
                    job: id.to_string(),
                    runner,
                    fence: uint(fence),
                    until_ms: uint(until.unwrap_or(0)),
                }))
            },
        )
        .optional()
        .map_err(|e| self.db(e))?
        .ok_or_else(|| JobStoreError::NotFound { id: id.to_string() })
    }
}

impl JobStore for SqliteStore {
    fn change_seen(&self) -> u64 {
        self.watch();
        self.changes.seen()
    }

    fn wait_for_change(&self, since: u64, timeout: std::time::Duration) -> bool {
        self.watch();
        self.changes.wait(since, timeout)
    }

    fn create(
        &self,
        job: &Redacted<Job>,
        audit: &Redacted<AuditEntry>,
    ) -> Result<(), JobStoreError> {
        let (job, audit) = (job.get(), audit.get());
        self.write(|tx| {
            let inserted = tx.execute(
                "INSERT INTO jobs (id, state, data, title, risk, steps, created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    job.id,
                    job.state().as_str(),
                    rows::to_json(&job.id, job)?,
                    rows::title(&job.spec.task),
                    job.spec.risk.as_str(),
                    job.steps,
                    int(job.created_ms),
                    int(job.updated_ms),
                ],
            );
            match inserted {
                Err(e) if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                    return Err(JobStoreError::Exists { id: job.id.clone() });
                }
                other => other.map_err(|e| self.db(e))?,
            };
            self.push_audit(tx, audit)
        })
        .inspect(|()| crate::job::store::work::raise())
    }

    fn get(&self, id: &str) -> Result<Job, JobStoreError> {
        let id = self.resolve(&self.conn(), id)?;
        let (job, migration) = self.read(&self.conn(), &id)?;
        if migration.is_none() {
            return Ok(job);
        }
        // A legacy row: read it again under the write lock (another process may be migrating
        // it too) and write the migration back with its record.
        self.write(|tx| {
            let (mut job, migration) = self.read(tx, &id)?;
            if let Some(migration) = migration {
                self.record_migration(tx, &mut job, &migration)?;
            }
            Ok(job)
        })
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<JobSummary>, JobStoreError> {
        let conn = self.conn();
        // The nickname is the one field read from a job's JSON: too rare to earn a column. A
        // row whose JSON is broken lists without one (`get` says what is wrong with it).
        let sql = "SELECT id, state, title, risk, steps, created_ms, updated_ms, lease_owner,
                          CASE WHEN json_valid(data) THEN json_extract(data, '$.spec.nickname') END
                   FROM jobs WHERE ?1 IS NULL OR state = ?1 ORDER BY created_ms, id";
        let mut stmt = conn.prepare(sql).map_err(|e| self.db(e))?;
        let state = filter.state.map(JobState::as_str);
        let mut found = stmt.query([state]).map_err(|e| self.db(e))?;
        let mut out = Vec::new();
        while let Some(r) = found.next().map_err(|e| self.db(e))? {
            let row = || -> rusqlite::Result<_> {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, Option<String>>(7)?,
                    r.get::<_, Option<String>>(8)?,
                ))
            };
            let (id, state, title, risk, steps, created, updated, runner, nickname) =
                row().map_err(|e| self.db(e))?;
            // A legacy name is shown migrated; `get` writes it back.
            let (state, _) = rows::state(&self.path, &id, &state, runner.is_none())?;
            out.push(JobSummary {
                risk: rows::risk(&self.path, &id, &risk)?,
                id,
                state,
                title,
                steps: u32::try_from(steps).unwrap_or(0),
                created_ms: uint(created),
                updated_ms: uint(updated),
                runner,
                nickname,
            });
        }
        Ok(out)
    }

    fn now_ms(&self) -> Result<u64, JobStoreError> {
        Ok(self.clock.now_ms())
    }

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
                reclaimed: state != JobState::Pending.as_str(),
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
        // A lease of another job cannot write this one.
        if job.id != lease.job {
            return Err(fenced(lease));
        }
        self.write(|tx| {
            self.holds(tx, lease)?;
            self.update_job(tx, job)?;
            if job.state().is_resting() {
                // Resting: nobody holds the job. The fence stays; the next claim raises it.
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
            // Back to PENDING (a retry after a failure): work for any runner.
            if job.state() == JobState::Pending {
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
        self.write(|tx| {
            let (now, _) = self.read(tx, id)?;
            if now.state() != d.expected {
                return Err(JobStoreError::Conflict {
                    id: id.clone(),
                    expected: d.expected,
                    now: now.state(),
                });
            }
            // Bound to the step it was judged at: a runner's new step (a new result) in
            // between makes the verb stale, whatever the state.
            if now.steps != job.steps {
                return Err(JobStoreError::Stepped {
                    id: id.clone(),
                    seen: job.steps,
                    now: now.steps,
                });
            }
            // Live by the store's clock, not the caller's.
            if let Some(lease) = self.lease_of(tx, id)?
                && lease.live_at(self.clock.now_ms())
                && !d.revoke
            {
                return Err(JobStoreError::Busy {
                    id: id.clone(),
                    runner: lease.runner,
                });
            }
            self.update_job(tx, job)?;
            // The fence rises so that a runner that held the job fails its next write.
            tx.execute(
                "UPDATE jobs SET lease_owner = NULL, lease_until = NULL, fence = fence + 1
                 WHERE id = ?1",
                [id],
            )
            .map_err(|e| self.db(e))?;
            if let Some(t) = d.transition {
                self.push_transition(tx, id, t.get())?;
            }
            self.push_audit(tx, audit)
        })
        .inspect(|()| crate::job::store::work::raise())
    }

    fn record(&self, audit: &Redacted<AuditEntry>) -> Result<(), JobStoreError> {
        let audit = audit.get();
        self.write(|tx| {
            self.read(tx, &audit.entity_id)?;
            self.push_audit(tx, audit)
        })
    }

    fn history(&self, id: &str) -> Result<Vec<Transition>, JobStoreError> {
        let conn = self.conn();
        let id = self.resolve(&conn, id)?;
        let mut stmt = conn
            .prepare("SELECT data FROM transitions WHERE job_id = ?1 ORDER BY seq")
            .map_err(|e| self.db(e))?;
        let data: Vec<String> = stmt
            .query_map([&id], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        data.iter()
            .map(|d| rows::record(&self.path, &id, "transitions", d))
            .collect()
    }

    fn artifacts(&self, id: &str) -> Result<Vec<ArtifactVersion>, JobStoreError> {
        let rows = self.numbered::<ArtifactVersion>(id, "artifacts", "version")?;
        Ok(rows
            .into_iter()
            // The column is what the UNIQUE constraint guards.
            .map(|(version, a)| ArtifactVersion {
                version: u32::try_from(version).unwrap_or(0),
                ..a
            })
            .collect())
    }

    fn audit(&self, id: Option<&str>) -> Result<Vec<AuditEntry>, JobStoreError> {
        let conn = self.conn();
        let id = id.map(|id| self.resolve(&conn, id)).transpose()?;
        let mut stmt = conn
            .prepare(
                "SELECT seq, job_id, data FROM audit WHERE ?1 IS NULL OR job_id = ?1 ORDER BY seq",
            )
            .map_err(|e| self.db(e))?;
        let data: Vec<(i64, String, String)> = stmt
            .query_map([&id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        data.iter()
            .map(|(seq, job, d)| {
                let mut entry: AuditEntry = rows::record(&self.path, job, "audit", d)?;
                entry.seq = uint(*seq);
                Ok(entry)
            })
            .collect()
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
        let mut conn = self.conn();
        let id = self.resolve(&conn, id)?;
        // A deferred transaction only to reuse `lease_of`; it reads and writes nothing else.
        let tx = conn.transaction().map_err(|e| self.db(e))?;
        self.lease_of(&tx, &id)
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
