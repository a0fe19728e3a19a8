//! What a job's sessions leave in the PostgreSQL store ([`Shipments`]).

use super::{PostgresStore, number};
use crate::job::store::rows::{self, int};
use crate::job::store::{JobStoreError, Lease, SessionEntry, SessionJournal, Shipments};
use crate::redact::Redacted;

impl Shipments for PostgresStore {
    /// One transaction, three round trips whatever the batch: the lease check (which locks
    /// the job's row, serializing its numbering), the last number, one `INSERT … unnest`.
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
            let first = self.next_number(tx, "session_entries", "seq", &lease.job)?;
            let mut sessions = Vec::with_capacity(entries.len());
            let mut data = Vec::with_capacity(entries.len());
            let mut ends = Vec::with_capacity(entries.len());
            for (i, e) in entries.iter().enumerate() {
                let e = e.get();
                let stored = SessionEntry {
                    seq: number(first + i as i64),
                    ..e.clone()
                };
                sessions.push(e.session.clone());
                ends.push(int(e.log_end));
                data.push(rows::to_json(&lease.job, &stored)?);
            }
            tx.execute(
                "INSERT INTO session_entries (job_id, seq, session, data, log_end)
                 SELECT $1, $2 + t.n - 1, t.session, t.data, t.log_end
                 FROM unnest($3::text[], $4::text[], $5::bigint[])
                     WITH ORDINALITY AS t(session, data, log_end, n)",
                &[&lease.job, &first, &sessions, &data, &ends],
            )
            .map_err(|e| self.db(&e))?;
            self.progressed(tx, &lease.job)?;
            Ok(number(first + entries.len() as i64 - 1))
        })
    }

    fn put_journal(
        &self,
        lease: &Lease,
        journal: &Redacted<SessionJournal>,
    ) -> Result<(), JobStoreError> {
        let j = journal.get();
        self.write(|tx| {
            self.holds(tx, lease)?;
            let now = self.now(tx)?;
            let stored = SessionJournal {
                shipped_ms: number(now),
                ..j.clone()
            };
            tx.execute(
                "INSERT INTO journals (job_id, session, runner, first_ms, shipped_ms, data)
                 VALUES ($1, $2, $3, $4, $4, $5)
                 ON CONFLICT (job_id, session)
                 DO UPDATE SET runner = $3, shipped_ms = $4, data = $5",
                &[
                    &lease.job,
                    &j.session,
                    &j.runner,
                    &now,
                    &rows::to_json(&lease.job, &stored)?,
                ],
            )
            .map_err(|e| self.db(&e))?;
            self.progressed(tx, &lease.job)
        })
    }

    fn session_entries(
        &self,
        id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<SessionEntry>, JobStoreError> {
        self.with(|c| {
            let id = self.resolve(c, id)?;
            let found = c
                .query(
                    "SELECT seq, data FROM session_entries WHERE job_id = $1 AND seq > $2
                     ORDER BY seq LIMIT $3",
                    &[&id, &int(after), &i64::try_from(limit).unwrap_or(i64::MAX)],
                )
                .map_err(|e| self.db(&e))?;
            found
                .iter()
                .map(|r| {
                    let (n, d): (i64, String) = (r.get(0), r.get(1));
                    let e: SessionEntry = rows::record(&self.shown, &id, "session_entries", &d)?;
                    Ok(SessionEntry {
                        seq: number(n),
                        ..e
                    })
                })
                .collect()
        })
    }

    fn shipped_to(&self, id: &str, session: &str) -> Result<u64, JobStoreError> {
        self.with(|c| {
            let id = self.resolve(c, id)?;
            let end: i64 = c
                .query_one(
                    "SELECT COALESCE(MAX(log_end), 0)::bigint FROM session_entries
                     WHERE job_id = $1 AND session = $2",
                    &[&id, &session],
                )
                .map_err(|e| self.db(&e))?
                .get(0);
            Ok(number(end))
        })
    }

    fn journals(&self, id: &str) -> Result<Vec<SessionJournal>, JobStoreError> {
        self.with(|c| {
            let id = self.resolve(c, id)?;
            let found = c
                .query(
                    "SELECT data FROM journals WHERE job_id = $1 ORDER BY first_ms, session",
                    &[&id],
                )
                .map_err(|e| self.db(&e))?;
            found
                .iter()
                .map(|r| rows::record(&self.shown, &id, "journals", &r.get::<_, String>(0)))
                .collect()
        })
    }
}
