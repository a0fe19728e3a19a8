//! `oneshot list` and `oneshot status` over many sessions through the real binary: every
//! session listed, newest first, the unreadable ones reported on their own line without
//! stopping the listing.

use crate::common;
use common::*;
use oneshot::machine::SessionState;
use oneshot::session::{HistoryEntry, NewSession, Phase, PolicyRef, Session};
use oneshot::store::Store;
use serde_json::Value;
use std::time::{Duration, UNIX_EPOCH};

const SESSIONS: u64 = 50;
const BASE_MS: u64 = 1_700_000_000_000;
const HOUR: u64 = 3_600_000;

/// The task of session `n`: several lines, braces and quotes that must not end the head early.
fn task(n: u64) -> String {
    format!("task #{n:02}: parse {{\"key\": \"a }} b\"}}\nsecond line with \\ and \"quotes\" }}")
}

/// Writes `SESSIONS` valid sessions (created an hour apart, in a shuffled order, each
/// directory last changed when its session last was) and returns their ids, newest first.
fn sessions(w: &World) -> Vec<String> {
    let store = Store::new(w.state_dir());
    let mut made = Vec::new();
    for i in 0..SESSIONS {
        let n = i * 17 % SESSIONS;
        let created = BASE_MS + n * HOUR;
        let dir = store.create_session().unwrap();
        let mut s = Session::new(
            NewSession {
                id: dir.id().into(),
                task: task(n),
                workdir: "/work".into(),
                worker_cmd: "sh w.sh".into(),
                auditor_cmd: "sh a.sh".into(),
            },
            PolicyRef {
                path: None,
                hash: "sha256:0123".into(),
                generation: 1,
                budget: None,
            },
            12,
            created,
        );
        let entry = s.history[0].clone();
        for k in 1..10 + n {
            s.history.push(HistoryEntry {
                state: SessionState::WorkerExecuting,
                ts: created + k,
                iteration: (k / 4 + 1) as u32,
                ..entry.clone()
            });
        }
        s.iteration = (n % 12) as u32 + 1;
        s.updated_ms = created + 10 + n;
        s.phase = match n % 3 {
            0 => Phase::Completed,
            1 => Phase::failed(),
            _ => Phase::Rejected,
        };
        s.worker_output = "worker output line\n".repeat(500);
        let redactor = oneshot::redact::Redactor::new(&[], Vec::new()).unwrap();
        dir.write_state(&redactor.seal(&s).unwrap()).unwrap();
        let changed = UNIX_EPOCH + Duration::from_millis(s.updated_ms);
        std::fs::File::open(dir.path())
            .unwrap()
            .set_modified(changed)
            .unwrap();
        made.push((created, dir.id().to_string()));
    }
    made.sort_by_key(|&(created, _)| std::cmp::Reverse(created));
    made.into_iter().map(|(_, id)| id).collect()
}

/// Two unreadable sessions: one cut short, one from a newer oneshot. Returned sorted by id.
fn unreadable(w: &World) -> Vec<String> {
    let store = Store::new(w.state_dir());
    let cut = store.create_session().unwrap();
    std::fs::write(
        cut.state_path(),
        "{\n  \"schema\": 2,\n  \"oneshot_id\": \"x\",\n  \"state\": \"COMPL",
    )
    .unwrap();
    let newer = store.create_session().unwrap();
    std::fs::write(newer.state_path(), "{\"schema\": 99, \"whatever\": []}").unwrap();
    let mut ids = vec![cut.id().to_string(), newer.id().to_string()];
    ids.sort();
    ids
}

#[test]
fn list_shows_every_session_newest_first_and_reports_the_unreadable() {
    let w = World::new();
    let good = sessions(&w);
    let bad = unreadable(&w);

    let out = w.cmd().arg("list").output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1 + good.len() + bad.len(), "{stdout}");
    assert!(lines[0].starts_with("ID"), "{stdout}");
    for (k, id) in good.iter().enumerate() {
        let line = lines[1 + k];
        let n = SESSIONS - 1 - k as u64;
        assert!(line.starts_with(&id[..8]), "line {k}: {line}");
        assert!(line.contains(&format!("task #{n:02}: parse")), "{line}");
        let state = ["COMPLETED", "FAILED", "REJECTED"][n as usize % 3];
        assert!(line.contains(state), "{line}");
        assert!(
            line.contains(&format!("{}/12", n % 12 + 1)),
            "iterations: {line}"
        );
    }
    let tail = &lines[1 + good.len()..];
    for (line, id) in tail.iter().zip(&bad) {
        assert!(
            line.starts_with(&id[..8]) && line.contains("unreadable"),
            "{line}"
        );
    }
    let tail = tail.join("\n");
    assert!(
        tail.contains("is corrupt") && tail.contains("schema 99"),
        "{tail}"
    );
}

#[test]
fn list_json_has_one_object_per_session_with_the_whole_task() {
    let w = World::new();
    let good = sessions(&w);
    let bad = unreadable(&w);

    let out = w.cmd().args(["list", "--json"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), good.len() + bad.len());
    for (k, (row, id)) in rows.iter().zip(&good).enumerate() {
        let n = SESSIONS - 1 - k as u64;
        let created = BASE_MS + n * HOUR;
        let fields: Vec<&str> = row
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            fields.len(),
            11,
            "session_id, state, iteration_count, max_iterations, created_at, updated_at, task, \
             liveness, stale, pid, spent: {row}"
        );
        assert_eq!(
            row["spent"]["turns"], 0,
            "command agents report nothing: {row}"
        );
        assert_eq!(row["liveness"], "ended");
        assert_eq!(row["stale"], false);
        assert!(row["pid"].is_null(), "{row}");
        assert_eq!(row["session_id"], id.as_str());
        assert_eq!(row["task"], task(n).as_str());
        assert_eq!(row["iteration_count"], n % 12 + 1);
        assert_eq!(row["max_iterations"], 12);
        let at = |ms: u64| {
            humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
        };
        assert_eq!(row["created_at"], at(created).as_str());
        assert_eq!(row["updated_at"], at(created + 10 + n).as_str());
    }
    for (row, id) in rows[good.len()..].iter().zip(&bad) {
        assert_eq!(row["session_id"], id.as_str());
        assert!(row["error"].is_string(), "{row}");
    }
}

