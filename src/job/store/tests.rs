//! The store contract: one suite, two stores. Each contract test is a function of a
//! `&dyn JobStore` and runs twice — `on_sqlite::NAME` on a fresh file, `on_postgres::NAME` on a
//! fresh database of a temporary PostgreSQL cluster ([`postgres::postgres`]; skipped only where
//! PostgreSQL is not installed and this is not CI) — so both stores are held to the same words.
//! Both take the test's [`CLOCK`], so lease expiry is tested without waiting. What only one
//! store has (SQLite's file, PostgreSQL's server clock and connections) is tested beside.

/// Runs each named contract test (a `fn NAME(s: &dyn JobStore)` of the invoking module) on
/// both stores, as `on_sqlite::NAME` and `on_postgres::NAME`. A contract function not named
/// here is never called, which the compiler reports (dead code).
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        /// The contract tests of this module on a fresh SQLite file.
        mod on_sqlite {
            $(
                #[test]
                fn $name() {
                    let (_dir, s) = $crate::job::store::tests::store();
                    super::$name(&s);
                }
            )*
        }

        /// The contract tests of this module on a fresh PostgreSQL database.
        #[cfg(feature = "postgres")]
        mod on_postgres {
            $(
                #[test]
                fn $name() {
                    let Some((_url, s)) = $crate::job::store::tests::postgres::postgres() else {
                        return;
                    };
                    super::$name(&s);
                }
            )*
        }
    };
}

mod concurrency;
mod decisions;
mod notifications;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod rows;
mod sessions;
mod tokens;
mod verbs;

use super::*;
use crate::job::record::{ArtifactVersion, AuditEntry, Job, JobSpec, Risk, Transition};
use crate::job::{JobState, JobTrigger};
use crate::redact::Redacted;

on_both_stores!(
    create_then_get_by_id_and_prefix_and_the_misses_say_why,
    claim_takes_the_job_waiting_longest_and_leaves_its_state,
    claim_up_to_fills_free_slots_with_the_jobs_waiting_longest,
    an_expired_transient_job_is_reclaimed_and_the_old_lease_writes_nothing,
    a_runner_never_claims_back_a_job_its_own_lease_names_even_expired,
    a_lease_handed_back_mid_step_is_claimable_at_once_and_a_stale_one_is_refused,
    a_resting_state_releases_the_lease_and_history_keeps_every_move,
    artifacts_are_appended_with_increasing_versions_whatever_version_is_passed,
    decide_refuses_a_moved_job_and_a_busy_one_unless_revoking,
    decide_may_take_a_job_whose_lease_expired_without_revoking,
    the_audit_trail_is_numbered_store_wide_and_filtered_by_job,
    list_shows_summaries_oldest_first_and_filters_by_state,
    record_appends_to_the_trail_and_moves_nothing,
    leases_are_judged_by_the_stores_clock_not_the_callers,
    claiming_a_job_that_does_not_exist_says_so,
);

/// `value` as a store write takes it (a job of the built-in policy's redactor).
fn sealed<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> Redacted<T> {
    crate::job::redactor(None).seal(value).unwrap()
}

const TTL: u64 = 30_000;

pub(super) fn spec(task: &str) -> JobSpec {
    let mut spec = JobSpec::new(task, "/src", "claude", "codex");
    spec.risk = Risk::Medium;
    spec
}

pub(super) fn job(id: &str, state: JobState, at: u64) -> Job {
    Job::new(id, spec(&format!("task of {id}\nsecond line")), state, at)
}

pub(super) fn entry(id: &str, action: &str, at: u64) -> AuditEntry {
    AuditEntry {
        seq: 0,
        at_ms: at,
        actor: "ann".into(),
        entity_type: "job".into(),
        entity_id: id.to_string(),
        // The stored word, read as the store reads it.
        action: serde_json::from_value(serde_json::Value::from(action)).expect("an action"),
        metadata: Default::default(),
    }
}

