//! Notifications in the PostgreSQL store ([`Notifications`]): claimed with an
//! `INSERT … ON CONFLICT DO NOTHING`, so that of several runners on several machines that see
//! one event only the one whose insert took effect sends it.

use super::PostgresStore;
use super::number;
use crate::job::store::rows;
use crate::job::store::{
    JobStoreError, NotificationRecord, Notifications, NotifyOutcome, NotifyStatus,
};
use crate::redact::Redacted;

impl Notifications for PostgresStore {
    fn claim_notification(
        &self,
        record: &Redacted<NotificationRecord>,
    ) -> Result<bool, JobStoreError> {
        let r = record.get();
        let data = rows::to_json(&r.job, &r.event)?;
        self.write(|tx| {
            let now = self.now(tx)?;
            let inserted = tx
                .execute(
                    "INSERT INTO notifications (job_id, kind, cause, sender, status, attempts,
                         error, created_ms, updated_ms, data)
                     VALUES ($1, $2, $3, $4, $5, 0, NULL, $6, $6, $7)
                     ON CONFLICT (job_id, kind, cause) DO NOTHING",
                    &[
                        &r.job,
                        &r.kind,
                        &r.cause,
                        &r.sender,
                        &NotifyStatus::Sending.as_str(),
                        &now,
                        &data,
                    ],
                )
                .map_err(|e| self.db(&e))?;
            Ok(inserted == 1)
        })
    }

    fn notification_outcome(&self, outcome: &Redacted<NotifyOutcome>) -> Result<(), JobStoreError> {
        let o = outcome.get();
        let attempts = i64::from(o.attempts);
        self.write(|tx| {
            let now = self.now(tx)?;
            let changed = tx
                .execute(
                    "UPDATE notifications SET status = $4, attempts = $5, error = $6,
                         updated_ms = $7
                     WHERE job_id = $1 AND kind = $2 AND cause = $3",
                    &[
                        &o.job,
                        &o.kind,
                        &o.cause,
                        &o.status.as_str(),
                        &attempts,
                        &o.error,
                        &now,
                    ],
                )
                .map_err(|e| self.db(&e))?;
            if changed == 0 {
                return Err(JobStoreError::NotFound { id: o.job.clone() });
            }
            Ok(())
        })
    }

    fn notifications(&self, id: Option<&str>) -> Result<Vec<NotificationRecord>, JobStoreError> {
        self.with(|c| {
            c.query(
                "SELECT job_id, kind, cause, sender, status, attempts, error, created_ms,
                     updated_ms, data
                 FROM notifications WHERE $1::text IS NULL OR job_id = $1
                 ORDER BY created_ms, job_id, kind, cause",
                &[&id],
            )
            .map_err(|e| self.db(&e))?
            .iter()
            .map(|r| {
                let job: String = r.get(0);
                let status: String = r.get(4);
                let attempts: i64 = r.get(5);
                let data: String = r.get(9);
                let status =
                    NotifyStatus::from_word(&status).ok_or_else(|| JobStoreError::Corrupt {
                        id: job.clone(),
                        message: format!("notification status {status:?} is no status"),
                    })?;
                Ok(NotificationRecord {
                    event: rows::record(&self.shown, &job, "notifications", &data)?,
                    kind: r.get(1),
                    cause: r.get(2),
                    sender: r.get(3),
                    created_ms: number(r.get(7)),
                    status,
                    attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                    error: r.get(6),
                    updated_ms: number(r.get(8)),
                    job,
                })
            })
            .collect()
        })
    }
}
