//! [`Runners`] for [`SqliteStore`]: the runners' heartbeat rows, dated by the store's clock.

use super::{SqliteStore, int, uint};
use crate::job::store::{JobStoreError, Lease, RunnerBeat, RunnerRow, RunnerWait, Runners};
use rusqlite::params;

impl Runners for SqliteStore {
    fn runner_beat(&self, beat: &RunnerBeat) -> Result<(), JobStoreError> {
        let now = int(self.clock.now_ms());
        self.write(|tx| {
            tx.execute(
                "INSERT INTO runners (runner, host, pid, started_ms, beat_ms, ttl_ms, waiting)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)
                 ON CONFLICT (runner) DO UPDATE SET beat_ms = ?4, ttl_ms = ?5, waiting = ?6",
                params![
                    beat.runner,
                    beat.host,
                    beat.pid,
                    now,
                    int(beat.ttl_ms),
                    beat.waiting.as_ref().map(RunnerWait::to_column)
                ],
            )
            .map_err(|e| self.db(e))?;
            Ok(())
        })
    }

    fn runner_gone(&self, runner: &str) -> Result<(), JobStoreError> {
        self.write(|tx| {
            tx.execute("DELETE FROM runners WHERE runner = ?1", [runner])
                .map_err(|e| self.db(e))?;
            Ok(())
        })
    }

    fn runners(&self) -> Result<Vec<RunnerRow>, JobStoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT runner, host, pid, started_ms, beat_ms, ttl_ms, waiting FROM runners
                 ORDER BY started_ms, runner",
            )
            .map_err(|e| self.db(e))?;
        type Row = (String, String, i64, i64, i64, i64, Option<String>);
        let rows: Vec<Row> = stmt
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        let mut leases = conn
            .prepare(
                "SELECT id, lease_owner, fence, lease_until FROM jobs
                 WHERE lease_owner IS NOT NULL ORDER BY id",
            )
            .map_err(|e| self.db(e))?;
        let held: Vec<Lease> = leases
            .query_map([], |r| {
                Ok(Lease {
                    job: r.get(0)?,
                    runner: r.get(1)?,
                    fence: uint(r.get(2)?),
                    until_ms: uint(r.get::<_, Option<i64>>(3)?.unwrap_or(0)),
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.db(e))?;
        Ok(rows
            .into_iter()
            .map(
                |(runner, host, pid, started, beat, ttl, waiting)| RunnerRow {
                    leases: held
                        .iter()
                        .filter(|l| l.runner == runner)
                        .cloned()
                        .collect(),
                    runner,
                    host,
                    pid: u32::try_from(pid).unwrap_or(0),
                    started_ms: uint(started),
                    beat_ms: uint(beat),
                    ttl_ms: uint(ttl),
                    waiting: RunnerWait::from_column(waiting.as_deref()),
                },
            )
            .collect())
    }
}