pub(super) fn moved(from: JobState, to: JobState, trigger: JobTrigger, at: u64) -> Transition {
    Transition {
        from,
        to,
        trigger,
        reason: None,
        at_ms: at,
        by: "runner-test".into(),
    }
}

fn artifact(step: u32) -> ArtifactVersion {
    ArtifactVersion {
        version: 99,
        step,
        at_ms: 5,
        session: None,
        outcome: "COMPLETED".into(),
        commit: None,
        diff_hash: format!("hash-{step}"),
        diff_stat: String::new(),
        files: vec![],
        final_message: String::new(),
        verdict: None,
        confidence: None,
        panel: vec![],
    }
}

thread_local! {
    /// The store's clock in this test (each test runs on a thread of its own).
    static CLOCK: std::sync::Arc<ManualClock> = std::sync::Arc::new(ManualClock::new(0));
}

/// A store whose leases are judged by this test's [`CLOCK`].
pub(super) fn store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = CLOCK.with(std::sync::Arc::clone);
    let store =
        SqliteStore::open_with_clock(dir.path().join("deep/er/jobs.db"), clock).expect("open");
    (dir, store)
}

/// `s` with its clock set to `ms`: what the next call is judged at.
pub(super) fn at<S: JobStore + ?Sized>(s: &S, ms: u64) -> &S {
    CLOCK.with(|c| c.set(ms));
    s
}

/// Creates a job in `state`, created and last changed at `at`.
pub(super) fn add(store: &(impl JobStore + ?Sized), id: &str, state: JobState, at: u64) -> Job {
    let j = job(id, state, at);
    store
        .create(&sealed(&j), &sealed(&entry(id, "create", at)))
        .expect("create");
    j
}

/// Moves a claimed job on as a runner does, returning the job as written.
fn step(store: &(impl JobStore + ?Sized), lease: &Lease, mut j: Job, to: JobState, at: u64) -> Job {
    let t = moved(j.state(), to, JobTrigger::Step, at);
    j.phase = crate::job::JobPhase::of(to, None, None);
    j.updated_ms = at;
    store
        .advance(lease, &sealed(&j), Some(&sealed(&t)))
        .expect("advance");
    j
}

fn create_then_get_by_id_and_prefix_and_the_misses_say_why(s: &dyn JobStore) {
    let a = add(s, "job-aaaa0001", JobState::Pending, 10);
    add(s, "job-aaaa0002", JobState::Draft, 11);
    add(s, "job-bbbb0001", JobState::Draft, 12);

    assert_eq!(s.get("job-aaaa0001").unwrap(), a);
    assert_eq!(s.get("job-bbbb").unwrap().id, "job-bbbb0001");
    match s.get("job-aaaa").unwrap_err() {
        JobStoreError::Ambiguous { id, matches } => {
            assert_eq!(id, "job-aaaa");
            assert_eq!(matches, ["job-aaaa0001", "job-aaaa0002"]);
        }
        other => panic!("{other:?}"),
    }
    let missing = s.get("job-cc").unwrap_err();
    assert_eq!(
        missing,
        JobStoreError::NotFound {
            id: "job-cc".into()
        }
    );
    assert!(
        missing.to_string().contains("oneshot job list"),
        "{missing}"
    );

    let dup = s
        .create(&sealed(&a), &sealed(&entry(&a.id, "create", 13)))
        .unwrap_err();
    assert_eq!(dup, JobStoreError::Exists { id: a.id.clone() });
    assert!(dup.to_string().contains("exists already"), "{dup}");
    // The refused create wrote no audit entry either.
    assert_eq!(s.audit(Some("job-aaaa0001")).unwrap().len(), 1);
}

