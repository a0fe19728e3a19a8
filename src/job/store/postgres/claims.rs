//! Claims on PostgreSQL: one statement picks the jobs waiting longest with `SKIP LOCKED` and
//! leases them, up to [`CLAIM_BATCH`] at a time.

use super::schema::CLAIMABLE;
use super::{PostgresStore, number};
use crate::job::JobState;
use crate::job::store::rows::{self, int};
use crate::job::store::{Claim, JobStoreError, Lease};

/// The most steps one claim statement takes ([`crate::job::store::JobStore::claim_up_to`] asks again for more).
const CLAIM_BATCH: usize = 16;

impl PostgresStore {
    /// Claims up to `max` steps for `runner`, [`CLAIM_BATCH`] a statement, until `max` or
    /// until a statement finds fewer than it asked for.
    pub(super) fn claims_in_batches(
        &self,
        runner: &str,
        ttl_ms: u64,
        max: usize,
    ) -> Result<Vec<Claim>, JobStoreError> {
        let mut claims: Vec<Claim> = Vec::new();
        while claims.len() < max {
            let asked = (max - claims.len()).min(CLAIM_BATCH);
            let got = self.claims(runner, None, ttl_ms, asked)?;
            let short = got.len() < asked;
            claims.extend(got);
            if short {
                break;
            }
        }
        Ok(claims)
    }

    /// Claims up to `max` steps for `runner` (of job `only` when given) in one statement,
    /// atomic by itself: the store's now (the database's clock unless a test clock is
    /// given), the pick, the leases. SKIP LOCKED: runners claiming at once each take
    /// different jobs, none waits for another's row. A claim of any jobs and of one job are
    /// two statements: each has one plan, which the server keeps (a statement for both,
    /// `$2 IS NULL OR id = $2`, would be planned afresh at every call, costing more than
    /// running it). The claims come oldest first.
    pub(super) fn claims(
        &self,
        runner: &str,
        only: Option<&str>,
        ttl_ms: u64,
        max: usize,
    ) -> Result<Vec<Claim>, JobStoreError> {
        let clock = self.clock.as_ref().map(|c| int(c.now_ms()));
        // The limit is written into the statement, not passed: with a parameter the server's
        // generic plan cannot count on a small limit and stops walking the claimable index
        // in order (measured: half again the server's time a claim). One statement a batch
        // size, up to `CLAIM_BATCH`.
        let max = max.clamp(1, CLAIM_BATCH);
        self.with(|c| {
            let only = match only {
                Some(id) => Some(self.resolve(c, id)?),
                None => None,
            };
            let rows = match &only {
                None => c.query(
                    &format!(
                        "WITH t AS (SELECT COALESCE($1::bigint,
                                 (extract(epoch FROM clock_timestamp()) * 1000)::bigint) AS now),
                         picked AS (
                             SELECT jobs.id, jobs.state FROM jobs, t
                             WHERE {CLAIMABLE}
                               AND (lease_owner IS NULL
                                    OR (lease_until < t.now AND lease_owner <> $2))
                             ORDER BY updated_ms, id LIMIT {max}
                             FOR UPDATE OF jobs SKIP LOCKED)
                         UPDATE jobs j SET lease_owner = $2, lease_until = t.now + $3,
                             fence = j.fence + 1
                         FROM picked, t WHERE j.id = picked.id
                         RETURNING j.id, picked.state, j.fence, j.lease_until, j.data"
                    ),
                    &[&clock, &runner, &int(ttl_ms)],
                ),
                Some(id) => c.query(
                    &format!(
                        "WITH t AS (SELECT COALESCE($1::bigint,
                                 (extract(epoch FROM clock_timestamp()) * 1000)::bigint) AS now),
                         picked AS (
                             SELECT jobs.id, jobs.state FROM jobs, t
                             WHERE id = $4 AND {CLAIMABLE}
                               AND (lease_owner IS NULL
                                    OR (lease_until < t.now AND lease_owner <> $2))
                             FOR UPDATE OF jobs SKIP LOCKED)
                         UPDATE jobs j SET lease_owner = $2, lease_until = t.now + $3,
                             fence = j.fence + 1
                         FROM picked, t WHERE j.id = picked.id
                         RETURNING j.id, picked.state, j.fence, j.lease_until, j.data"
                    ),
                    &[&clock, &runner, &int(ttl_ms), id],
                ),
            }
            .map_err(|e| self.db(&e))?;
            let mut claims = rows
                .into_iter()
                .map(|row| {
                    let (id, state, fence, until, data): (String, String, i64, i64, String) =
                        (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
                    // Claimable states are this version's names: no legacy name to migrate.
                    let (now_state, _) = rows::state(&self.shown, &id, &state, false)?;
                    let job = rows::job(&self.shown, &id, now_state, &data)?;
                    Ok(Claim {
                        job,
                        reclaimed: state != JobState::Pending.as_str(),
                        lease: Lease {
                            job: id,
                            runner: runner.to_string(),
                            fence: number(fence),
                            until_ms: number(until),
                        },
                    })
                })
                .collect::<Result<Vec<_>, JobStoreError>>()?;
            // `RETURNING` keeps no order: the one the pick had.
            claims
                .sort_by(|a, b| (a.job.updated_ms, &a.job.id).cmp(&(b.job.updated_ms, &b.job.id)));
            Ok(claims)
        })
    }
}
