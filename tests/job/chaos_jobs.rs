//! Chaos, the jobs family (issue 20; tests/session/chaos.rs is the sessions family): `oneshot job run`
//! killed (`kill -9`) at pseudo-random moments from its first millisecond to the job's end,
//! with a worker that starts children in its group, in a session of their own, double-forked
//! and with an empty environment, and writes two hundred and one files. After every kill: no
//! child left running within two seconds, `job show` reads, and once the dead runner's lease
//! has expired the next `job run` brings the job to APPROVAL_REQUIRED with every file on its
//! branch and a store SQLite finds intact. And three runner processes on one store at once:
//! every job ends, every worker runs once, every runner exits 0.
//!
//! The hostile inputs around jobs the issue lists have their tests already: the key's
//! directory, a FIFO, a foreign job store and a file where a workspace should be in
//! tests/cli/foreign_files.rs, `--lease 0s` in tests/job/job_lease.rs, a full disk in
//! tests/job/job_disk_full.rs.

use crate::common;
use crate::job_env;
use common::{pid_alive, signal, wait_timeout};
use job_env::{DONE, Env, git};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Kill points by default: each costs two to five seconds (the run, the lease running out, the
/// next run). `POINTS=200 cargo test --test chaos_jobs` for a longer run.
const POINTS: u64 = 6;

/// The lease the runners take: the shortest allowed (docs/jobs.md), so a dead runner's job is
/// free again soon.
const LEASE: Duration = Duration::from_secs(1);

fn points() -> u64 {
    std::env::var("POINTS")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(POINTS)
}

/// A small deterministic generator, so a failing point can be replayed: from 0 ms to 700 ms,
/// past the end of the job (a step of this worker takes about 450 ms on an idle machine).
fn delays(seed: u64) -> impl Iterator<Item = Duration> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..points()).map(move |i| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Duration::from_millis(if i == 0 { 0 } else { x % 700 })
    })
}

/// The binary on the environment's state dir, from its repository, with nothing inherited
/// that would change an agent or a policy.
fn oneshot(env: &Env) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_oneshot"));
    for (k, _) in std::env::vars() {
        if k.starts_with("ONESHOT_") {
            c.env_remove(k);
        }
    }
    c.arg("--state-dir")
        .arg(env.state_dir())
        .current_dir(env.repo())
        .env("ONESHOT_ACTOR", "tester")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    c
}

/// The files the worker writes, as `git ls-tree` names them.
fn worker_files() -> Vec<String> {
    let mut files: Vec<String> = (0..200).map(|i| format!("f{i:03}.txt")).collect();
    files.push("sub/deep.txt".into());
    files
}

/// A worker (outside the repository, so never part of the work) that starts four children —
/// in its group, in a session of their own, double-forked, with an empty environment —
/// recording their pids in `pids`, then writes two hundred files and one in a subdirectory.
fn worker(env: &Env) -> (String, PathBuf) {
    let pids = env.dir.path().join("pids");
    let script = env.dir.path().join("w.sh");
    std::fs::write(
        &script,
        format!(
            "sleep 300 & echo $! >> {p}\n\
             setsid sh -c 'echo $$ >> {p}; exec sleep 301' < /dev/null > /dev/null 2>&1 &\n\
             sh -c '(sleep 302 & echo $! >> {p}) &' < /dev/null > /dev/null 2>&1\n\
             env -i setsid sh -c 'echo $$ >> {p}; exec sleep 303' < /dev/null > /dev/null 2>&1 &\n\
             i=0\n\
             while [ $i -lt 200 ]; do printf 'file %s\\n' $i > $(printf 'f%03d.txt' $i); i=$((i+1)); done\n\
             mkdir -p sub && echo deep > sub/deep.txt\n\
             echo wrote 201 files\n",
            p = pids.display()
        ),
    )
    .unwrap();
    (format!("sh {}", script.display()), pids)
}

