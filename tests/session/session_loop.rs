//! The loop end to end through the real binary: done, retry, impossible, max iterations.

use crate::common;
use common::*;

#[test]
fn happy_path_completes_on_the_first_iteration() {
    let w = World::new();
    let worker = w.script(
        "w.sh",
        "echo working on: $ONESHOT_PROMPT; echo done > result.txt",
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = w.run(&worker, &auditor, &[], "write result.txt");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(
        w.trace(&id),
        [
            "CREATED",
            "WORKER_EXECUTING",
            "AUDIT_PENDING",
            "AUDITOR_EXECUTING",
            "COMPLETED"
        ]
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("[worker] working on: write result.txt"),
        "{stdout}"
    );
    assert!(stdout.contains("[auditor] looks good"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(w.work().join("result.txt")).unwrap(),
        "done\n"
    );
}

#[test]
fn prompt_reaches_the_command_on_stdin_env_and_argv() {
    let w = World::new();
    let worker = format!(
        "{} {{prompt}}",
        w.script(
            "w.sh",
            "printf 'argv=%s\\n' \"$1\" > seen; printf 'env=%s\\n' \"$ONESHOT_PROMPT\" >> seen; \
             printf 'stdin=%s\\n' \"$(cat)\" >> seen; \
             echo \"role=$ONESHOT_ROLE iter=$ONESHOT_ITERATION id=$ONESHOT_SESSION_ID\" >> seen"
        )
    );
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = w.run(&worker, &auditor, &[], "the task");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let seen = std::fs::read_to_string(w.work().join("seen")).unwrap();
    let id = w.session_id();
    assert_eq!(
        seen,
        format!("argv=the task\nenv=the task\nstdin=the task\nrole=worker iter=1 id={id}\n")
    );
}

#[test]
fn retry_then_done_injects_the_critique() {
    let w = World::new();
    // The worker succeeds only once it sees the auditor's critique in its prompt.
    let worker = w.script(
        "w.sh",
        "case \"$ONESHOT_PROMPT\" in *CRITIQUE*missing-semicolon*) echo fixed > out;; *) echo draft > out;; esac",
    );
    let auditor = w.script(
        "a.sh",
        "if grep -q fixed out; then echo 'VERDICT: DONE'; else echo 'VERDICT: RETRY missing-semicolon on line 3'; fi",
    );
    let out = w.run(&worker, &auditor, &[], "fix it");
    assert_eq!(code(&out), 0, "{}", text(&out));
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
    let state = w.state(&id);
    assert_eq!(state["iteration_count"], 2);
    assert!(
        state["worker_prompt"]
            .as_str()
            .unwrap()
            .contains("missing-semicolon"),
        "{state}"
    );
}

#[test]
fn impossible_rejects_and_resume_is_refused() {
    let w = World::new();
    let worker = w.script("w.sh", "echo 'I need a credit card'");
    let auditor = w.script(
        "a.sh",
        "echo '{\"verdict\": \"impossible\", \"reason\": \"needs a credit card\"}'",
    );
    let out = w.run(&worker, &auditor, &[], "buy a domain");
    assert_eq!(code(&out), 3, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(w.trace(&id).last().unwrap(), "REJECTED");
    assert_eq!(
        w.reason_text(&id, "REJECTED"),
        "impossible: needs a credit card"
    );
    let again = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&again), 4, "{}", text(&again));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("new session"), "{err}");
    // Refusing must not touch the session.
    assert_eq!(w.trace(&id).last().unwrap(), "REJECTED");
}

#[test]
fn max_iterations_fails() {
    let w = World::new();
    let policy = w.policy("return { limits = { max_iterations = 2 } }");
    let worker = w.script("w.sh", "echo trying");
    let auditor = w.script("a.sh", "echo 'VERDICT: RETRY not yet'");
    let out = w.run(
        &worker,
        &auditor,
        &["--policy", &policy],
        "never good enough",
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    let id = w.session_id();
    let state = w.state(&id);
    assert_eq!(state["state"], "FAILED");
    assert_eq!(state["iteration_count"], 2);
    assert_eq!(w.reason_code(&id, "FAILED"), "max_iterations");
    // Completed and failed sessions cannot be resumed.
    let again = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&again), 4, "{}", text(&again));
}