fn claim_takes_the_job_waiting_longest_and_leaves_its_state(s: &dyn JobStore) {
    add(s, "job-young", JobState::Pending, 300);
    add(s, "job-old", JobState::Pending, 100);
    add(s, "job-resting", JobState::ApprovalRequired, 50);
    add(s, "job-draft", JobState::Draft, 60);

    let c = at(s, 1_000)
        .claim("r1", None, TTL)
        .unwrap()
        .expect("a claim");
    assert_eq!(c.job.id, "job-old");
    assert_eq!(c.job.state(), JobState::Pending);
    assert!(!c.reclaimed);
    assert_eq!(
        c.lease,
        Lease {
            job: "job-old".into(),
            runner: "r1".into(),
            fence: 1,
            until_ms: 1_000 + TTL,
        }
    );
    assert_eq!(s.lease("job-old").unwrap(), Some(c.lease.clone()));
    assert_eq!(s.get("job-old").unwrap().state(), JobState::Pending);

    // The old one is leased now (live): the next claim takes the young one, then nothing.
    let c2 = at(s, 1_001)
        .claim("r2", None, TTL)
        .unwrap()
        .expect("a second claim");
    assert_eq!(c2.job.id, "job-young");
    assert_eq!(at(s, 1_002).claim("r3", None, TTL).unwrap(), None);
    // A resting job other than PENDING, or a leased one, is not claimable by id either.
    assert_eq!(
        at(s, 1_002).claim("r3", Some("job-resting"), TTL).unwrap(),
        None
    );
    assert_eq!(
        at(s, 1_002).claim("r3", Some("job-old"), TTL).unwrap(),
        None
    );
    // Once the PENDING job's lease expires, it may be claimed again, with a higher fence.
    let again = at(s, 1_000 + TTL + 1)
        .claim("r3", Some("job-o"), TTL)
        .unwrap()
        .unwrap();
    assert_eq!((again.lease.fence, again.reclaimed), (2, false));
}

fn claim_up_to_fills_free_slots_with_the_jobs_waiting_longest(s: &dyn JobStore) {
    for (i, at_ms) in [500, 100, 400, 200, 300].into_iter().enumerate() {
        add(s, &format!("job-{i}"), JobState::Pending, at_ms);
    }
    add(s, "job-resting", JobState::ApprovalRequired, 50);
    let first = at(s, 1_000).claim_up_to("r1", TTL, 3).unwrap();
    let ids: Vec<&str> = first.iter().map(|c| c.job.id.as_str()).collect();
    assert_eq!(ids, ["job-1", "job-3", "job-4"], "oldest first");
    for c in &first {
        assert_eq!(c.lease.runner, "r1");
        assert_eq!((c.lease.fence, c.lease.until_ms), (1, 1_000 + TTL));
        assert!(!c.reclaimed);
        assert_eq!(s.lease(&c.job.id).unwrap(), Some(c.lease.clone()));
    }
    // More slots than jobs: the rest, then nothing.
    let rest = at(s, 1_001).claim_up_to("r2", TTL, 10).unwrap();
    let ids: Vec<&str> = rest.iter().map(|c| c.job.id.as_str()).collect();
    assert_eq!(ids, ["job-2", "job-0"]);
    assert!(s.claim_up_to("r3", TTL, 4).unwrap().is_empty());
    // Expired leases are claimable again (not by their own runner), as one claim would.
    let again = at(s, 2_002 + TTL).claim_up_to("r1", TTL, 10).unwrap();
    let ids: Vec<&str> = again.iter().map(|c| c.job.id.as_str()).collect();
    assert_eq!(ids, ["job-2", "job-0"]);
    assert!(again.iter().all(|c| c.lease.fence == 2));
    assert!(s.claim_up_to("r1", TTL, 0).unwrap().is_empty());
}

