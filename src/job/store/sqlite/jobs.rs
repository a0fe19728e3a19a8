//! [`Jobs`] for [`SqliteStore`]: each method one statement or one immediate transaction.

use super::{SqliteStore, int, uint};
use crate::job::decision::JobDecision;
use crate::job::record::{ArtifactVersion, AuditEntry, Job, Transition};
use crate::job::store::{Decision, JobStoreError, JobSummary, Jobs, ListFilter, rows, rules};
use crate::job::{JobState, Migration};
use crate::redact::Redacted;
use rusqlite::{ErrorCode, Transaction, params};

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
}

impl Jobs for SqliteStore {
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

    fn decide(&self, d: &Decision<'_>) -> Result<(), JobStoreError> {
        let (job, audit) = (d.job.get(), d.audit.get());
        let id = &job.id;
        self.write(|tx| {
            let (found, _) = self.read(tx, id)?;
            rules::verb_applies(job, d.expected, &found)?;
            // Live by the store's clock, not the caller's.
            rules::verb_may_take(id, self.lease_of(tx, id)?, self.clock.now_ms(), d.revoke)?;
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

    fn decisions(&self, id: &str) -> Result<Vec<JobDecision>, JobStoreError> {
        let rows = self.numbered::<JobDecision>(id, "decisions", "seq")?;
        Ok(rows
            .into_iter()
            .map(|(seq, d)| JobDecision { seq, ..d })
            .collect())
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
}
