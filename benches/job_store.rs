//! The SQLite job store under load, on a real file in a temporary directory.
//!
//! Cases:
//! * `claim, one runner (baseline)`: N PENDING jobs, one runner doing claim → advance to
//!   PROVISIONING (transient, lease kept) → advance to INTERVENTION_REQUIRED (resting,
//!   released) until nothing is left;
//! * `claim, two runners`: the same with two threads, each with its own store handle (its own
//!   connection), contending for the file's write lock (the target: ≥ 2,000 claims/s);
//! * `list`: `list` over 10,000 jobs (the target: ≤ 100 ms).
//!
//! Run: `cargo bench --bench job_store`. Prints plain figures; no criterion (each case changes
//! the store, so a repeatable sample would need a fresh store per iteration).

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/jobs.rs"]
mod jobs;

use jobs::{advance, create, job};
use oneshot::job::store::prelude::*;
use oneshot::job::{JobState, ListFilter, SqliteStore};

const CLAIM_JOBS: usize = 2_000;
const LIST_JOBS: usize = 10_000;
const TTL: u64 = 60_000;

fn fill(path: &Path, n: usize) -> SqliteStore {
    let store = SqliteStore::open(path).expect("open");
    for i in 0..n {
        create(&store, &job(i, ""));
    }
    store
}

/// One runner's loop; returns its claims.
fn run(path: &Path, runner: &str) -> usize {
    let store = SqliteStore::open(path).expect("open");
    let mut claims = 0;
    while let Some(c) = store.claim(runner, None, TTL).expect("claim") {
        let mut j = c.job;
        advance(&store, &c.lease, &mut j, JobState::Provisioning);
        advance(&store, &c.lease, &mut j, JobState::InterventionRequired);
        claims += 1;
    }
    claims
}

/// Claims/s of `runners` threads over a fresh store of [`CLAIM_JOBS`] jobs.
fn claims(runners: usize) -> (f64, Vec<usize>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.db");
    drop(fill(&path, CLAIM_JOBS));
    let start = Instant::now();
    let each: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..runners)
            .map(|r| {
                let path = &path;
                s.spawn(move || run(path, &format!("runner-{r}")))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("runner"))
            .collect()
    });
    let total: usize = each.iter().sum();
    assert_eq!(total, CLAIM_JOBS, "every job claimed exactly once");
    (total as f64 / start.elapsed().as_secs_f64(), each)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing here takes options.
    let (one, _) = claims(1);
    println!(
        "claim, one runner (baseline): {one:>8.0} claims/s ({CLAIM_JOBS} jobs, 3 writes each)"
    );
    let (two, each) = claims(2);
    println!(
        "claim, two runners:           {two:>8.0} claims/s (per runner {each:?}; target ≥ 2,000)"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let store = fill(&dir.path().join("jobs.db"), LIST_JOBS);
    let mut best = Duration::MAX;
    for _ in 0..10 {
        let t = Instant::now();
        let listed = store.list(&ListFilter::default()).expect("list");
        best = best.min(t.elapsed());
        assert_eq!(listed.len(), LIST_JOBS);
    }
    let t = Instant::now();
    let pending = store
        .list(&ListFilter {
            state: Some(JobState::Pending),
        })
        .expect("list");
    let filtered = t.elapsed();
    assert_eq!(pending.len(), LIST_JOBS);
    println!(
        "list, {LIST_JOBS} jobs:            {:>8.1} ms best of 10 ({:.1} ms filtered by state; target ≤ 100 ms)",
        best.as_secs_f64() * 1e3,
        filtered.as_secs_f64() * 1e3
    );

    // Where users feel it: the real binary listing the same store, beside the same binary
    // listing an empty one (process start, opening the store) in the same run.
    let empty = tempfile::tempdir().expect("tempdir");
    drop(fill(&empty.path().join("jobs.db"), 0));
    let base = binary_list(empty.path());
    let full = binary_list(dir.path());
    println!(
        "`oneshot job list`, {LIST_JOBS} jobs: {:>6.1} ms best of 10 (empty store: {:.1} ms; target ≤ 100 ms)",
        full.as_secs_f64() * 1e3,
        base.as_secs_f64() * 1e3
    );
}

/// The best of ten runs of `oneshot job list` over the store in `state`, output discarded.
fn binary_list(state: &std::path::Path) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..10 {
        let t = Instant::now();
        let ok = std::process::Command::new(env!("CARGO_BIN_EXE_oneshot"))
            .arg("--state-dir")
            .arg(state)
            .args(["job", "list"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run oneshot");
        best = best.min(t.elapsed());
        assert!(ok.success());
    }
    best
}