fn an_expired_transient_job_is_reclaimed_and_the_old_lease_writes_nothing(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Pending, 100);
    let old = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    let j = step(s, &old, j, JobState::Executing, 1_100);
    let live = at(s, 2_000).heartbeat(&old, TTL).unwrap();
    assert_eq!(live.until_ms, 2_000 + TTL);
    assert_eq!(s.lease("job-1").unwrap(), Some(live.clone()));

    // Live: nobody else may take it — to its last millisecond, as every reader says it.
    assert_eq!(at(s, 2_000 + TTL).claim("r2", None, TTL).unwrap(), None);
    assert!(live.live_at(2_000 + TTL));
    // Expired: r2 recovers it.
    assert!(!live.live_at(2_001 + TTL));
    let c = at(s, 2_001 + TTL).claim("r2", None, TTL).unwrap().unwrap();
    assert!(c.reclaimed);
    assert_eq!(c.job, j);
    assert_eq!(c.lease.fence, old.fence + 1);

    // r1 wakes up: every write it tries is refused, and none lands.
    let mut late = j.clone();
    late.phase = crate::job::JobPhase::of(JobState::Harvesting, None, None);
    let t = moved(
        JobState::Executing,
        JobState::Harvesting,
        JobTrigger::Completed,
        9,
    );
    let fenced = JobStoreError::Fenced {
        id: "job-1".into(),
        fence: old.fence,
    };
    assert_eq!(
        s.advance(&live, &sealed(&late), Some(&sealed(&t)))
            .unwrap_err(),
        fenced
    );
    assert_eq!(at(s, 9_999).heartbeat(&live, TTL).unwrap_err(), fenced);
    assert_eq!(
        s.add_artifact(&live, &sealed(&artifact(1))).unwrap_err(),
        fenced
    );
    assert!(
        fenced.to_string().contains("nothing was written"),
        "{fenced}"
    );
    assert_eq!(s.get("job-1").unwrap(), j);
    assert_eq!(s.history("job-1").unwrap().len(), 1);
    assert!(s.artifacts("job-1").unwrap().is_empty());
    assert_eq!(s.lease("job-1").unwrap(), Some(c.lease));
}

fn a_runner_never_claims_back_a_job_its_own_lease_names_even_expired(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Pending, 100);
    let held = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    step(s, &held, j, JobState::Executing, 1_100);
    let late = 1_001 + TTL;
    // Expired, but r1's: r1 may still be driving it (a late heartbeat), so not r1's to claim,
    // by id or not.
    assert_eq!(at(s, late).claim("r1", None, TTL).unwrap(), None);
    assert_eq!(at(s, late).claim("r1", Some("job-1"), TTL).unwrap(), None);
    assert_eq!(s.lease("job-1").unwrap(), Some(held.clone()));
    // r1's late heartbeat still holds it.
    let renewed = at(s, late).heartbeat(&held, TTL).unwrap();
    assert_eq!(renewed.fence, held.fence);
    // Any other runner recovers it once it expires.
    let other = at(s, late + TTL + 1)
        .claim("r2", None, TTL)
        .unwrap()
        .unwrap();
    assert!(other.reclaimed);
    assert_eq!(other.lease.fence, held.fence + 1);
}

fn a_lease_handed_back_mid_step_is_claimable_at_once_and_a_stale_one_is_refused(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Pending, 100);
    let held = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    let j = step(s, &held, j, JobState::Executing, 1_100);
    s.release(&held).unwrap();
    assert_eq!(s.lease("job-1").unwrap(), None);
    // Long before the lease would have expired, another runner recovers the job as it was.
    let c = at(s, 1_200).claim("r2", None, TTL).unwrap().unwrap();
    assert!(c.reclaimed);
    assert_eq!(c.job, j);
    assert_eq!(c.lease.fence, held.fence + 1);
    // The old lease can neither hand back the new one nor write.
    let fenced = JobStoreError::Fenced {
        id: "job-1".into(),
        fence: held.fence,
    };
    assert_eq!(s.release(&held).unwrap_err(), fenced);
    assert_eq!(s.lease("job-1").unwrap(), Some(c.lease));
}

