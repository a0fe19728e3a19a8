//! Several runners claiming at once: no job claimed twice, every job claimed. On both stores,
//! runner threads each with a connection of its own (stand-ins for runner processes); on SQLite
//! also two real processes sharing the file (this test binary run again, for the ignored
//! `runner_child` test only).

use super::*;
use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;

const JOBS: usize = 500;
/// Runner threads in [`runner_threads_claim`].
const RUNNERS: usize = 4;
const CHILD_ENV: &str = "ONESHOT_TEST_STORE_CHILD";

/// Claims and finishes steps until nothing is left: claim (up to `slots` at once, as a
/// runner with that many free slots does), PENDING → PROVISIONING, then PROVISIONING →
/// INTERVENTION_REQUIRED (resting: releases). Returns (job, fence) per claim.
fn run(store: &dyn JobStore, runner: &str, slots: usize) -> Vec<(String, u64)> {
    let mut got = Vec::new();
    loop {
        let claims = if slots == 1 {
            store
                .claim(runner, None, 60_000)
                .expect("claim")
                .into_iter()
                .collect()
        } else {
            store.claim_up_to(runner, 60_000, slots).expect("claims")
        };
        if claims.is_empty() {
            return got;
        }
        assert!(claims.len() <= slots, "{runner} took {}", claims.len());
        for c in claims {
            got.push(finish(store, runner, c));
        }
    }
}

/// Moves a claimed PENDING job on to a resting state; its (job, fence).
fn finish(store: &dyn JobStore, runner: &str, c: Claim) -> (String, u64) {
    assert!(!c.reclaimed, "{runner} reclaimed {}", c.lease.job);
    assert_eq!(
        c.job.state(),
        JobState::Pending,
        "{runner} got {}",
        c.lease.job
    );
    let j = step(store, &c.lease, c.job, JobState::Provisioning, 1_001);
    step(store, &c.lease, j, JobState::InterventionRequired, 1_002);
    (c.lease.job, c.lease.fence)
}

/// Adds the [`JOBS`] jobs, all PENDING.
fn fill(s: &dyn JobStore) {
    for i in 0..JOBS {
        add(s, &format!("job-{i:08x}"), JobState::Pending, i as u64);
    }
}

/// Every job claimed exactly once, moved exactly twice, and resting unleased.
fn check(s: &dyn JobStore, claims: Vec<(String, u64)>) {
    let mut seen = BTreeMap::new();
    for (id, fence) in claims {
        assert_eq!(fence, 1, "{id} claimed with fence {fence}");
        *seen.entry(id).or_insert(0) += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "claimed more than once: {twice:?}");
    assert_eq!(seen.len(), JOBS);
    for j in s.list(&ListFilter::default()).unwrap() {
        assert_eq!(j.state, JobState::InterventionRequired, "{}", j.id);
        assert_eq!(j.runner, None, "{}", j.id);
        assert_eq!(s.history(&j.id).unwrap().len(), 2, "{}", j.id);
    }
}

/// [`RUNNERS`] runner threads, each on a connection of its own that `connect` makes, claim
/// from a store `s` filled with [`JOBS`] jobs until nothing is left.
fn runner_threads_claim(s: &dyn JobStore, connect: &(dyn Fn() -> Box<dyn JobStore> + Sync)) {
    fill(s);
    // Every runner connected before any claims, so that they claim at once.
    let start = std::sync::Barrier::new(RUNNERS);
    let claims: Vec<Vec<(String, u64)>> = std::thread::scope(|scope| {
        let runners: Vec<_> = (0..RUNNERS)
            .map(|i| {
                let (store, start) = (connect(), &start);
                scope.spawn(move || {
                    start.wait();
                    // Runners of 1, 2, 3 and 4 free slots: single and batched claims at once.
                    run(&*store, &format!("runner-{i}"), 1 + i % 4)
                })
            })
            .collect();
        runners.into_iter().map(|r| r.join().unwrap()).collect()
    });
    eprintln!(
        "claims per thread: {:?}",
        claims.iter().map(Vec::len).collect::<Vec<_>>()
    );
    check(s, claims.into_iter().flatten().collect());
}

/// The contract test above on SQLite: each runner opens the file again, and SQLite's locks
/// between connections are what is tested.
mod on_sqlite {
    use super::*;

    #[test]
    fn runner_threads_with_their_own_connections_never_claim_a_job_twice() {
        let (_dir, s) = store();
        let clock = CLOCK.with(Arc::clone);
        runner_threads_claim(&s, &|| {
            Box::new(SqliteStore::open_with_clock(s.path(), clock.clone()).unwrap())
        });
    }
}

/// The contract test above on PostgreSQL: each runner connects to the database again, and
/// `FOR UPDATE SKIP LOCKED` between server sessions is what is tested (each connection is a
/// server process of its own, which is what a runner process brings).
#[cfg(feature = "postgres")]
mod on_postgres {
    use super::*;

    #[test]
    fn runner_threads_with_their_own_connections_never_claim_a_job_twice() {
        let Some((url, s)) = postgres::postgres() else {
            return;
        };
        let clock = CLOCK.with(Arc::clone);
        runner_threads_claim(&s, &|| {
            Box::new(PostgresStore::connect_with_clock(&url, clock.clone()).unwrap())
        });
    }
}

/// SQLite only: two processes taking turns through the file's locks. (On PostgreSQL every
/// connection is already a server process of its own: the threads above cover it.)
#[test]
fn two_runner_processes_on_one_file_never_claim_a_job_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.db");
    let s = SqliteStore::open(&path).unwrap();
    fill(&s);
    let me = std::env::current_exe().unwrap();
    let children: Vec<_> = ["proc-a", "proc-b"]
        .into_iter()
        .map(|name| {
            Command::new(&me)
                .args([
                    "job::store::tests::concurrency::runner_child",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, format!("{name}\t{}", path.display()))
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut claims = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a runner process failed: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let mine: Vec<(String, u64)> = text
            .lines()
            // libtest's own `test … ` may start the first line: look past it.
            .filter_map(|l| l.split_once("claimed ").map(|(_, rest)| rest))
            .filter_map(|l| l.split_once(' '))
            .map(|(id, fence)| (id.to_string(), fence.parse().unwrap()))
            .collect();
        eprintln!("claims of one process: {}", mine.len());
        claims.extend(mine);
    }
    check(&s, claims);
}

/// One runner process of the test above; does nothing unless that test started it.
#[test]
#[ignore = "a runner process for two_runner_processes_on_one_file_never_claim_a_job_twice"]
fn runner_child() {
    let Ok(arg) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (name, path) = arg.split_once('\t').unwrap();
    let store = SqliteStore::open(path).unwrap();
    for (id, fence) in run(&store, name, 3) {
        println!("claimed {id} {fence}");
    }
}
