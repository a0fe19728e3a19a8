//! Leases through the real binary (issue 20, defect 8; issue 23): a lease too short to outlive
//! its own heartbeats is refused, and a runner whose lease could not be renewed in time — its
//! heartbeat stuck behind another process's write to the store — stops its agent (it cannot
//! know whether another runner took the job), never claims the job back itself, and leaves it
//! for the next runner once the lease expired.

use crate::job_env;
use job_env::{DONE, Env};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_lease_shorter_than_the_minimum_is_refused_naming_it() {
    let env = Env::new();
    let id = env.create("sh -c 'echo x >> ran.txt'", DONE, &["--activate"]);
    for args in [
        &["job", "run", "--lease", "0s"][..],
        &["job", "run", "--parallel", "4", "--lease", "900ms"],
        &["job", "step", "--lease", "0s"],
        &["job", "step", &id, "--lease", "10ms"],
    ] {
        let out = env.oneshot(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--lease"), "{args:?}: {err}");
        assert!(err.contains("the minimum is 1s"), "{args:?}: {err}");
        assert!(err.contains("every third of it"), "{args:?}: {err}");
    }
    // Nothing was stepped.
    assert_eq!(env.state(&id), "PENDING");
    assert!(!env.dir.path().join("state/worktrees").join(&id).exists());
    // The minimum itself is a lease.
    env.ok(&["job", "step", &id, "--lease", "1s"]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
}

#[test]
fn a_runner_that_cannot_renew_its_lease_stops_its_agent_and_never_claims_the_job_back() {
    let env = Env::new();
    let count = env.dir.path().join("runs.txt");
    let started = env.dir.path().join("started");
    // The worker counts its runs and outlives the time the store is held below.
    let worker = format!(
        "sh -c 'echo run >> {c}; touch {s}; sleep 4; echo hi > f.txt'",
        c = count.display(),
        s = started.display()
    );
    let id = env.create(&worker, DONE, &["--activate"]);
    // Room for a second step, so the runner keeps looking for work while the first runs.
    let runner = Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .arg("--state-dir")
        .arg(env.state_dir())
        .args(["job", "run", "--parallel", "2", "--lease", "1s"])
        .current_dir(env.repo())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !started.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the worker never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Another process writes to the store for longer than the lease lasts: the runner's
    // heartbeat waits behind it, and by the time it gets through the lease it renews has
    // lapsed. The runner still drives the step; it must not claim the job as a dead runner's.
    let db = rusqlite::Connection::open(env.state_dir().join("jobs.db")).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    db.execute_batch("COMMIT").unwrap();
    drop(db);

    let out = runner.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // It could not renew its lease in time, and cannot know whether another runner took the
    // job meanwhile: it stopped its agent and wrote nothing more (exit 1: the step failed).
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("could not renew the lease"),
        "{stdout}{stderr}"
    );
    let runs = std::fs::read_to_string(&count).unwrap();
    assert_eq!(
        runs.lines().count(),
        1,
        "never claimed back by the runner that held it: {runs:?}\n{stdout}{stderr}"
    );
    assert_eq!(env.state(&id), "EXECUTING");
    // Once the lease expired, the next runner recovers the job.
    std::thread::sleep(Duration::from_millis(1200));
    env.ok(&["job", "run", "--lease", "10s"]);
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    let history = env.show(&id)["history"].to_string();
    assert!(history.contains("RECOVERING"), "{history}");
}