fn a_resting_state_releases_the_lease_and_history_keeps_every_move(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Pending, 100);
    let lease = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    let mut j = step(s, &lease, j, JobState::Provisioning, 1_001);
    j.steps = 1;
    let j = step(s, &lease, j, JobState::Executing, 1_002);
    // No transition: the job's data changes, the history does not.
    let mut quiet = j.clone();
    quiet.set_session("sess-1".into());
    s.advance(&lease, &sealed(&quiet), None).unwrap();
    let j = step(s, &lease, quiet, JobState::ApprovalRequired, 1_003);

    assert_eq!(s.get("job-1").unwrap(), j);
    assert_eq!(s.lease("job-1").unwrap(), None);
    // Released: the lease is gone, so the runner can neither write nor heartbeat.
    assert!(matches!(
        at(s, 1_004).heartbeat(&lease, TTL),
        Err(JobStoreError::Fenced { .. })
    ));
    let states: Vec<_> = s.history("job").unwrap().iter().map(|t| t.to).collect();
    assert_eq!(
        states,
        [
            JobState::Provisioning,
            JobState::Executing,
            JobState::ApprovalRequired
        ]
    );
    // A lease of one job cannot write another.
    let other = add(s, "job-2", JobState::Draft, 5);
    assert!(matches!(
        s.advance(&lease, &sealed(&other), None),
        Err(JobStoreError::Fenced { .. })
    ));
}

fn artifacts_are_appended_with_increasing_versions_whatever_version_is_passed(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Pending, 100);
    add(s, "job-2", JobState::Pending, 200);
    let l1 = at(s, 1_000)
        .claim("r1", Some("job-1"), TTL)
        .unwrap()
        .unwrap()
        .lease;
    let l2 = at(s, 1_000)
        .claim("r1", Some("job-2"), TTL)
        .unwrap()
        .unwrap()
        .lease;
    assert_eq!(s.add_artifact(&l1, &sealed(&artifact(1))).unwrap(), 1);
    assert_eq!(s.add_artifact(&l2, &sealed(&artifact(1))).unwrap(), 1);
    assert_eq!(s.add_artifact(&l1, &sealed(&artifact(2))).unwrap(), 2);
    // Released and claimed again (a later step): versions go on, the old ones stay.
    step(s, &l1, j, JobState::Pending, 1_001);
    let l1 = at(s, 1_002)
        .claim("r2", Some("job-1"), TTL)
        .unwrap()
        .unwrap()
        .lease;
    assert_eq!(s.add_artifact(&l1, &sealed(&artifact(3))).unwrap(), 3);

    let got = s.artifacts("job-1").unwrap();
    let seen: Vec<_> = got
        .iter()
        .map(|a| (a.version, a.diff_hash.as_str()))
        .collect();
    assert_eq!(seen, [(1, "hash-1"), (2, "hash-2"), (3, "hash-3")]);
    assert_eq!(s.artifacts("job-2").unwrap().len(), 1);
}

/// A human verb on job-1: `expected` → `to`.
fn verb(
    s: &dyn JobStore,
    expected: JobState,
    to: JobState,
    revoke: bool,
    at: u64,
) -> Result<Job, JobStoreError> {
    let mut j = s.get("job-1")?;
    j.phase = crate::job::JobPhase::of(to, None, None);
    j.updated_ms = at;
    let t = moved(expected, to, JobTrigger::Cancel, at);
    let a = entry("job-1", "cancel", at);
    self::at(s, at).decide(&Decision {
        job: &sealed(&j),
        expected,
        transition: Some(&sealed(&t)),
        audit: &sealed(&a),
        revoke,
    })?;
    Ok(j)
}

