//! What a job's sessions leave in the SQLite store ([`Shipments`]).

use super::{SqliteStore, int, uint};
use crate::job::store::rows;
use crate::job::store::{JobStoreError, Lease, SessionEntry, SessionJournal, Shipments};
use crate::redact::Redacted;
use rusqlite::params;

impl Shipments for SqliteStore {
    fn add_session_entries(
        &self,
        lease: &Lease,
        entries: &[Redacted<SessionEntry>],
    ) -> Result<u64, JobStoreError> {
        if entries.is_empty() {
            return Ok(0);
        }
        self.write(|tx| {
            self.holds(tx, lease)?;
            let mut seq = self.next_number(tx, "session_entries", "seq", &lease.job)?;
            let mut insert = tx
                .prepare(
                    "INSERT INTO session_entries (job_id, seq, session, data, log_end)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(|e| self.db(e))?;
            for e in entries {
                let e = e.get();
                let stored = SessionEntry { seq, ..e.clone() };
                insert
                    .execute(params![
                        lease.job,
                        int(seq),
                        e.session,
                        rows::to_json(&lease.job, &stored)?,
                        int(e.log_end)
                    ])
                    .map_err(|e| self.db(e))?;
                seq += 1;
            }
            Ok(seq - 1)
        })
    }

    fn put_journal(
        &self,
        lease: &Lease,
        journal: &Redacted<SessionJournal>,
    ) -> Result<(), JobStoreError> {
        let j = journal.get();
        let now = self.clock.now_ms();
        let stored = SessionJournal {
            shipped_ms: now,
            ..j.clone()
        };
        self.write(|tx| {
            self.holds(tx, lease)?;
            tx.execute(
                "INSERT INTO journals (job_id, session, runner, first_ms, shipped_ms, data)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5)
                 ON CONFLICT (job_id, session)
                 DO UPDATE SET runner = ?3, shipped_ms = ?4, data = ?5",
                params![
                    lease.job,
                    j.session,
                    j.runner,
                    int(now),
                    rows::to_json(&lease.job, &stored)?
                ],
            )
            .map_err(|e| self.db(e))?;
            Ok(())
        })
    }

    fn session_entries(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<SessionEntry>, JobStoreError> {
        let conn = self.conn();
        let id = self.resolve(&conn, id)?;
        let mut stmt = conn
            .prepare(
                "SELECT seq, data FROM session_entries WHERE job_id = ?1 AND seq > ?2
                 ORDER BY seq LIMIT ?3",
            )
            .map_err(|e| self.db(e))?;
        let found: Vec<(i64, String)> = stmt
            .query_map(
                params![id, int(after), i64::try_from(limit).unwrap_or(i64::MAX)],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        found
            .iter()
            .map(|(n, d)| {
                let e: SessionEntry = rows::record(&self.path, &id, "session_entries", d)?;
                Ok(SessionEntry { seq: uint(*n), ..e })
            })
            .collect()
    }

    fn shipped_to(&self, id: &str, session: &str) -> Result<u64, JobStoreError> {
        let conn = self.conn();
        let id = self.resolve(&conn, id)?;
        let end: i64 = conn
            .query_row(
                "SELECT COALESCE(MAX(log_end), 0) FROM session_entries
                 WHERE job_id = ?1 AND session = ?2",
                params![id, session],
                |r| r.get(0),
            )
            .map_err(|e| self.db(e))?;
        Ok(uint(end))
    }

    fn journals(&self, id: &str) -> Result<Vec<SessionJournal>, JobStoreError> {
        let conn = self.conn();
        let id = self.resolve(&conn, id)?;
        let mut stmt = conn
            .prepare("SELECT data FROM journals WHERE job_id = ?1 ORDER BY first_ms, session")
            .map_err(|e| self.db(e))?;
        let found: Vec<String> = stmt
            .query_map([&id], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        found
            .iter()
            .map(|d| rows::record(&self.path, &id, "journals", d))
            .collect()
    }
}
