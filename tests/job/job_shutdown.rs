//! Ctrl-C of a runner (issue 21): the first one claims nothing more, pauses the running
//! sessions (INTERRUPTED, resumable) and hands their jobs' leases back, exits 130 and says what
//! was left where; a second `job run` started at once claims those jobs — no lease to wait out —
//! and finishes them by resuming their sessions. Ctrl-C of one runner of two leaves the other's
//! jobs alone.

use crate::common;
use crate::job_env;
use common::{signal, wait_timeout};
use job_env::{DONE, Env};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A worker that, the first time its session runs, says so in `marks` and sleeps; resumed
/// (the same session), it does the work at once.
fn worker(marks: &Path) -> String {
    format!(
        "sh -c 'm={m}/$ONESHOT_SESSION_ID; if [ -e $m ]; then echo hi > f.txt; \
         else touch $m; sleep 60; fi'",
        m = marks.display()
    )
}

fn runner(env: &Env, parallel: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .arg("--state-dir")
        .arg(env.state_dir())
        .args(["job", "run", "--lease", "30s", "--parallel", parallel])
        .current_dir(env.repo())
        .env("ONESHOT_ACTOR", "tester")
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `n` workers have started (one mark each).
fn started(marks: &Path, n: usize) {
    let t = Instant::now();
    loop {
        let got = std::fs::read_dir(marks).unwrap().count();
        if got >= n {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{got} of {n} workers started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stderr_of(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The states the job's session went through.
fn session_trace(env: &Env, id: &str) -> Vec<String> {
    let session = env.show(id)["job"]["session_id"]
        .as_str()
        .expect("a session")
        .to_string();
    let state: serde_json::Value =
        serde_json::from_str(&env.ok(&["status", &session, "--json"])).expect("status --json");
    state["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["state"].as_str().unwrap().to_string())
        .collect()
}

fn marks_dir() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let marks = d.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    (d, marks)
}

#[test]
fn ctrl_c_pauses_the_sessions_hands_the_jobs_back_and_a_second_run_finishes_them() {
    let env = Env::new();
    let (_d, marks) = marks_dir();
    let ids: Vec<String> = (0..3)
        .map(|_| env.create(&worker(&marks), DONE, &["--activate"]))
        .collect();
    let mut first = runner(&env, "3");
    started(&marks, 3);
    let sent = Instant::now();
    signal(first.id(), libc::SIGINT);
    let status = wait_timeout(&mut first, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(
        sent.elapsed() < Duration::from_secs(15),
        "the stop took {:?}",
        sent.elapsed()
    );
    let said = stderr_of(first);
    assert!(said.contains("pausing the running sessions"), "{said}");
    for id in &ids {
        // Where it was, its session paused, nobody's lease on it.
        assert!(
            said.contains(&format!("{id}  stays in EXECUTING")),
            "{said}"
        );
        assert_eq!(env.state(id), "EXECUTING");
        assert_eq!(session_trace(&env, id).last().unwrap(), "INTERRUPTED");
        assert!(env.show(id)["lease"].is_null(), "{}", env.show(id));
    }

    // At once, without waiting out a 30 s lease: the next runner takes them up.
    let t = Instant::now();
    let second = runner(&env, "3");
    let out = second.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t.elapsed() < Duration::from_secs(25), "{:?}", t.elapsed());
    for id in &ids {
        assert_eq!(env.state(id), "APPROVAL_REQUIRED", "{}", env.show(id));
        let trace = session_trace(&env, id);
        assert!(trace.contains(&"INTERRUPTED".to_string()), "{trace:?}");
        assert_eq!(trace.last().unwrap(), "COMPLETED", "{trace:?}");
    }
}

#[test]
fn ctrl_c_of_one_runner_leaves_the_others_jobs_alone() {
    let env = Env::new();
    let (_d, marks) = marks_dir();
    let slow = env.create(&worker(&marks), DONE, &["--activate"]);
    let mut a = runner(&env, "1");
    started(&marks, 1);
    // The other runner's job: it waits for a go, so it is still running when `a` stops.
    let go = marks.parent().unwrap().join("go");
    let other_worker = format!(
        "sh -c 'touch {m}/other; while [ ! -e {g} ]; do sleep 0.05; done; echo hi > f.txt'",
        m = marks.display(),
        g = go.display()
    );
    let other = env.create(&other_worker, DONE, &["--activate"]);
    let mut b = runner(&env, "1");
    started(&marks, 2);
    signal(a.id(), libc::SIGINT);
    assert_eq!(
        wait_timeout(&mut a, Duration::from_secs(30)).code(),
        Some(130)
    );
    assert_eq!(env.state(&slow), "EXECUTING");
    // `b`'s job ran on untouched.
    assert_eq!(env.state(&other), "EXECUTING");
    assert!(
        !session_trace(&env, &other).contains(&"INTERRUPTED".to_string()),
        "{:?}",
        session_trace(&env, &other)
    );
    std::fs::write(&go, "").unwrap();
    // `b` finishes its own job, then takes up the one `a` handed back.
    let status = wait_timeout(&mut b, Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_eq!(env.state(&other), "APPROVAL_REQUIRED");
    assert_eq!(env.state(&slow), "APPROVAL_REQUIRED");
}