fn decide_refuses_a_moved_job_and_a_busy_one_unless_revoking(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Pending, 100);
    let conflict = verb(s, JobState::ApprovalRequired, JobState::Success, false, 500).unwrap_err();
    assert_eq!(
        conflict,
        JobStoreError::Conflict {
            id: "job-1".into(),
            expected: JobState::ApprovalRequired,
            now: JobState::Pending,
        }
    );
    assert!(
        conflict.to_string().contains("run the verb again"),
        "{conflict}"
    );

    let lease = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    step(s, &lease, j, JobState::Executing, 1_001);
    let busy = verb(s, JobState::Executing, JobState::Canceled, false, 2_000).unwrap_err();
    assert_eq!(
        busy,
        JobStoreError::Busy {
            id: "job-1".into(),
            runner: "r1".into(),
        }
    );
    // Nothing of the refused verbs was written.
    assert_eq!(s.history("job-1").unwrap().len(), 1);
    assert_eq!(s.audit(Some("job-1")).unwrap().len(), 1);

    let canceled = verb(s, JobState::Executing, JobState::Canceled, true, 2_001).unwrap();
    assert_eq!(s.get("job-1").unwrap(), canceled);
    assert_eq!(s.lease("job-1").unwrap(), None);
    assert!(matches!(
        at(s, 2_002).heartbeat(&lease, TTL),
        Err(JobStoreError::Fenced { .. })
    ));
    let audit = s.audit(Some("job-1")).unwrap();
    assert_eq!(
        audit.iter().map(|a| a.action.as_str()).collect::<Vec<_>>(),
        ["create", "cancel"]
    );
    assert_eq!(
        s.history("job-1").unwrap().last().unwrap().to,
        JobState::Canceled
    );
}

fn decide_may_take_a_job_whose_lease_expired_without_revoking(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Pending, 100);
    let lease = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    step(s, &lease, j, JobState::Executing, 1_001);
    verb(
        s,
        JobState::Executing,
        JobState::Suspended,
        false,
        1_000 + TTL + 1,
    )
    .unwrap();
    assert_eq!(s.get("job-1").unwrap().state(), JobState::Suspended);
    // The fence rose: the runner's lease is dead even before any reclaim.
    assert!(matches!(
        s.add_artifact(&lease, &sealed(&artifact(1))),
        Err(JobStoreError::Fenced { .. })
    ));
}

fn the_audit_trail_is_numbered_store_wide_and_filtered_by_job(s: &dyn JobStore) {
    add(s, "job-1", JobState::Pending, 1);
    add(s, "job-2", JobState::Pending, 2);
    add(s, "job-3", JobState::Pending, 3);
    let all = s.audit(None).unwrap();
    let seen: Vec<_> = all.iter().map(|a| (a.seq, a.entity_id.as_str())).collect();
    assert_eq!(seen, [(1, "job-1"), (2, "job-2"), (3, "job-3")]);
    let two = s.audit(Some("job-2")).unwrap();
    assert_eq!(two.len(), 1);
    assert_eq!(two[0].seq, 2);
    assert!(matches!(
        s.audit(Some("nope")),
        Err(JobStoreError::NotFound { .. })
    ));
}

fn list_shows_summaries_oldest_first_and_filters_by_state(s: &dyn JobStore) {
    add(s, "job-b", JobState::Pending, 200);
    let mut long = job("job-a", JobState::Draft, 100);
    long.spec.task = format!("  {}\nmore", "x".repeat(120));
    long.spec.risk = Risk::Low;
    long.steps = 3;
    s.create(&sealed(&long), &sealed(&entry("job-a", "create", 100)))
        .unwrap();
    let lease = at(s, 1_000).claim("r9", None, TTL).unwrap().unwrap().lease;
    let j = s.get("job-b").unwrap();
    step(s, &lease, j, JobState::Provisioning, 1_001);

    let all = s.list(&ListFilter::default()).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].id, "job-a");
    assert_eq!(all[0].title.chars().count(), 80);
    assert!(all[0].title.ends_with('…'));
    assert_eq!(
        (all[0].risk, all[0].steps, all[0].runner.as_deref()),
        (Risk::Low, 3, None)
    );
    assert_eq!(
        all[1],
        JobSummary {
            id: "job-b".into(),
            state: JobState::Provisioning,
            title: "task of job-b".into(),
            risk: Risk::Medium,
            steps: 0,
            created_ms: 200,
            updated_ms: 1_001,
            runner: Some("r9".into()),
            nickname: None,
        }
    );
    let drafts = s
        .list(&ListFilter {
            state: Some(JobState::Draft),
        })
        .unwrap();
    assert_eq!(
        drafts.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        ["job-a"]
    );
}