/// An auditor that prints no verdict (here: only on stderr) is asked again, with a note of
/// what was missing, twice by default; the worker is not run again for it, and the session then
/// fails `no_verdict` — paid worker runs are not spent on an auditor's formatting.
#[test]
fn auditor_without_a_verdict_is_asked_again_not_the_worker() {
    let w = World::new();
    let worker = w.script("w.sh", "echo run >> worker.count; echo ok");
    let auditor = w.script(
        "a.sh",
        "echo asked >> auditor.count; cat \"$ONESHOT_PROMPT_FILE\" > last-audit-prompt; \
         echo 'VERDICT: DONE (on stderr)' >&2",
    );
    let out = w.run(&worker, &auditor, &[], "t");
    assert_eq!(code(&out), 1, "{}", text(&out));
    let count = |f: &str| {
        std::fs::read_to_string(w.work().join(f))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(count("worker.count"), 1);
    assert_eq!(count("auditor.count"), 3);
    let id = w.session_id();
    assert_eq!(w.reason_code(&id, "FAILED"), "no_verdict");
    assert_eq!(
        w.reason_text(&id, "FAILED"),
        "the auditor gave no verdict in 3 answers: its answer on stdout was empty"
    );
    assert_eq!(w.state(&id)["iteration_count"], 1);
    let last = std::fs::read_to_string(w.work().join("last-audit-prompt")).unwrap();
    assert!(last.starts_with("Your previous answer"), "{last}");
    assert!(
        text(&out).contains("asking it again (2 of 2, limits.verdict_reasks)"),
        "{}",
        text(&out)
    );
}

/// A policy may choose to spend an iteration on an answer without a verdict (lenient.lua's
/// choice), or to ask again until the verdict comes.
#[test]
fn the_policy_chooses_what_no_verdict_costs() {
    let w = World::new();
    let policy = w.policy(
        "return { limits = { max_iterations = 1 }, verdict = function(o) \
           return oneshot.parse_verdict(o) and oneshot.parse_verdict(o).verdict or 'retry', 'unclear' end }",
    );
    let worker = w.script("w.sh", "echo ok");
    let auditor = w.script("a.sh", "echo 'hmm, not sure'");
    let out = w.run(&worker, &auditor, &["--policy", &policy], "t");
    assert_eq!(code(&out), 1, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(w.reason_text(&id, "REITERATION_PENDING"), "retry: unclear");
    assert_eq!(w.reason_code(&id, "FAILED"), "max_iterations");

    // The second answer holds the verdict: the session completes in one iteration.
    let w = World::new();
    let worker = w.script("w.sh", "echo ok");
    let auditor = w.script(
        "a.sh",
        "if [ -f asked ]; then echo 'VERDICT: DONE fine'; else touch asked; echo hmm; fi",
    );
    let out = w.run(&worker, &auditor, &[], "t");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(w.state(&id)["state"], "COMPLETED");
    assert_eq!(w.state(&id)["iteration_count"], 1);
}

#[test]
fn auditor_crash_fails_the_session() {
    let w = World::new();
    let worker = w.script("w.sh", "echo ok");
    let auditor = w.script("a.sh", "echo boom >&2; exit 7");
    let out = w.run(&worker, &auditor, &[], "t");
    assert_eq!(code(&out), 1, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(w.last_history(&id)["state"], "FAILED");
    assert_eq!(w.reason_code(&id, "FAILED"), "auditor_failed");
    assert_eq!(
        w.reason_text(&id, "FAILED"),
        "the auditor exited with code 7"
    );
}

#[test]
fn missing_worker_program_is_a_usage_error_before_anything_starts() {
    let w = World::new();
    let out = w.run("no-such-program-xyz --flag", "true", &[], "t");
    assert_eq!(code(&out), 2, "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-program-xyz"), "{err}");
    assert!(w.session_ids().is_empty(), "no session may be created");
}

#[test]
fn status_list_and_log_show_the_session() {
    let w = World::new();
    let worker = w.script("w.sh", "echo hello from the worker");
    let auditor = w.script("a.sh", AUDIT_DONE);
    let out = w.run(&worker, &auditor, &["--quiet"], "greet");
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        out.stdout.is_empty(),
        "--quiet relays nothing: {}",
        text(&out)
    );
    let id = w.session_id();

    let status = w.cmd().args(["status", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["session_id"], id.as_str());
    assert_eq!(v["state"], "COMPLETED");

    let human = w.cmd().args(["status", &id[..8]]).output().unwrap();
    let s = String::from_utf8_lossy(&human.stdout);
    assert!(s.contains("COMPLETED") && s.contains("greet"), "{s}");

    let list = w.cmd().args(["list"]).output().unwrap();
    let s = String::from_utf8_lossy(&list.stdout);
    assert!(s.contains(&id[..8]) && s.contains("COMPLETED"), "{s}");

    let log = w.cmd().args(["log", &id]).output().unwrap();
    let s = String::from_utf8_lossy(&log.stdout);
    assert!(s.contains("hello from the worker"), "{s}");
    assert!(s.contains("AUDITOR_EXECUTING -> COMPLETED"), "{s}");

    let run_alias = w
        .cmd()
        .args([
            "run",
            "--worker-cmd",
            &worker,
            "--auditor-cmd",
            &auditor,
            "-q",
            "again",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&run_alias), 0, "{}", text(&run_alias));
    assert_eq!(w.session_ids().len(), 2);
}

/// A structured verdict (JSON in prose, across lines) reaches the `verdict` hook as
/// `ctx.structured`, and the same open criteria twice in a row is a no-progress signal the
/// policy acts on: it gives up with the criteria it was waiting for.
#[test]
fn the_same_open_criteria_twice_is_a_no_progress_signal() {
    let w = World::new();
    let policy = w.policy(
        r#"return {
  verdict = function(out, ctx)
    local s = ctx.structured
    if s == nil then return "retry", "no structured answer" end
    if ctx.open_criteria_streak >= 2 then
      return "impossible", "no progress on: " .. table.concat(s.open_criteria, ", ")
    end
    return s.verdict, s.reason, s.confidence
  end,
}"#,
    );
    let worker = w.script("w.sh", "echo trying >> out");
    let auditor = w.script(
        "a.sh",
        "printf 'Still missing.\\n```json\\n{\\n \"verdict\": \"retry\", \"reason\": \"no test\",\\n \"confidence\": 0.8, \"open_criteria\": [\"a test\"]\\n}\\n```\\n'",
    );
    let out = w.run(&worker, &auditor, &["--policy", &policy], "add a test");
    assert_eq!(code(&out), 3, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(w.state(&id)["iteration_count"], 2);
    assert_eq!(
        w.reason_text(&id, "REJECTED"),
        "impossible: no progress on: a test"
    );
    let last = &w.state(&id)["last_verdict"];
    assert_eq!(last["open_criteria"][0], "a test", "{last}");
    assert_eq!(last["open_criteria_streak"], 2, "{last}");
}
