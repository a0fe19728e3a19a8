//! Notifications in the SQLite store ([`Notifications`]): claimed with an
//! `INSERT … ON CONFLICT DO NOTHING`, so that of several processes that see one event only the
//! one whose insert took effect sends it.

use super::{SqliteStore, int, uint};
use crate::job::store::rows;
use crate::job::store::{
    JobStoreError, NotificationRecord, Notifications, NotifyOutcome, NotifyStatus,
};
use crate::redact::Redacted;
use rusqlite::params;

impl Notifications for SqliteStore {
    fn claim_notification(
        &self,
        record: &Redacted<NotificationRecord>,
    ) -> Result<bool, JobStoreError> {
        let r = record.get();
        let now = int(self.clock.now_ms());
        self.write(|tx| {
            let inserted = tx
                .execute(
                    "INSERT INTO notifications (job_id, kind, cause, sender, status, attempts,
                         error, created_ms, updated_ms, data)
                     VALUES (?1, ?2, ?3, ?4, ?5, 0, NULL, ?6, ?6, ?7)
                     ON CONFLICT (job_id, kind, cause) DO NOTHING",
                    params![
                        r.job,
                        r.kind,
                        r.cause,
                        r.sender,
                        NotifyStatus::Sending.as_str(),
                        now,
                        rows::to_json(&r.job, &r.event)?
                    ],
                )
                .map_err(|e| self.db(e))?;
            Ok(inserted == 1)
        })
    }

    fn notification_outcome(&self, outcome: &Redacted<NotifyOutcome>) -> Result<(), JobStoreError> {
        let o = outcome.get();
        let now = int(self.clock.now_ms());
        self.write(|tx| {
            let changed = tx
                .execute(
                    "UPDATE notifications SET status = ?4, attempts = ?5, error = ?6,
                         updated_ms = ?7
                     WHERE job_id = ?1 AND kind = ?2 AND cause = ?3",
                    params![
                        o.job,
                        o.kind,
                        o.cause,
                        o.status.as_str(),
                        o.attempts,
                        o.error,
                        now
                    ],
                )
                .map_err(|e| self.db(e))?;
            if changed == 0 {
                return Err(JobStoreError::NotFound { id: o.job.clone() });
            }
            Ok(())
        })
    }

    fn notifications(&self, id: Option<&str>) -> Result<Vec<NotificationRecord>, JobStoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT job_id, kind, cause, sender, status, attempts, error, created_ms,
                     updated_ms, data
                 FROM notifications WHERE ?1 IS NULL OR job_id = ?1
                 ORDER BY created_ms, rowid",
            )
            .map_err(|e| self.db(e))?;
        let raw: Vec<Raw> = stmt
            .query_map([id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                ))
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        raw.into_iter()
            .map(
                |(job, kind, cause, sender, status, attempts, error, c, u, data)| {
                    let event = rows::record(&self.path, &job, "notifications", &data)?;
                    let status =
                        NotifyStatus::from_word(&status).ok_or_else(|| JobStoreError::Corrupt {
                            id: job.clone(),
                            message: format!("notification status {status:?} is no status"),
                        })?;
                    Ok(NotificationRecord {
                        job,
                        kind,
                        cause,
                        event,
                        sender,
                        created_ms: uint(c),
                        status,
                        attempts,
                        error,
                        updated_ms: uint(u),
                    })
                },
            )
            .collect()
    }
}

/// A notification row's columns, as read.
type Raw = (
    String,
    String,
    String,
    String,
    String,
    u32,
    Option<String>,
    i64,
    i64,
    String,
);