#[test]
fn status_shows_the_newest_or_the_one_asked_for() {
    let w = World::new();
    let good = sessions(&w);
    let bad = unreadable(&w);

    let out = w.cmd().arg("status").output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.starts_with(&format!("session   {}\n", good[0])), "{s}");
    assert!(s.contains(&format!("task #{:02}", SESSIONS - 1)), "{s}");

    let out = w.cmd().args(["status", &good[20][..8]]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.starts_with(&format!("session   {}\n", good[20])), "{s}");

    let out = w.cmd().args(["status", &bad[0]]).output().unwrap();
    assert_eq!(code(&out), 1, "{}", text(&out));
}

/// The STATE column of `list`'s line for session `id`.
fn list_line(w: &World, args: &[&str], id: &str) -> Option<String> {
    let out = w.cmd().arg("list").args(args).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.starts_with(&id[..8]))
        .map(str::to_string)
}

#[test]
fn a_killed_oneshot_leaves_a_stale_session_with_its_resume_command() {
    let w = World::new();
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "task to crash");
    w.wait_for(&marker, Duration::from_secs(15));
    let id = w.session_id();

    // While it runs: alive, with the driver's pid.
    let line = list_line(&w, &[], &id).unwrap();
    assert!(
        line.contains("WORKER_EXECUTING ") && !line.contains("stale"),
        "{line}"
    );
    assert!(list_line(&w, &["--state", "running"], &id).is_some());
    assert!(list_line(&w, &["--state", "stale"], &id).is_none());
    let out = w.cmd().args(["status", &id]).output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains(&format!(
            "state     WORKER_EXECUTING (oneshot pid {})",
            child.id()
        )),
        "{s}"
    );
    assert!(!s.contains("resume    "), "{s}");

    signal(child.id(), SIGKILL);
    wait_timeout(&mut child, Duration::from_secs(10));

    let line = list_line(&w, &[], &id).unwrap();
    assert!(line.contains("WORKER_EXECUTING (stale)"), "{line}");
    for (filter, listed) in [
        ("stale", true),
        ("resumable", true),
        ("running", false),
        ("paused", false),
    ] {
        assert_eq!(
            list_line(&w, &["--state", filter], &id).is_some(),
            listed,
            "--state {filter}"
        );
    }
    let out = w.cmd().args(["status", &id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("state     WORKER_EXECUTING (stale: the oneshot that drove it is gone)\n"),
        "{s}"
    );
    assert!(s.contains("running   was worker pid"), "{s}");
    assert!(
        s.ends_with(&format!("resume    oneshot resume {id}\n")),
        "{s}"
    );

    let out = w.cmd().args(["status", &id, "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&v["stale"], &v["liveness"], &v["resume_command"]),
        (
            &Value::Bool(true),
            &Value::from("stale"),
            &Value::from(format!("oneshot resume {id}"))
        )
    );
    let out = w.cmd().args(["list", "--json"]).output().unwrap();
    let row: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&row["stale"], &row["liveness"]),
        (&Value::Bool(true), &Value::from("stale"))
    );
    // The resume command it printed works.
    let out = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(list_line(&w, &[], &id).unwrap().contains("COMPLETED"));
}

#[test]
fn list_keeps_the_states_asked_for_up_to_the_limit() {
    let w = World::new();
    let good = sessions(&w);
    // Session n is COMPLETED, FAILED or REJECTED as n % 3 is 0, 1 or 2; good[k] is n = 49 - k.
    let ids = |args: &[&str]| -> Vec<String> {
        let out = w.cmd().arg("list").args(args).output().unwrap();
        assert_eq!(code(&out), 0, "{args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .map(|l| l[..8].to_string())
            .collect()
    };
    let short = |pick: &dyn Fn(u64) -> bool| -> Vec<String> {
        good.iter()
            .enumerate()
            .filter(|(k, _)| pick(SESSIONS - 1 - *k as u64))
            .map(|(_, id)| id[..8].to_string())
            .collect()
    };
    assert_eq!(ids(&["--limit", "3"]), short(&|n| n >= SESSIONS - 3));
    let failed = short(&|n| n % 3 == 1);
    assert_eq!(ids(&["--state", "failed"]), failed);
    assert_eq!(ids(&["--state", "FAILED", "--limit", "2"]), failed[..2]);
    let not_completed = short(&|n| n % 3 != 0);
    assert_eq!(ids(&["--state", "Failed,rejected"]), not_completed);
    assert_eq!(
        ids(&["--state", "failed", "--state", "REJECTED"]),
        not_completed
    );
    assert_eq!(ids(&["--state", "done"]).len(), good.len());
    let out = w
        .cmd()
        .args(["list", "--state", "running"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(out.stdout.is_empty(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("no sessions match"));

    let out = w
        .cmd()
        .args(["list", "--state", "finished"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown state `finished`; use a state"),
        "{}",
        text(&out)
    );
    let out = w.cmd().args(["list", "--limit", "0"]).output().unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
}
