//! [`Runners`] for [`PostgresStore`]: the runners' heartbeat rows, dated by the database's clock.

use super::{PostgresStore, number};
use crate::job::store::rows::int;
use crate::job::store::{JobStoreError, Lease, RunnerBeat, RunnerRow, RunnerWait, Runners};

impl Runners for PostgresStore {
    fn runner_beat(&self, beat: &RunnerBeat) -> Result<(), JobStoreError> {
        self.with(|c| {
            let now = self.now(c)?;
            c.execute(
                "INSERT INTO runners (runner, host, pid, started_ms, beat_ms, ttl_ms, waiting)
                 VALUES ($1, $2, $3, $4, $4, $5, $6)
                 ON CONFLICT (runner) DO UPDATE SET beat_ms = $4, ttl_ms = $5, waiting = $6",
                &[
                    &beat.runner,
                    &beat.host,
                    &i64::from(beat.pid),
                    &now,
                    &int(beat.ttl_ms),
                    &beat.waiting.as_ref().map(RunnerWait::to_column),
                ],
            )
            .map_err(|e| self.db(&e))?;
            Ok(())
        })
    }

    fn runner_gone(&self, runner: &str) -> Result<(), JobStoreError> {
        self.with(|c| {
            c.execute("DELETE FROM runners WHERE runner = $1", &[&runner])
                .map_err(|e| self.db(&e))?;
            Ok(())
        })
    }

    fn runners(&self) -> Result<Vec<RunnerRow>, JobStoreError> {
        self.with(|c| {
            let held: Vec<Lease> = c
                .query(
                    "SELECT id, lease_owner, fence, lease_until FROM jobs
                     WHERE lease_owner IS NOT NULL ORDER BY id",
                    &[],
                )
                .map_err(|e| self.db(&e))?
                .iter()
                .map(|r| Lease {
                    job: r.get(0),
                    runner: r.get(1),
                    fence: number(r.get(2)),
                    until_ms: number(r.get::<_, Option<i64>>(3).unwrap_or(0)),
                })
                .collect();
            let rows = c
                .query(
                    "SELECT runner, host, pid, started_ms, beat_ms, ttl_ms, waiting FROM runners
                     ORDER BY started_ms, runner",
                    &[],
                )
                .map_err(|e| self.db(&e))?;
            Ok(rows
                .iter()
                .map(|r| {
                    let runner: String = r.get(0);
                    RunnerRow {
                        leases: held
                            .iter()
                            .filter(|l| l.runner == runner)
                            .cloned()
                            .collect(),
                        host: r.get(1),
                        pid: u32::try_from(r.get::<_, i64>(2)).unwrap_or(0),
                        started_ms: number(r.get(3)),
                        beat_ms: number(r.get(4)),
                        ttl_ms: number(r.get(5)),
                        waiting: RunnerWait::from_column(r.get::<_, Option<String>>(6).as_deref()),
                        runner,
                    }
                })
                .collect())
        })
    }
}
