//! `job run --reserve`: admission by free memory, through the real binary (issue 34). The
//! reserve (10 TiB) is larger than this machine's memory, measured for real, so the runner
//! holds the job back; then the test knob (`ONESHOT_TEST_AVAILABLE_MEMORY`, a file the test
//! writes) says memory freed, and the job starts.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::job_env;
use job_env::{DONE, Env, GOOD_WORKER};

#[test]
fn a_reserve_larger_than_free_memory_holds_jobs_back_until_memory_frees() {
    let env = Env::new();
    let id = env.create(GOOD_WORKER, DONE, &["--activate", "--risk", "low"]);
    let knob = env.state_dir().with_file_name("available-memory");
    // Empty: the machine's own measure.
    std::fs::write(&knob, "").unwrap();
    let mut runner = env
        .command(&["job", "run", "--reserve", "10T"])
        .env("ONESHOT_TEST_AVAILABLE_MEMORY", &knob)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let stderr = runner.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let waiting = loop {
        let line = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the runner says it waits for memory");
        if line.contains("waiting for memory") {
            break line;
        }
    };
    assert!(
        waiting.contains("free, reserve 10 TiB; 1 job held back"),
        "{waiting}"
    );
    // Held: a second and a half later (the runner looks every second) the job has not moved.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(env.state(&id), "PENDING");
    // Every machine reads why from the store: `job list`, its JSON, and `job runners`.
    let list = env.ok(&["job", "list"]);
    let row = list
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_default();
    assert!(row.contains("waiting for memory"), "{list}");
    assert!(
        list.contains("every live runner is waiting for memory:")
            && list.contains("reserve 10 TiB"),
        "{list}"
    );
    let json: serde_json::Value =
        serde_json::from_str(env.ok(&["job", "list", "--json"]).trim()).unwrap();
    assert_eq!(json["waiting"]["for"], "memory", "{json}");
    assert_eq!(json["waiting"]["reserve"], 10u64 << 40, "{json}");
    let runners = env.ok(&["job", "runners"]);
    assert!(
        runners.contains("waiting for memory:") && runners.contains("reserve 10 TiB"),
        "{runners}"
    );
    assert_eq!(
        runner.try_wait().unwrap(),
        None,
        "the run waits, it does not end"
    );
    std::fs::write(&knob, "20T").unwrap();
    let out = runner.wait_with_output().unwrap();
    reader.join().unwrap();
    let rest: Vec<String> = lines.try_iter().collect();
    assert!(out.status.success(), "{rest:?}");
    assert!(
        rest.iter()
            .any(|l| l.contains("memory freed: 20 TiB free, reserve 10 TiB; starting jobs again")),
        "{rest:?}"
    );
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("{id}  PENDING → PROVISIONING")),
        "{stdout}"
    );
}

#[test]
fn a_reserve_the_machine_keeps_admits_at_once_and_a_bad_size_is_refused() {
    let env = Env::new();
    let id = env.create(GOOD_WORKER, DONE, &["--activate", "--risk", "low"]);
    let out = env.oneshot(&["job", "run", "--reserve", "1M"]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("waiting for memory"));
    assert_eq!(env.state(&id), "APPROVAL_REQUIRED");
    let bad = env.oneshot(&["job", "run", "--reserve", "lots"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a size"));
}

/// A policy's `limits.reserve` holds for a plain session too: its worker starts only once the
/// memory available keeps the reserve, and the log says it waited and why.
#[test]
fn a_policys_reserve_holds_the_agent_until_memory_frees() {
    let env = Env::new();
    let knob = env.state_dir().with_file_name("available-memory");
    std::fs::write(&knob, "1G").unwrap();
    let policy = env.repo().with_file_name("reserve.lua");
    std::fs::write(&policy, "return { limits = { reserve = \"4G\" } }\n").unwrap();
    let started = env.repo().with_file_name("started");
    let worker = format!("touch {}", started.display());
    let session = env
        .command(&[
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            DONE,
            "--policy",
            policy.to_str().unwrap(),
            "start when memory frees",
        ])
        .env("ONESHOT_TEST_AVAILABLE_MEMORY", &knob)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The session's log (the only session under the state dir).
    let logs = || {
        let sessions = std::fs::read_dir(env.state_dir().join("sessions"));
        sessions
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| std::fs::read_to_string(e.path().join("oneshot-log.json")).unwrap_or_default())
            .collect::<String>()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !logs().contains("the worker starts when memory frees") {
        assert!(std::time::Instant::now() < deadline, "{}", logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        logs().contains("1 GiB free, reserve 4 GiB (the policy's limits.reserve)"),
        "{}",
        logs()
    );
    // Held: more than a look later, the worker has not started.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!started.exists(), "the worker started below the reserve");
    std::fs::write(&knob, "8G").unwrap();
    let out = session.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.exists());
    assert!(
        logs().contains("memory freed: starting the worker"),
        "{}",
        logs()
    );
}

/// Two jobs at once under a policy's `limits.memory`: the one whose worker passes it is
/// stopped and recovers, with who reached which limit in its log; the other, running beside
/// it the whole time, is untouched.
#[test]
fn a_job_past_its_memory_limit_is_stopped_and_a_parallel_job_is_untouched() {
    let env = Env::new();
    let policy = env.repo().with_file_name("limits.lua");
    std::fs::write(&policy, "return { limits = { memory = \"100M\" } }\n").unwrap();
    let policy = policy.to_str().unwrap();
    // The first run holds 300 MiB; the second does the work.
    let hog = "sh -c 'if [ -e hogged ]; then echo hi > f.txt; exit 0; fi; touch hogged; \
               exec python3 -c \"import time; b = bytearray(300 * 1024 * 1024); time.sleep(30)\"'";
    // Starts with the hog and outlives its stop.
    let calm = "sh -c 'sleep 3; echo hi > f.txt'";
    let a = env.create(
        hog,
        DONE,
        &["--activate", "--risk", "low", "--policy", policy],
    );
    let b = env.create(
        calm,
        DONE,
        &["--activate", "--risk", "low", "--policy", policy],
    );
    let started = std::time::Instant::now();
    let out = env.oneshot(&["job", "run", "--parallel", "2"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(started.elapsed() < Duration::from_secs(25), "{said}");
    assert_eq!(env.state(&a), "APPROVAL_REQUIRED", "{said}");
    assert_eq!(env.state(&b), "APPROVAL_REQUIRED", "{said}");
    let log_a = env.ok(&["job", "log", &a]);
    assert!(
        log_a.contains("memory limit 100 MiB reached by "),
        "{log_a}"
    );
    let log_b = env.ok(&["job", "log", &b]);
    assert!(!log_b.contains("limit"), "{log_b}");
}
