//! `oneshot prune --older-than D`: old finished sessions go, nothing running or resumable does,
//! and `--dry-run` removes nothing.

use crate::common;
use common::*;
use oneshot::session::{NewSession, Phase, PolicyRef, Session};
use oneshot::store::Store;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const DAY: u64 = 24 * 3_600_000;

/// A session in `phase` last updated `age_days` ago; returns its id.
fn session(w: &World, phase: Phase, age_days: u64, task: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let store = Store::new(w.state_dir());
    let dir = store.create_session().unwrap();
    let mut s = Session::new(
        NewSession {
            id: dir.id().into(),
            task: task.into(),
            workdir: w.work(),
            worker_cmd: "sh w.sh".into(),
            auditor_cmd: "sh a.sh".into(),
        },
        PolicyRef {
            path: None,
            hash: "sha256:0".into(),
            generation: 1,
            budget: None,
        },
        3,
        now - age_days * DAY,
    );
    s.phase = phase;
    s.updated_ms = now - age_days * DAY;
    let redactor = oneshot::redact::Redactor::new(&[], Vec::new()).unwrap();
    dir.write_state(&redactor.seal(&s).unwrap()).unwrap();
    dir.id().to_string()
}

fn prune(w: &World, args: &[&str]) -> (String, String) {
    let out = w.cmd().arg("prune").args(args).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn prune_removes_only_old_finished_sessions() {
    let w = World::new();
    let done = session(&w, Phase::Completed, 10, "old done");
    let failed = session(&w, Phase::failed(), 9, "old failed");
    let rejected = session(&w, Phase::Rejected, 8, "old rejected");
    let recent = session(&w, Phase::Completed, 1, "recent done");
    let created = session(&w, Phase::Created, 30, "old but never finished");
    // A session running right now, however old its files look: never touched.
    let (worker, marker) = w.pausing_worker();
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut child = w.spawn(&worker, &auditor, &[], "running");
    w.wait_for(&marker, Duration::from_secs(15));
    let running = w
        .session_ids()
        .into_iter()
        .find(|id| ![&done, &failed, &rejected, &recent, &created].contains(&id))
        .unwrap();

    let (stdout, _) = prune(&w, &["--older-than", "7d", "--dry-run"]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    for (line, (id, state, task)) in lines.iter().zip([
        (&rejected, "REJECTED", "old rejected"),
        (&failed, "FAILED", "old failed"),
        (&done, "COMPLETED", "old done"),
    ]) {
        assert!(
            line.starts_with(&format!("would remove  {}  {state}", &id[..8])),
            "{line}"
        );
        assert!(line.ends_with(task), "{line}");
    }
    assert!(
        lines[3].starts_with("would remove 3 session(s) last updated before "),
        "{stdout}"
    );
    assert_eq!(w.session_ids().len(), 6, "a dry run removes nothing");

    let (stdout, _) = prune(&w, &["--older-than", "7d"]);
    assert!(
        stdout.contains(&format!("removed  {}  COMPLETED", &done[..8])),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("removed 3 session(s)"),
        "{stdout}"
    );
    let mut left = w.session_ids();
    left.sort();
    let mut want = vec![recent.clone(), created.clone(), running.clone()];
    want.sort();
    assert_eq!(left, want);

    // Nothing left to prune at that age: said on stderr, still a success.
    let (stdout, stderr) = prune(&w, &["--older-than", "7d"]);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.starts_with("nothing to prune: no COMPLETED, FAILED or REJECTED session"),
        "{stderr}"
    );

    // Even at age zero, the running and the unfinished sessions stay.
    prune(&w, &["--older-than", "0s"]);
    let mut left = w.session_ids();
    left.sort();
    let mut want = vec![created, running];
    want.sort();
    assert_eq!(left, want);
    signal(child.id(), SIGINT);
    wait_timeout(&mut child, Duration::from_secs(10));
}

#[test]
fn prune_needs_an_age() {
    let w = World::new();
    let out = w.cmd().arg("prune").output().unwrap();
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--older-than <D>"));
}
