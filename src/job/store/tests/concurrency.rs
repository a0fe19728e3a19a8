//! Two runners on one store file: in two threads, each with its own connection, and in two
//! processes (this test binary run again, for the ignored `runner_child` test only).

use super::*;
use std::collections::BTreeMap;
use std::process::Command;

const JOBS: usize = 500;
const CHILD_ENV: &str = "ONESHOT_TEST_STORE_CHILD";

/// Claims and finishes steps until nothing is left: claim, PENDING → PROVISIONING, then
/// PROVISIONING → INTERVENTION_REQUIRED (resting: releases). Returns (job, fence) per claim.
fn run(store: &SqliteStore, runner: &str) -> Vec<(String, u64)> {
    let mut got = Vec::new();
    while let Some(c) = store.claim(runner, None, 60_000).expect("claim") {
        assert!(!c.reclaimed, "{runner} reclaimed {}", c.lease.job);
        assert_eq!(
            c.job.state(),
            JobState::Pending,
            "{runner} got {}",
            c.lease.job
        );
        let j = step(store, &c.lease, c.job, JobState::Provisioning, 1_001);
        step(store, &c.lease, j, JobState::InterventionRequired, 1_002);
        got.push((c.lease.job, c.lease.fence));
    }
    got
}

fn fill(path: &std::path::Path) -> SqliteStore {
    let s = SqliteStore::open(path).unwrap();
    for i in 0..JOBS {
        add(&s, &format!("job-{i:08x}"), JobState::Pending, i as u64);
    }
    s
}

/// Every job claimed exactly once, moved exactly twice, and resting unleased.
fn check(s: &SqliteStore, claims: Vec<(String, u64)>) {
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

#[test]
fn two_runner_threads_with_their_own_connections_never_claim_a_job_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.db");
    let s = fill(&path);
    let claims: Vec<Vec<(String, u64)>> = std::thread::scope(|scope| {
        let runners: Vec<_> = ["runner-a", "runner-b"]
            .into_iter()
            .map(|name| {
                let path = &path;
                scope.spawn(move || run(&SqliteStore::open(path).unwrap(), name))
            })
            .collect();
        runners.into_iter().map(|r| r.join().unwrap()).collect()
    });
    eprintln!(
        "claims per thread: {:?}",
        claims.iter().map(Vec::len).collect::<Vec<_>>()
    );
    check(&s, claims.into_iter().flatten().collect());
}

#[test]
fn two_runner_processes_on_one_file_never_claim_a_job_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobs.db");
    let s = fill(&path);
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
    for (id, fence) in run(&store, name) {
        println!("claimed {id} {fence}");
    }
}
