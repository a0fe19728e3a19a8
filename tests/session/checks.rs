//! Checks before the auditor, through the real binary: a failing check is a RETRY with its
//! output as the critique and no auditor run; once they pass, the auditor's prompt and the
//! policy's `ctx.checks` carry their results; the config file and the policy give them too.

use crate::common;
use common::*;

/// A worker that fixes `value` on its second run, and an auditor that counts its runs and
/// keeps its prompt.
fn players(w: &World) -> (String, String) {
    let count = w.tmp.path().join("worker-runs");
    let worker = w.script(
        "w.sh",
        &format!(
            "echo x >> {count}; n=$(wc -l < {count}); \
             if [ \"$n\" -ge 2 ]; then echo good > value; else echo bad > value; fi; \
             echo \"worker saw: $ONESHOT_PROMPT\" >> {log}",
            count = count.display(),
            log = w.tmp.path().join("worker-prompts").display()
        ),
    );
    let auditor = w.script(
        "a.sh",
        &format!(
            "echo x >> {runs}; cat > {prompt}; echo 'VERDICT: DONE'",
            runs = w.tmp.path().join("auditor-runs").display(),
            prompt = w.tmp.path().join("auditor-prompt").display()
        ),
    );
    (worker, auditor)
}

fn lines(w: &World, name: &str) -> usize {
    std::fs::read_to_string(w.tmp.path().join(name))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_failing_check_retries_without_the_auditor_then_the_auditor_sees_the_checks() {
    let w = World::new();
    let (worker, auditor) = players(&w);
    let check = "grep -q good value || { echo 'value is not good yet'; exit 4; }";
    let out = w.run(&worker, &auditor, &["--check", check], "make value good");
    assert_eq!(code(&out), 0, "{}", text(&out));
    // Two worker runs, one auditor run: the first audit ended at the check.
    assert_eq!(lines(&w, "worker-runs"), 2);
    assert_eq!(lines(&w, "auditor-runs"), 1, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(
        w.trace(&id),
        [
            "CREATED",
            "WORKER_EXECUTING",
            "AUDIT_PENDING",
            "AUDITOR_EXECUTING",
            "REITERATION_PENDING",
            "WORKER_EXECUTING",
            "AUDIT_PENDING",
            "AUDITOR_EXECUTING",
            "COMPLETED"
        ]
    );
    assert_eq!(w.reason_code(&id, "REITERATION_PENDING"), "checks_failed");
    // The critique the worker got names the check, its status and its output.
    let prompts = std::fs::read_to_string(w.tmp.path().join("worker-prompts")).unwrap();
    assert!(prompts.contains("exit 4"), "{prompts}");
    assert!(prompts.contains("value is not good yet"), "{prompts}");
    // The auditor was told what passed.
    let prompt = std::fs::read_to_string(w.tmp.path().join("auditor-prompt")).unwrap();
    assert!(prompt.contains("Checks that already ran"), "{prompt}");
    assert!(prompt.contains("exit 0"), "{prompt}");
    // Each check is a `check` record; its output is the audit's activity.
    let log = w.log(&id);
    let checks: Vec<_> = log.iter().filter(|r| r["type"] == "check").collect();
    assert_eq!(checks.len(), 2, "{log:?}");
    assert_eq!(checks[0]["exit_code"], 4);
    assert_eq!(checks[1]["exit_code"], 0);
    assert!(log.iter().any(|r| r["type"] == "activity"
        && r["executor"] == "check"
        && r["data"] == "value is not good yet"));
    // The terminal says so.
    let all = text(&out);
    assert!(all.contains("check `"), "{all}");
}

#[test]
fn the_policy_gives_checks_and_sees_their_results() {
    let w = World::new();
    let (worker, auditor) = players(&w);
    let policy = w.policy(
        r#"
return {
  checks = function(ctx)
    return { { name = "value", run = "grep -q good value", timeout = 30 } }
  end,
  verdict = function(output, ctx)
    local c = ctx.checks[1]
    if c and c.name == "value" and c.passed and c.exit_code == 0 then
      return "done", "checked: " .. c.run
    end
    return "retry", "no checks seen"
  end,
}
"#,
    );
    let out = w.run(&worker, &auditor, &["--policy", &policy], "make value good");
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(lines(&w, "auditor-runs"), 1);
    let id = w.session_id();
    assert!(
        w.reason_text(&id, "COMPLETED")
            .contains("checked: grep -q good value"),
        "{}",
        w.reason_text(&id, "COMPLETED")
    );
    // The policy's answer is a decision record replay can compare.
    let log = w.log(&id);
    assert!(
        log.iter()
            .any(|r| r["type"] == "decision" && r["hook"] == "checks"),
        "{log:?}"
    );
}

#[test]
fn checks_come_from_the_config_file() {
    let w = World::new();
    let (worker, auditor) = players(&w);
    std::fs::write(
        w.work().join("oneshot.toml"),
        "check = [\"grep -q good value\"]\n",
    )
    .unwrap();
    let out = w.run(&worker, &auditor, &[], "make value good");
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(lines(&w, "worker-runs"), 2);
    assert_eq!(lines(&w, "auditor-runs"), 1);
}

#[test]
fn a_bad_checks_entry_fails_the_policy_load_at_its_line() {
    let w = World::new();
    let (worker, auditor) = players(&w);
    let policy = w.policy("return {\n  checks = { { name = \"x\" } },\n}\n");
    let out = w.run(&worker, &auditor, &["--policy", &policy], "t");
    assert_ne!(code(&out), 0);
    let all = text(&out);
    assert!(all.contains("p.lua:2"), "{all}");
    assert!(all.contains("checks[1] has no `run` command"), "{all}");
}

#[test]
fn replay_shows_a_changed_check_list_and_gives_the_recorded_results_back() {
    let w = World::new();
    let (worker, auditor) = players(&w);
    let with = w.file(
        "with.lua",
        "return { checks = { \"grep -q good value\" } }\n",
    );
    let out = w.run(
        &worker,
        &auditor,
        &["--policy", with.to_str().unwrap()],
        "make value good",
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    let replay = |policy: &std::path::Path| {
        w.cmd()
            .args(["policy", "replay", &id, "--policy"])
            .arg(policy)
            .arg("--exit-code")
            .output()
            .unwrap()
    };
    // The same policy: the recorded check results are given back, nothing differs.
    let same = replay(&with);
    assert_eq!(code(&same), 0, "{}", text(&same));
    // Another list of checks is a difference replay names.
    let other = w.file(
        "other.lua",
        "return { checks = { \"grep -q good value\", \"test -f other\" } }\n",
    );
    let r = replay(&other);
    assert_eq!(code(&r), 1, "{}", text(&r));
    let s = text(&r);
    assert!(s.contains("checks"), "{s}");
    assert!(s.contains("test -f other"), "{s}");
}
