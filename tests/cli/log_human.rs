//! `oneshot log ID` for people: the decisions with their reasons (verdicts, salvage, guard
//! vetoes), never the routine built-in ones or the blobs, which `--json` keeps.

use crate::common;
use common::*;

/// The log's lines without their timestamps, only those of the kinds given (`??`, `==`, …).
fn lines(w: &World, id: &str, kinds: &[&str]) -> Vec<String> {
    let out = w.cmd().args(["log", id]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.get(13..).unwrap_or_default().to_string())
        .filter(|l| kinds.iter().any(|k| l.starts_with(k)))
        .collect()
}

#[test]
fn the_log_shows_salvage_and_each_verdict_with_its_reason() {
    let w = World::new();
    let once = w.tmp.path().join("audited");
    let failed = w.tmp.path().join("failed");
    // The first run fails after changing a file (salvaged), the next two exit 0.
    let worker = w.script(
        "w.sh",
        &format!(
            "echo line >> f.txt; if [ ! -f {f} ]; then touch {f}; exit 3; fi",
            f = failed.display()
        ),
    );
    let auditor = w.script(
        "a.sh",
        &format!(
            "if [ -f {o} ]; then echo 'VERDICT: DONE All Good'; else touch {o}; \
             echo 'VERDICT: RETRY Add the Tests'; fi",
            o = once.display()
        ),
    );
    let out = w.run(&worker, &auditor, &[], "the task");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(
        lines(&w, &id, &["??", "=="]),
        [
            "== CREATED -> WORKER_EXECUTING",
            "== WORKER_EXECUTING -> RECOVERY_PENDING (the worker exited with code 3)",
            "?? salvage (built-in) -> partial: 1 file(s) changed",
            "== RECOVERY_PENDING -> REITERATION_PENDING (salvage partial: 1 file(s) changed)",
            "== REITERATION_PENDING -> WORKER_EXECUTING",
            "== WORKER_EXECUTING -> AUDIT_PENDING",
            "== AUDIT_PENDING -> AUDITOR_EXECUTING",
            "?? verdict (built-in) -> RETRY: Add the Tests",
            "== AUDITOR_EXECUTING -> REITERATION_PENDING (retry: Add the Tests)",
            "== REITERATION_PENDING -> WORKER_EXECUTING",
            "== WORKER_EXECUTING -> AUDIT_PENDING",
            "== AUDIT_PENDING -> AUDITOR_EXECUTING",
            "?? verdict (built-in) -> DONE: All Good",
            "== AUDITOR_EXECUTING -> COMPLETED (done: All Good)",
        ]
    );
    // The routine decisions and the blobs are in the raw records, not in the human log.
    let raw = w.log(&id);
    let routine = raw
        .iter()
        .filter(|r| r["type"] == "decision" && r["hook"] == "on_transition")
        .count();
    assert!(routine > 0, "the raw log keeps them");
    let out = w.cmd().args(["log", &id]).output().unwrap();
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(
        !human.contains("on_transition") && !human.contains("$blob"),
        "{human}"
    );
    assert!(
        !human.contains("-> allow") && !human.contains("prompt ("),
        "{human}"
    );
}

#[test]
fn the_log_shows_a_guard_veto_with_its_reason() {
    let w = World::new();
    let worker = w.script("w.sh", "echo line >> f.txt");
    let auditor = w.script("a.sh", "echo 'VERDICT: RETRY add the tests'");
    let policy = w.policy(
        r#"return { guards = { ["AUDITOR_EXECUTING -> REITERATION_PENDING"] =
             function(ctx) return false, "one audit is all we pay for" end } }"#,
    );
    let out = w.run(&worker, &auditor, &["--policy", &policy], "the task");
    assert_eq!(code(&out), 1, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(
        lines(&w, &id, &["??"]),
        [
            "?? verdict (built-in) -> RETRY: add the tests",
            "?? guards[AUDITOR_EXECUTING -> REITERATION_PENDING] -> VETO: one audit is all we \
             pay for",
        ]
    );
    let last = lines(&w, &id, &["=="]).pop().unwrap();
    assert_eq!(
        last,
        "== AUDITOR_EXECUTING -> FAILED (guard AUDITOR_EXECUTING -> REITERATION_PENDING vetoed: \
         one audit is all we pay for)"
    );
}

