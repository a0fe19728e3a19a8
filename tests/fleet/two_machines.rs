//! A fleet over PostgreSQL (issue 23), through the real binary: runner processes on separate
//! "machines" (each its own HOME, state, cache and working directory) sharing only the job
//! store — a database of a real PostgreSQL (`tests/common/pg_server.rs`) — and the jobs'
//! source, a bare repository. Skipped where PostgreSQL is not installed (never in CI).

use crate::common;
use crate::fleet;

use fleet::{Fleet, wait_until};
use std::collections::BTreeSet;
use std::time::Duration;

/// Three runners, thirty jobs on a remote: every job rests, each worker's side effect
/// happened exactly once (one attempt each), every job's branch is on the remote with its work.
#[test]
fn three_runners_thirty_jobs_each_worker_once_every_branch_pushed() {
    let Some(fleet) = Fleet::new() else { return };
    let laptop = fleet.machine("laptop");
    let machines: Vec<_> = (0..3).map(|i| fleet.machine(&format!("m{i}"))).collect();
    let mut runners: Vec<_> = machines
        .iter()
        .map(|m| m.runner("10s", &["--parallel", "3"], &[]))
        .collect();
    let ids: Vec<(String, String)> = (0..30)
        .map(|i| {
            let token = format!("t{i:02}");
            (laptop.create(&fleet, &token), token)
        })
        .collect();
    let context = || {
        runners
            .iter()
            .map(|r| r.output())
            .collect::<Vec<_>>()
            .join("\n----\n")
    };
    wait_until(Duration::from_secs(300), "every job rests", context, || {
        laptop
            .states()
            .iter()
            .all(|(_, s)| s == "APPROVAL_REQUIRED" || s == "INTERVENTION_REQUIRED")
    });
    for r in &mut runners {
        let status = r.stop();
        assert!(status.success(), "{status:?}: {}", r.output());
    }
    let pushed: BTreeSet<String> = fleet.pushed().into_iter().collect();
    let mut ran_on = BTreeSet::new();
    for (id, token) in &ids {
        let shown = laptop.show(id);
        assert_eq!(shown["job"]["state"], "APPROVAL_REQUIRED", "{shown:#}");
        let runs = fleet.runs(token);
        assert_eq!(runs.len(), 1, "job {id}'s worker ran once: {runs:?}");
        let sessions = shown["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 1, "{shown:#}");
        assert_eq!(sessions[0]["session_id"], runs[0].as_str());
        ran_on.insert(
            sessions[0]["runner_id"]
                .as_str()
                .unwrap()
                .split('-')
                .nth(1)
                .unwrap()
                .to_string(),
        );
        let branch = shown["job"]["spec"]["branch"].as_str().unwrap().to_string();
        assert!(pushed.contains(&branch), "{branch} pushed: {pushed:?}");
        let file = format!("attempt-{}.txt", runs[0]);
        assert!(
            fleet.files_on(&branch).contains(&file),
            "{branch} holds {file}"
        );
    }
    assert_eq!(pushed.len(), 30, "{pushed:?}");
    assert!(ran_on.len() >= 2, "the runners shared the work: {ran_on:?}");
    // Nobody is listed as running any more.
    let listed = laptop.ok(&["job", "runners", "--json"]);
    assert!(listed.trim().is_empty(), "{listed}");
}

/// `kill -9` of a runner mid-step: its agent does not outlive it; once its lease expires a
/// runner on another machine recovers the job from the store and the pushed branch with a
/// fresh conversation (the history says so); and a machine that never ran the job shows it,
/// its log and its diff.
#[test]
fn a_runner_killed_mid_step_is_recovered_on_another_machine_and_readable_anywhere() {
    let Some(fleet) = Fleet::new() else { return };
    let laptop = fleet.machine("laptop");
    let a = fleet.machine("a");
    let b = fleet.machine("b");
    let id = laptop.create(&fleet, "k1");
    // A first attempt on A, pushed; rejected for a second.
    let mut ra = a.runner("3s", &[], &[]);
    wait_until(
        Duration::from_secs(60),
        "the first attempt rests",
        || ra.output(),
        || laptop.state(&id) == "APPROVAL_REQUIRED",
    );
    laptop.ok(&["job", "reject", &id, "--feedback", "once more"]);
    fleet.hold();
    wait_until(
        Duration::from_secs(60),
        "the second attempt runs",
        || ra.output(),
        || fleet.runs("k1").len() == 2 && fleet.waiting(),
    );
    // Its records reach the store while it runs.
    wait_until(
        Duration::from_secs(10),
        "the second session shipped",
        || ra.output(),
        || laptop.show(&id)["sessions"].as_array().unwrap().len() == 2,
    );
    common::signal(ra.child.id(), common::SIGKILL);
    let _ = ra.child.wait();
    wait_until(
        Duration::from_secs(10),
        "its agent gone with it",
        || ra.output(),
        || !fleet.waiting(),
    );
    fleet.release();
    let first = fleet.runs("k1")[0].clone();
    let second = fleet.runs("k1")[1].clone();

    // B takes it over once A's lease expired.
    let mut rb = b.runner("3s", &[], &[]);
    wait_until(
        Duration::from_secs(60),
        "B recovers the job",
        || rb.output(),
        || laptop.state(&id) == "APPROVAL_REQUIRED",
    );
    assert!(rb.stop().success(), "{}", rb.output());
    let runs = fleet.runs("k1");
    assert_eq!(runs.len(), 3, "{runs:?}");
    let third = runs[2].clone();
    let shown = laptop.show(&id);
    let history = shown["history"].to_string();
    assert!(history.contains("lease_expired"), "{history}");
    assert!(history.contains("fresh_conversation"), "{history}");
    assert!(
        history.contains(&second),
        "the history names the lost session: {history}"
    );
    // The pushed branch carries the first attempt's work and B's; the second attempt's was
    // never committed (it died with A's machine).
    let branch = shown["job"]["spec"]["branch"].as_str().unwrap().to_string();
    let files = fleet.files_on(&branch);
    assert!(files.contains(&format!("attempt-{first}.txt")), "{files:?}");
    assert!(files.contains(&format!("attempt-{third}.txt")), "{files:?}");
    assert!(
        !files.contains(&format!("attempt-{second}.txt")),
        "{files:?}\n{}\n{}",
        laptop.ok(&["job", "show", &id]),
        String::from_utf8_lossy(
            &std::process::Command::new("git")
                .args(["log", "--stat", &branch])
                .current_dir(fleet.dir.path().join("remote.git"))
                .output()
                .unwrap()
                .stdout
        )
    );
    // B's worker was told it continues another machine's attempt.
    let b_prompt = b.ok(&["job", "log", &id, "--json"]);
    assert!(
        b_prompt.contains("EARLIER ATTEMPT"),
        "the fresh session's prompt says so"
    );

    // The laptop never ran it: show, log and diff read the store and the remote.
    let sessions: Vec<String> = shown["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(sessions, [first.clone(), second.clone(), third.clone()]);
    let log = laptop.ok(&["job", "log", &id]);
    for s in [&first, &second, &third] {
        assert!(log.contains(&format!("── session {s}")), "{log}");
    }
    let diff = laptop.ok(&["job", "diff", &id]);
    assert!(diff.contains(&format!("attempt-{first}.txt")), "{diff}");
    assert!(diff.contains(&format!("attempt-{third}.txt")), "{diff}");
    assert!(
        fleet::files_named(&laptop.state_dir(), "oneshot-log.json").is_empty(),
        "the laptop holds no session"
    );
    // Nothing of A's step runs on A's machine.
    assert!(!fleet.waiting());
}

/// A runner stopped (SIGSTOP) past its lease, then continued: another runner took the job
/// over meanwhile; the stopped one, woken, stops its agent and writes nothing — the job's
/// newer state stands.
#[test]
fn a_runner_stopped_past_its_lease_is_fenced_when_it_wakes_and_stops_its_agent() {
    let Some(fleet) = Fleet::new() else { return };
    let laptop = fleet.machine("laptop");
    let a = fleet.machine("a");
    let b = fleet.machine("b");
    let id = laptop.create(&fleet, "s1");
    fleet.hold();
    let mut ra = a.runner("2s", &[], &[]);
    wait_until(
        Duration::from_secs(60),
        "A's worker runs",
        || ra.output(),
        || fleet.runs("s1").len() == 1 && fleet.waiting(),
    );
    common::signal(ra.child.id(), libc::SIGSTOP);
    // A's agent runs on in its own process group; B's must not wait.
    std::thread::sleep(Duration::from_millis(2500));
    let marker = fleet.effects().join("hold");
    std::fs::remove_file(&marker).unwrap();
    let mut rb = b.runner("2s", &[], &[]);
    wait_until(
        Duration::from_secs(60),
        "B takes the job over",
        || rb.output(),
        || laptop.state(&id) == "APPROVAL_REQUIRED",
    );
    assert!(rb.stop().success(), "{}", rb.output());
    let before = laptop.show(&id);
    // A's agent is still in its wait (the hold is gone, its sleep goes on).
    assert!(fleet.waiting());
    common::signal(ra.child.id(), libc::SIGCONT);
    wait_until(
        Duration::from_secs(20),
        "A stops its agent",
        || ra.output(),
        || !fleet.waiting(),
    );
    std::thread::sleep(Duration::from_secs(1));
    let after = laptop.show(&id);
    assert_eq!(before["history"], after["history"], "A wrote nothing");
    assert_eq!(after["job"]["state"], "APPROVAL_REQUIRED");
    assert_eq!(
        before["sessions"], after["sessions"],
        "nor shipped anything"
    );
    let status = ra.stop();
    let out = ra.output();
    assert!(
        out.contains("lost the lease") || out.contains("could not renew the lease"),
        "{status:?}: {out}"
    );
    assert_eq!(fleet.runs("s1").len(), 2);
}

/// A runner whose own clock is five minutes ahead steals no live lease: leases are judged by
/// the database's clock.
#[test]
fn a_runner_whose_clock_is_ahead_steals_no_live_lease() {
    let Some(fleet) = Fleet::new() else { return };
    let laptop = fleet.machine("laptop");
    let a = fleet.machine("a");
    let skewed = fleet.machine("skewed");
    let id = laptop.create(&fleet, "c1");
    fleet.hold();
    let mut ra = a.runner("3s", &[], &[]);
    wait_until(
        Duration::from_secs(60),
        "A's worker runs",
        || ra.output(),
        || fleet.runs("c1").len() == 1,
    );
    let mut rs = skewed.runner("3s", &[], &[("ONESHOT_CLOCK_OFFSET", "300000")]);
    // Several lease lifetimes by the skewed runner's clock, and by the database's.
    std::thread::sleep(Duration::from_secs(8));
    let shown = laptop.show(&id);
    assert_eq!(shown["job"]["state"], "EXECUTING", "{shown:#}");
    let lease = shown["lease"]["runner_id"].as_str().unwrap().to_string();
    assert!(
        lease.contains(&format!("-{}-", ra.child.id())),
        "A holds it: {lease}"
    );
    assert_eq!(fleet.runs("c1").len(), 1, "nobody else ran it");
    fleet.release();
    wait_until(
        Duration::from_secs(60),
        "A finishes it",
        || ra.output(),
        || laptop.state(&id) == "APPROVAL_REQUIRED",
    );
    assert!(rs.stop().success(), "{}", rs.output());
    assert!(ra.stop().success(), "{}", ra.output());
    assert_eq!(
        fleet.runs("c1").len(),
        1,
        "{}\n{}",
        laptop.ok(&["job", "show", &id]),
        laptop.ok(&["job", "log", &id])
    );
}
