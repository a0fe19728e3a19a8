//! [`Jobs`] for [`PostgresStore`]: each method one statement or one transaction.

use super::db::Db;
use super::{PostgresStore, is_unique_violation, number};
use crate::job::decision::JobDecision;
use crate::job::record::{ArtifactVersion, AuditEntry, Job, Transition};
use crate::job::store::rows::{self, int};
use crate::job::store::{Decision, JobStoreError, JobSummary, Jobs, ListFilter, rules};
use crate::job::{JobState, Migration};
use crate::redact::Redacted;
use postgres::Transaction;

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

impl Jobs for PostgresStore {
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

    fn decide(&self, d: &Decision<'_>) -> Result<(), JobStoreError> {
        let (job, audit) = (d.job.get(), d.audit.get());
        let id = &job.id;
        let (expected, revoke) = (d.expected, d.revoke);
        let transition = d.transition.map(Redacted::get);
        self.write(|tx| {
            let (found, _) = self.read(tx, id, true)?;
            rules::verb_applies(job, expected, &found)?;
            // Live by the database's clock, not the caller's.
            let now = self.now(tx)?;
            rules::verb_may_take(id, self.lease_of(tx, id)?, number(now), revoke)?;
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

    fn decisions(&self, id: &str) -> Result<Vec<JobDecision>, JobStoreError> {
        let rows = self.numbered::<JobDecision>(id, "decisions", "seq")?;
        Ok(rows
            .into_iter()
            .map(|(seq, d)| JobDecision { seq, ..d })
            .collect())
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
}