#[test]
fn the_log_shows_a_hook_over_its_budget_and_the_warning_it_left() {
    let w = World::new();
    let worker = w.script("w.sh", "echo line >> f.txt");
    let auditor = w.script("a.sh", AUDIT_DONE);
    let policy = w.policy(
        "return {\n  on_transition = function(from, to, ctx) if to == \"AUDIT_PENDING\" then \
         while true do end end end,\n}\n",
    );
    let out = w.run(&worker, &auditor, &["--policy", &policy], "the task");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    let over = "failed to run hook on_transition within its 100ms budget; make it faster or \
                raise the budget (--hook-budget) (the hook is defined at p.lua:2)";
    let lines = lines(&w, &id, &["?? on_transition -> error", "warning:"]);
    assert_eq!(
        lines,
        [
            format!("?? on_transition -> error (budget): {over}"),
            format!(
                "warning: after WORKER_EXECUTING -> AUDIT_PENDING: {over}; on_transition fails \
                 open, so the session goes on"
            ),
        ]
    );
}

#[test]
fn the_log_shows_a_reload_and_the_verdict_of_the_new_policy() {
    let w = World::new();
    let policy = w.file(
        "policy.lua",
        "return { verdict = function(o, ctx) return 'impossible', 'old policy' end }\n",
    );
    let new = w.file(
        "new.lua",
        "return { verdict = function(o, ctx) return 'done', 'new policy' end }\n",
    );
    // The worker saves the edit as an editor would, then gives the watcher time to see it.
    let worker = w.script(
        "w.sh",
        &format!(
            "cp {new} {p}.swp && mv {p}.swp {p}; sleep 1; echo worked",
            new = new.display(),
            p = policy.display()
        ),
    );
    let auditor = w.script("a.sh", "echo checking");
    let out = w.run(
        &worker,
        &auditor,
        &["--policy", policy.to_str().unwrap()],
        "t",
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    let lines = lines(&w, &id, &["policy reloaded", "?? verdict"]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("policy reloaded: generation 2 (sha256:"),
        "{lines:?}"
    );
    assert_eq!(lines[1], "?? verdict -> DONE: new policy");
}

/// Agent text quoted by `log` and `status` (output lines, a verdict's reason, the task) keeps
/// its terminal control sequences in the log file but never prints them.
#[test]
fn log_and_status_print_no_control_sequences_from_an_agent() {
    let w = World::new();
    let worker = w.script(
        "w.sh",
        "printf 'before\\033]0;pwned\\007after\\033[2J\\n'; echo x > f.txt",
    );
    let auditor = w.script(
        "a.sh",
        "printf 'VERDICT: DONE fine\\033]0;pwned2\\007 indeed\\n'",
    );
    let out = w.run(&worker, &auditor, &[], "the \u{1b}[31mred\u{1b}[0m task");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    let log = w.cmd().args(["log", &id]).output().unwrap();
    let status = w.cmd().args(["status", &id]).output().unwrap();
    let raw = w.cmd().args(["log", &id, "--json"]).output().unwrap();
    for out in [&log, &status] {
        assert_eq!(code(out), 0, "{}", text(out));
        assert!(
            !out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07),
            "{:?}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("beforeafter"), "{log}");
    assert!(log.contains("fine indeed"), "{log}");
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("the red task"), "{status}");
    // The raw bytes stay in the log file (JSON-escaped there).
    assert!(String::from_utf8_lossy(&raw.stdout).contains("\\u001b]0;pwned"));
}
