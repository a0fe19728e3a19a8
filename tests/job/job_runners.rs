//! `oneshot job runners` (issue 23): a running runner is listed live with the lease it holds;
//! one killed mid-step stays listed, *stale* once its ttl passed by the store's clock (never
//! shown as running); one that stopped cleanly is gone.

use crate::common;
use crate::job_env;
use crate::json_doc::{JSON_MD, conforms, shape};
use common::{signal, wait_timeout};
use job_env::{DONE, Env};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn runners(env: &Env) -> Vec<Value> {
    env.ok(&["job", "runners", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn a_live_runner_is_listed_with_its_lease_and_a_killed_one_reads_stale() {
    let env = Env::new();
    let marks = env.dir.path().join("started");
    let worker = format!("sh -c 'touch {}; sleep 60'", marks.display());
    let id = env.create(&worker, DONE, &["--activate"]);
    let mut runner = Command::new(env!("CARGO_BIN_EXE_oneshot"))
        .arg("--state-dir")
        .arg(env.state_dir())
        .args(["job", "run", "--lease", "3s"])
        .current_dir(env.repo())
        .env("ONESHOT_ACTOR", "tester")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !marks.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the worker never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let rows = runners(&env);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    conforms(
        "job runners --json",
        &shape(JSON_MD, "oneshot job runners --json", 0),
        r,
    );
    assert_eq!(r["state"], "live", "{r}");
    assert_eq!(r["pid"], runner.id());
    assert_eq!(r["leases"][0]["job_id"], id.as_str(), "{r}");
    assert_eq!(r["leases"][0]["live"], true, "{r}");
    let text = env.ok(&["job", "runners"]);
    assert!(text.contains("live") && text.contains(&id), "{text}");

    // Killed: nothing says goodbye. Past its ttl the row reads stale, the lease expired.
    signal(runner.id(), libc::SIGKILL);
    wait_timeout(&mut runner, Duration::from_secs(10));
    let t = Instant::now();
    loop {
        let rows = runners(&env);
        assert_eq!(rows.len(), 1, "a dead runner stays listed: {rows:?}");
        if rows[0]["state"] == "stale" {
            assert_eq!(rows[0]["leases"][0]["live"], false, "{rows:?}");
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "never stale: {rows:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_runner_that_ends_cleanly_leaves_no_row() {
    let env = Env::new();
    env.create("sh -c 'echo hi > f.txt'", DONE, &["--activate"]);
    env.ok(&["job", "run"]);
    assert!(runners(&env).is_empty());
    let out = env.oneshot(&["job", "runners"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no runners"));
}
