//! `oneshot job log` (issue 23): a job's session logs read from the job store, where the
//! runner shipped them as the session ran — the same records as the session's log on the
//! runner's disk, redacted, readable from another machine's state directory, and followed
//! live until the job rests.

use crate::job_env;
use job_env::{DONE, Env};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A secret the redactor's built-in rules know.
const SECRET: &str = "sk-ant-api03-Zq7vXw9Kp2Lm4Nb6Jh8Gf0Dc1Sa3Qe5Rt7Yu9Io";

#[test]
fn the_log_in_the_store_is_the_sessions_log_redacted_and_readable_elsewhere() {
    let env = Env::new();
    // The secret reaches the worker through the runner's environment, as secrets should.
    let worker = "sh -c 'echo hello from the worker $SERVICE_TOKEN; echo hi > f.txt'";
    let id = env.create(worker, DONE, &["--activate"]);
    let ran = env
        .command(&["job", "run"])
        .env("SERVICE_TOKEN", SECRET)
        .output()
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    let log = env.ok(&["job", "log", &id]);
    assert!(log.contains("── session "), "{log}");
    assert!(log.contains("hello from the worker"), "{log}");
    assert!(!log.contains(SECRET), "redacted: {log}");

    // Record for record what the session's own log holds.
    let json = env.ok(&["job", "log", &id, "--json"]);
    let entries: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seqs: Vec<u64> = entries.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=entries.len() as u64).collect::<Vec<_>>(),
        "gap-free"
    );
    let sid = entries[0]["session_id"].as_str().unwrap().to_string();
    let on_disk = std::fs::read_to_string(
        env.state_dir()
            .join("sessions")
            .join(&sid)
            .join("oneshot-log.json"),
    )
    .unwrap();
    assert_eq!(
        entries.len(),
        on_disk.lines().count(),
        "every record shipped once"
    );

    // Another "machine": its own state directory and HOME, the same store.
    let elsewhere = tempfile::tempdir().unwrap();
    let store = env.state_dir().join("jobs.db");
    let other = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_oneshot"))
            .arg("--state-dir")
            .arg(elsewhere.path().join("state"))
            .args(args)
            .arg("--store")
            .arg(&store)
            .env("HOME", elsewhere.path())
            .env("NO_COLOR", "1")
            .current_dir(elsewhere.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        other(&["job", "log", &id]),
        log,
        "the same log on any machine"
    );
    let shown = other(&["job", "show", &id]);
    assert!(shown.contains("Sessions (from the store"), "{shown}");
    assert!(
        shown.contains(&sid) && shown.contains("iteration 1/"),
        "{shown}"
    );
    let shown: serde_json::Value =
        serde_json::from_str(&other(&["job", "show", &id, "--json"])).unwrap();
    assert_eq!(shown["sessions"][0]["session_id"], sid.as_str(), "{shown}");
    assert!(
        shown["sessions"][0]["runner_id"]
            .as_str()
            .unwrap()
            .contains('-'),
        "{shown}"
    );
}

#[test]
fn follow_prints_as_the_session_runs_and_ends_when_the_job_rests() {
    let env = Env::new();
    let gate = env.dir.path().join("gate");
    let worker = format!(
        "sh -c 'echo first line; while [ ! -e {} ]; do sleep 0.1; done; echo second line; echo hi > f.txt'",
        gate.display()
    );
    let id = env.create(&worker, DONE, &["--activate"]);
    let mut runner = env
        .command(&["job", "run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut follow = env
        .command(&["job", "log", &id, "--follow"])
        .stdout(out.reopen().unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The first line reaches the follower while the worker still runs.
    let t = Instant::now();
    while !std::fs::read_to_string(out.path())
        .unwrap()
        .contains("first line")
    {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the first line never came"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(follow.try_wait().unwrap().is_none(), "still following");
    std::fs::write(&gate, "").unwrap();
    assert!(runner.wait().unwrap().success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = follow.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "follow did not end when the job rested"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success());
    let printed = std::fs::read_to_string(out.path()).unwrap();
    assert!(printed.contains("second line"), "{printed}");
    assert_eq!(printed, env.ok(&["job", "log", &id]), "the whole log, once");
}

#[test]
fn a_job_with_no_session_yet_says_so() {
    let env = Env::new();
    let id = env.create("true", DONE, &[]);
    let out = env.oneshot(&["job", "log", &id]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no session records") && err.contains("DRAFT"),
        "{err}"
    );
    let out = env.oneshot(&["job", "log", "job-nothere"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