/// The children still running of those `pids` names, waiting up to two seconds for them to go
/// (the ones left are killed, so a failing point leaves nothing behind).
fn orphans(pids: &Path) -> Vec<i32> {
    let read = || -> Vec<i32> {
        std::fs::read_to_string(pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .filter(|&p| pid_alive(p))
            .collect()
    };
    let start = Instant::now();
    let mut left = read();
    while !left.is_empty() && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
        left = read();
    }
    for &p in &left {
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    left
}

/// The job as `job show --json` gives it; the call must succeed and its output parse.
fn show(env: &Env, id: &str) -> serde_json::Value {
    let out = oneshot(env)
        .args(["job", "show", id, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "job show {id}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "job show {id} --json does not parse ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// What SQLite's own check says of the job store.
fn integrity(env: &Env) -> String {
    let db = rusqlite::Connection::open(env.state_dir().join("jobs.db")).unwrap();
    db.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

/// Every file under the state dir whose name says it is a temp file oneshot left.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for e in entries.flatten() {
        let path = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            // A workspace is the agent's: its files are the job's work, not oneshot's.
            if e.file_name() != "worktrees" {
                found.extend(temp_files(&path));
            }
        } else if e.file_name().to_string_lossy().contains(".tmp.") {
            found.push(path);
        }
    }
    found
}

#[cfg(target_os = "linux")]
#[test]
fn kill_9_of_job_run_at_any_moment_leaves_no_orphan_and_a_job_the_next_runner_ends() {
    let lease = format!("{}s", LEASE.as_secs());
    // Where each kill landed (the state `job show` read right after it), for the message.
    let mut landed: BTreeMap<String, u32> = BTreeMap::new();
    // How many kills came once the worker had started children.
    let mut with_children = 0;
    let started = Instant::now();
    for (point, delay) in delays(23).enumerate() {
        let at = format!("point {point} ({delay:?})");
        let env = Env::new();
        let (worker, pids) = worker(&env);
        let id = env.create(&worker, DONE, &["--activate"]);

        let mut runner = oneshot(&env)
            .args(["job", "run", "--lease", &lease])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        signal(runner.id(), libc::SIGKILL);
        let _ = wait_timeout(&mut runner, Duration::from_secs(10));
        let killed = Instant::now();

        if std::fs::read_to_string(&pids).is_ok_and(|p| !p.is_empty()) {
            with_children += 1;
        }
        let left = orphans(&pids);
        assert!(left.is_empty(), "{at}: orphans {left:?}");
        let state = show(&env, &id)["job"]["state"]
            .as_str()
            .unwrap()
            .to_string();
        *landed.entry(state).or_default() += 1;

        // The dead runner's lease runs out (a little margin for the two clocks' reads).
        std::thread::sleep(
            (killed + LEASE + Duration::from_millis(300)).saturating_duration_since(Instant::now()),
        );
        let out = oneshot(&env)
            .args(["job", "run", "--lease", &lease])
            .output()
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{at}: the next run: {said}");
        let v = show(&env, &id);
        assert_eq!(
            v["job"]["state"], "APPROVAL_REQUIRED",
            "{at}: {said}\n{v:#}"
        );

        // All the work is on the job's branch, once.
        let tree = git(
            &env.repo(),
            &[
                "ls-tree",
                "-r",
                "--name-only",
                v["job"]["spec"]["branch"].as_str().unwrap(),
            ],
        );
        let mut want = worker_files();
        want.push("a.txt".into());
        want.sort();
        let mut got: Vec<&str> = tree.lines().collect();
        got.sort();
        assert_eq!(got, want, "{at}: the branch's files");
        assert_eq!(integrity(&env), "ok", "{at}: the job store");
        let temps = temp_files(&env.state_dir());
        assert!(temps.is_empty(), "{at}: temp files left: {temps:?}");
        // The run that finished the job left nothing running either.
        let left = orphans(&pids);
        assert!(left.is_empty(), "{at}: left running after the end {left:?}");
    }
    eprintln!(
        "{} kill points in {:?}, {with_children} with the worker's children running; the \
         kills landed in {landed:?}",
        points(),
        started.elapsed()
    );
}

#[test]
fn three_runners_on_one_store_run_every_worker_once() {
    const JOBS: usize = 6;
    let env = Env::new();
    // Outside the repository and apart from the state dir (a directory holding that takes no
    // new entries from a confined agent), made before any agent runs.
    let shared = env.dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let log = shared.join("ran.log");
    let ids: Vec<String> = (0..JOBS)
        .map(|n| {
            let worker = format!(
                "sh -c 'echo job{n} >> {log}; sleep 0.3; echo {n} > f.txt'",
                log = log.display()
            );
            env.create(&worker, DONE, &["--activate"])
        })
        .collect();

    // All three at once, two steps each: six slots for six jobs, every claim contended.
    let runners: Vec<_> = (0..3)
        .map(|_| {
            oneshot(&env)
                .args(["job", "run", "--parallel", "2", "--lease", "2s"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut said = String::new();
    for (n, r) in runners.into_iter().enumerate() {
        let out = r.wait_with_output().unwrap();
        let text = format!(
            "--- runner {n} ({})\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        said.push_str(&text);
    }

    let ran = std::fs::read_to_string(&log).unwrap();
    let mut by = std::collections::BTreeSet::new();
    for (n, id) in ids.iter().enumerate() {
        let v = show(&env, id);
        assert_eq!(
            v["job"]["state"], "APPROVAL_REQUIRED",
            "{id}: {v:#}\n{said}"
        );
        let times = ran.lines().filter(|l| *l == format!("job{n}")).count();
        assert_eq!(times, 1, "{id}'s worker ran {times} times: {ran}\n{said}");
        let history = v["history"].as_array().unwrap();
        let steps: Vec<_> = history.iter().filter(|t| t["trigger"] == "step").collect();
        assert_eq!(steps.len(), 1, "{id} stepped once: {v:#}");
        assert!(
            !v["history"].to_string().contains("RECOVERING"),
            "{id} was never taken from a live runner: {v:#}"
        );
        by.insert(steps[0]["by"].as_str().unwrap().to_string());
        assert_eq!(
            git(
                &env.repo(),
                &[
                    "show",
                    &format!("{}:f.txt", v["job"]["spec"]["branch"].as_str().unwrap())
                ]
            ),
            n.to_string()
        );
    }
    assert_eq!(ran.lines().count(), JOBS, "{ran}");
    assert_eq!(integrity(&env), "ok");
    eprintln!(
        "{JOBS} jobs, 3 runners; steps taken by {} of them",
        by.len()
    );
}
