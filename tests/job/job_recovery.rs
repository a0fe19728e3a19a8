//! `kill -9` of a `oneshot job run` mid-step, through the real binary: its agent dies with it,
//! its lease expires, and the next runner recovers the job — nothing lost, nothing orphaned.

use crate::job_env;
use job_env::git;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn oneshot(state: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_oneshot"));
    c.arg("--state-dir")
        .arg(state)
        .env("ONESHOT_ACTOR", "tester");
    c
}

fn alive(pid: i32) -> bool {
    // Signal 0 probes; a zombie is not running either (its parent, the killed runner, is gone,
    // so init reaps it).
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty() && !stat.contains(") Z ")
}

#[test]
fn a_killed_runner_leaves_no_agent_and_its_job_is_recovered() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "x\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "init"]);
    // Apart from where the agents write: a directory holding it takes no new entries from them.
    let private = tempfile::tempdir().unwrap();
    let state = private.path().join("state");
    // The first time, the worker hangs (and says its pid); after that it does the work.
    let marker = tmp.path().join("first-run");
    let pidfile = tmp.path().join("worker.pid");
    let worker = format!(
        "sh -c 'if [ -e {m} ]; then echo done > result.txt; else touch {m}; echo $$ > {p}; exec sleep 120; fi'",
        m = marker.display(),
        p = pidfile.display()
    );
    let out = oneshot(&state)
        .args(["job", "create", "--source"])
        .arg(&repo)
        .args([
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            "echo VERDICT: DONE",
            "--activate",
        ])
        .arg("write result.txt")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|w| w.starts_with("job-"))
        .expect("the new job's id")
        .to_string();

    let mut runner = oneshot(&state)
        .args(["job", "run", "--lease", "2s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !pidfile.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the worker never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    let worker_pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(worker_pid));
    runner.kill().unwrap(); // SIGKILL: no cleanup of its own
    runner.wait().unwrap();
    let t = Instant::now();
    while alive(worker_pid) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the worker outlived its runner"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // While the dead runner's lease lives, nobody takes the job; once it expires, the next
    // runner recovers it.
    let shown = oneshot(&state).args(["job", "show", &id]).output().unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).contains("EXECUTING"));
    std::thread::sleep(Duration::from_millis(2500));
    let out = oneshot(&state)
        .args(["job", "run", "--lease", "2s"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = oneshot(&state)
        .args(["job", "show", &id, "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let text = v.to_string();
    assert_eq!(
        v["job"]["state"].as_str().or(v["state"].as_str()),
        Some("APPROVAL_REQUIRED"),
        "{text}"
    );
    assert!(text.contains("RECOVERING"), "{text}");
    assert!(text.contains("lease expired"), "{text}");
    // The work is on the job's branch.
    let branch = v["job"]["spec"]["branch"].as_str().unwrap();
    assert_eq!(
        git(&repo, &["show", &format!("{branch}:result.txt")]),
        "done"
    );
}