/// SQLite only: what is tested is the file — closed and opened again by path. (A PostgreSQL
/// store outlives its connections as the server does; `tests/postgres.rs` connects again.)
#[test]
fn the_store_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.db");
    let j = {
        let s = SqliteStore::open(&path).unwrap();
        add(&s, "job-1", JobState::Pending, 1)
    };
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.get("job-1").unwrap(), j);
    assert_eq!(s.path(), path);
}

fn record_appends_to_the_trail_and_moves_nothing(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Success, 10);
    let history = s.history("job-1").unwrap();
    s.record(&sealed(&entry("job-1", "cleanup", 20))).unwrap();
    let trail = s.audit(Some("job-1")).unwrap();
    assert_eq!(
        trail.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(),
        ["create", "cleanup"]
    );
    assert!(trail[1].seq > trail[0].seq);
    let now = s.get("job-1").unwrap();
    assert_eq!((now.state(), now.updated_ms), (j.state(), j.updated_ms));
    assert_eq!(s.history("job-1").unwrap(), history);
    let err = s
        .record(&sealed(&entry("job-nope", "cleanup", 30)))
        .unwrap_err();
    assert!(matches!(err, JobStoreError::NotFound { .. }), "{err}");
    assert_eq!(
        s.audit(None).unwrap().len(),
        2,
        "nothing written for a missing job"
    );
}

fn leases_are_judged_by_the_stores_clock_not_the_callers(s: &dyn JobStore) {
    let j = add(s, "job-1", JobState::Pending, 100);
    let lease = at(s, 1_000).claim("r1", None, TTL).unwrap().unwrap().lease;
    assert_eq!(lease.until_ms, 1_000 + TTL, "from the store's now");
    step(s, &lease, j, JobState::Executing, 1_100);
    // A human whose own clock runs a day ahead: the store says the lease is live.
    let day = 86_400_000;
    let mut late = s.get("job-1").unwrap();
    late.phase = crate::job::JobPhase::of(JobState::Canceled, None, None);
    let busy = at(s, 1_200)
        .decide(&Decision {
            job: &sealed(&late),
            expected: JobState::Executing,
            transition: Some(&sealed(&moved(
                JobState::Executing,
                JobState::Canceled,
                JobTrigger::Cancel,
                day,
            ))),
            audit: &sealed(&entry("job-1", "cancel", day)),
            revoke: false,
        })
        .unwrap_err();
    assert!(matches!(busy, JobStoreError::Busy { .. }), "{busy:?}");
    // The renewal is counted from the store's now too, whatever the runner thinks.
    let renewed = at(s, 2_000).heartbeat(&lease, TTL).unwrap();
    assert_eq!(renewed.until_ms, 2_000 + TTL);
    assert_eq!(s.now_ms().unwrap(), 2_000);
}

fn claiming_a_job_that_does_not_exist_says_so(s: &dyn JobStore) {
    at(s, 1_000);
    add(s, "job-aaaa0001", JobState::Pending, 1);
    add(s, "job-aaaa0002", JobState::Pending, 2);
    assert!(matches!(
        s.claim("r", Some("job-ffff"), TTL),
        Err(JobStoreError::NotFound { .. })
    ));
    assert!(matches!(
        s.claim("r", Some("job-aaaa"), TTL),
        Err(JobStoreError::Ambiguous { .. })
    ));
    // A job that exists but rests where no step goes is simply not claimable.
    let c = s
        .claim("r", Some("job-aaaa0001"), TTL)
        .unwrap()
        .expect("claimed");
    assert_eq!(c.job.id, "job-aaaa0001");
    assert!(s.claim("r2", Some("job-aaaa0001"), TTL).unwrap().is_none());
}
