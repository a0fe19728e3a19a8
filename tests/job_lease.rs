//! Leases through the real binary (issue 20, defect 8): a lease too short to outlive its own
//! heartbeats is refused, and a runner whose lease lapsed while it still drove the step — its
//! heartbeat stuck behind another process's write to the store — does not claim the job again
//! from itself: the worker runs once.

#[path = "common/job_env.rs"]
mod job_env;
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
fn a_runner_never_claims_back_a_step_it_holds_so_the_worker_runs_once() {
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
    assert!(out.status.success(), "{stdout}{stderr}");
    let runs = std::fs::read_to_string(&count).unwrap();
    assert_eq!(
        runs.lines().count(),
        1,
        "the worker ran {runs:?}\n{stdout}{stderr}"
    );
    assert!(stdout.contains("1 step ran:"), "{stdout}{stderr}");
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    // One step, straight through: never reclaimed, never recovered.
    let history = env.show(&id)["history"].to_string();
    assert!(!history.contains("RECOVERING"), "{history}");
}
