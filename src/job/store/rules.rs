//! The rules every store keeps the same way, whatever its SQL: what a runner's save does to
//! the job's lease, when a lease may write a job, and when a human's verb still applies. Each
//! backend asks these functions and only turns the answers into statements, so SQLite and
//! PostgreSQL cannot drift apart on them (they had: each spelled them out on its own).

use super::{JobStoreError, Lease};
use crate::job::JobState;
use crate::job::record::Job;

/// The refusal of a write under `lease`: it is no longer the job's current one.
pub(crate) fn fenced(lease: &Lease) -> JobStoreError {
    JobStoreError::Fenced {
        id: lease.job.clone(),
        fence: lease.fence,
    }
}

/// What a runner's save of a job (an advance) does besides writing the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Save {
    /// The job comes to rest, and a job at rest holds no lease: the save releases it. The
    /// fence stays; the next claim raises it.
    pub(crate) releases: bool,
    /// The job is back to PENDING (a retry after a failure): work for any runner, which the
    /// store wakes.
    pub(crate) wakes: bool,
}

/// Judges a runner's save of `job` under `lease` before anything is written: a lease of
/// another job cannot write this one ([`JobStoreError::Fenced`]); whether the lease is still
/// current is the store's to check, in the write itself.
pub(crate) fn save(lease: &Lease, job: &Job) -> Result<Save, JobStoreError> {
    if job.id != lease.job {
        return Err(fenced(lease));
    }
    let state = job.state();
    Ok(Save {
        releases: state.is_resting(),
        wakes: state == JobState::Pending,
    })
}

/// Whether a claim of a job that was in state `was` (its stored name) recovers it: a job
/// claimed in any state but PENDING was in a transient one under an expired lease — its
/// runner died mid-step.
pub(crate) fn reclaimed(was: &str) -> bool {
    was != JobState::Pending.as_str()
}

/// Whether a human's verb, judged against `expected` with the job as `seen` (as the verb
/// leaves it: its id and the step it was judged at), still applies to the job as the store
/// holds it now, `found`: [`JobStoreError::Conflict`] when the job moved to another state,
/// [`JobStoreError::Stepped`] when a runner stepped it again meanwhile (it may have made a
/// new result), though it rests in the same state. Checked in this order.
pub(crate) fn verb_applies(
    seen: &Job,
    expected: JobState,
    found: &Job,
) -> Result<(), JobStoreError> {
    if found.state() != expected {
        return Err(JobStoreError::Conflict {
            id: seen.id.clone(),
            expected,
            now: found.state(),
        });
    }
    if found.steps != seen.steps {
        return Err(JobStoreError::Stepped {
            id: seen.id.clone(),
            seen: seen.steps,
            now: found.steps,
        });
    }
    Ok(())
}

/// Whether a human's verb may take job `id` from the runner holding `lease`: only when the
/// lease is not live at the store's `now_ms` — the store's clock, never the caller's — or the
/// verb revokes it (cancel); [`JobStoreError::Busy`] otherwise.
pub(crate) fn verb_may_take(
    id: &str,
    lease: Option<Lease>,
    now_ms: u64,
    revoke: bool,
) -> Result<(), JobStoreError> {
    match lease {
        Some(lease) if lease.live_at(now_ms) && !revoke => Err(JobStoreError::Busy {
            id: id.to_string(),
            runner: lease.runner,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::record::JobSpec;

    fn job(id: &str, state: JobState, steps: u32) -> Job {
        let mut j = Job::new(
            id,
            JobSpec::new("task", "/src", "claude", "codex"),
            state,
            1,
        );
        j.steps = steps;
        j
    }

    fn lease(job: &str, until_ms: u64) -> Lease {
        Lease {
            job: job.into(),
            runner: "r1".into(),
            fence: 3,
            until_ms,
        }
    }

    #[test]
    fn a_save_at_rest_releases_the_lease_and_back_to_pending_wakes_runners() {
        let l = lease("j1", 10);
        let at = |state| save(&l, &job("j1", state, 0)).unwrap();
        assert_eq!(
            at(JobState::Executing),
            Save {
                releases: false,
                wakes: false
            }
        );
        assert_eq!(
            at(JobState::Pending),
            Save {
                releases: true,
                wakes: true
            }
        );
        assert_eq!(
            at(JobState::ApprovalRequired),
            Save {
                releases: true,
                wakes: false
            }
        );
        for state in [
            JobState::Provisioning,
            JobState::Recovering,
            JobState::Harvesting,
        ] {
            assert!(!at(state).releases, "{state}");
        }
        for state in [
            JobState::Success,
            JobState::InterventionRequired,
            JobState::Canceled,
        ] {
            assert!(at(state).releases, "{state}");
        }
    }

    #[test]
    fn a_lease_of_another_job_cannot_save_this_one() {
        let e = save(&lease("j2", 10), &job("j1", JobState::Executing, 0)).unwrap_err();
        assert!(
            matches!(e, JobStoreError::Fenced { ref id, fence: 3 } if id == "j2"),
            "{e:?}"
        );
    }

    #[test]
    fn a_claim_recovers_every_state_but_pending() {
        assert!(!reclaimed(JobState::Pending.as_str()));
        assert!(reclaimed(JobState::Executing.as_str()));
        assert!(reclaimed(JobState::Harvesting.as_str()));
    }

    #[test]
    fn a_verb_applies_only_to_the_state_and_the_step_it_was_judged_at() {
        let seen = job("j1", JobState::Success, 2);
        let found = job("j1", JobState::ApprovalRequired, 2);
        assert!(verb_applies(&seen, JobState::ApprovalRequired, &found).is_ok());
        // The state is checked first: a job that moved and stepped is a conflict.
        let moved = job("j1", JobState::Executing, 3);
        let e = verb_applies(&seen, JobState::ApprovalRequired, &moved).unwrap_err();
        assert!(
            matches!(
                e,
                JobStoreError::Conflict {
                    ref id,
                    expected: JobState::ApprovalRequired,
                    now: JobState::Executing
                } if id == "j1"
            ),
            "{e:?}"
        );
        let stepped = job("j1", JobState::ApprovalRequired, 3);
        let e = verb_applies(&seen, JobState::ApprovalRequired, &stepped).unwrap_err();
        assert!(
            matches!(e, JobStoreError::Stepped { ref id, seen: 2, now: 3 } if id == "j1"),
            "{e:?}"
        );
    }

    #[test]
    fn a_verb_takes_a_job_from_a_live_lease_only_by_revoking_it() {
        assert!(verb_may_take("j1", None, 50, false).is_ok());
        // Live through its last millisecond, as a claim judges it.
        let e = verb_may_take("j1", Some(lease("j1", 50)), 50, false).unwrap_err();
        assert!(
            matches!(e, JobStoreError::Busy { ref id, ref runner } if id == "j1" && runner == "r1"),
            "{e:?}"
        );
        assert!(verb_may_take("j1", Some(lease("j1", 50)), 50, true).is_ok());
        assert!(verb_may_take("j1", Some(lease("j1", 49)), 50, false).is_ok());
    }
}
