//! A closed pipe never panics oneshot: a reader that goes away ends a listing quietly, and a
//! running session whose terminal output is gone still runs to its end (the log has it all).

use crate::common;
use common::*;
use std::process::Stdio;
use std::time::Duration;

#[test]
fn a_reader_that_goes_away_ends_the_listing_quietly() {
    let w = World::new();
    let auditor = w.script("a.sh", AUDIT_DONE);
    for i in 0..3 {
        let out = w.run(&format!("echo work {i}"), &auditor, &[], "t");
        assert_eq!(code(&out), 0, "{}", text(&out));
    }
    let id = w.session_ids()[0].clone();
    for args in [
        vec!["list"],
        vec!["list", "--json"],
        vec!["status", id.as_str()],
        vec!["log", id.as_str()],
    ] {
        // A reader that is already gone when the output comes (like `| head -0`).
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = w
            .cmd()
            .args(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

#[test]
fn a_session_whose_output_is_gone_still_runs_to_the_end() {
    let w = World::new();
    let worker = w.script(
        "w.sh",
        "for i in 1 2 3 4 5 6 7 8; do echo line $i; echo err $i >&2; sleep 0.05; done",
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    // stdout and stderr into one pipe whose reader leaves at once (`2>&1 | head -0`).
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = w
        .cmd()
        .args(["--worker-cmd", &worker, "--auditor-cmd", &auditor, "t"])
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    let status = wait_timeout(&mut child, Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
    let id = w.session_id();
    assert_eq!(w.trace(&id).last().unwrap(), "COMPLETED");
    let logged = w
        .log(&id)
        .iter()
        .filter(|r| r["type"] == "activity" && r["role"] == "worker")
        .count();
    assert_eq!(logged, 16, "every agent line is in the log");
}
