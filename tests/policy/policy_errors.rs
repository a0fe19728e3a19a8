//! A broken, hostile or wrong policy: exit 2 before anything starts, or FAILED with
//! `policy_error` and file:line once it runs — never a panic, a hang or a silent default.

use crate::common;
use common::*;

fn run_with_policy(w: &World, lua: &str) -> (std::process::Output, Option<String>) {
    run_with_policy_args(w, lua, &[])
}

fn run_with_policy_args(
    w: &World,
    lua: &str,
    extra: &[&str],
) -> (std::process::Output, Option<String>) {
    let policy = w.file("policy.lua", lua);
    let worker = w.script("w.sh", "echo ok");
    let auditor = w.script("a.sh", AUDIT_DONE);
    let mut args = vec!["--policy", policy.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = w.run(&worker, &auditor, &args, "t");
    let id = w.session_ids().into_iter().next();
    (out, id)
}

fn failed_detail(w: &World, id: &str) -> String {
    let state = w.state(id);
    assert_eq!(state["state"], "FAILED", "{state}");
    let last = w.last_history(id);
    assert_eq!(last["reason"]["kind"], "policy_error", "{last}");
    last["reason"]["message"].as_str().unwrap().to_string()
}

#[test]
fn unknown_key_is_a_load_error_with_a_suggestion() {
    let w = World::new();
    let (out, id) = run_with_policy(&w, "return {\n  limits = { max_iteratons = 3 },\n}\n");
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(id.is_none(), "nothing may start");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("max_iteratons"), "{err}");
    assert!(err.contains("max_iterations"), "{err}");
    assert!(err.contains("policy.lua"), "{err}");
}

#[test]
fn syntax_error_names_file_and_line() {
    let w = World::new();
    let (out, _) = run_with_policy(
        &w,
        "return {\n  verdict = function(o, ctx)\n    return 'done'\n}\n",
    );
    assert_eq!(code(&out), 2, "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("policy.lua:"), "{err}");
}

#[test]
fn runaway_hook_is_cut_off_and_fails_the_session() {
    let w = World::new();
    let start = std::time::Instant::now();
    let (out, id) = run_with_policy(
        &w,
        "return {\n  verdict = function(o, ctx)\n    while true do end\n  end,\n}\n",
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(code(&out), 1, "{}", text(&out));
    let detail = failed_detail(&w, &id.unwrap());
    assert!(detail.contains("budget"), "{detail}");
}

#[test]
fn memory_bomb_is_contained() {
    let w = World::new();
    // A generous time budget, so the memory cap is what stops it even on a loaded machine.
    let (out, id) = run_with_policy_args(
        &w,
        "return {\n  verdict = function(o, ctx)\n    local t = {}\n    while true do t[#t + 1] = string.rep('x', 1000000) .. #t end\n  end,\n}\n",
        &["--hook-budget", "20s"],
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    let detail = failed_detail(&w, &id.unwrap());
    assert!(detail.contains("memory"), "{detail}");
}

#[test]
fn sandbox_escapes_are_clear_errors_with_file_and_line() {
    for (expr, what) in [
        ("io.open('/etc/passwd')", "io"),
        ("os.execute('touch /tmp/pwned')", "os.execute"),
        ("require('socket')", "require"),
        ("loadstring('return 1')", "loadstring"),
        ("load('return 1')", "load"),
        ("dofile('/etc/passwd')", "dofile"),
    ] {
        let w = World::new();
        let lua = format!(
            "return {{\n  verdict = function(o, ctx)\n    local x = {expr}\n    return 'done'\n  end,\n}}\n"
        );
        let (out, id) = run_with_policy(&w, &lua);
        assert_eq!(code(&out), 1, "{expr}: {}", text(&out));
        let detail = failed_detail(&w, &id.unwrap());
        assert!(detail.contains("policy.lua:3"), "{expr}: {detail}");
        assert!(detail.contains(what), "{expr}: {detail}");
    }
}

#[test]
fn bad_return_value_is_a_policy_error() {
    let w = World::new();
    let (out, id) = run_with_policy(
        &w,
        "return {\n  verdict = function(o, ctx) return 42 end,\n}\n",
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    let detail = failed_detail(&w, &id.unwrap());
    assert!(detail.contains("verdict"), "{detail}");
}

#[test]
fn guard_veto_fails_with_the_guards_reason() {
    let w = World::new();
    let (out, id) = run_with_policy(
        &w,
        "return {\n  guards = {\n    ['AUDIT_PENDING -> AUDITOR_EXECUTING'] = function(ctx)\n      return false, 'no audits on Sundays'\n    end,\n  },\n}\n",
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    let last = w.last_history(&id.unwrap());
    assert_eq!(last["state"], "FAILED");
    let reason = &last["reason"];
    assert_eq!(reason["kind"], "guard_veto", "{reason}");
    assert_eq!(reason["why"], "no audits on Sundays", "{reason}");
    assert_eq!(
        (&reason["from"], &reason["to"]),
        (&"AUDIT_PENDING".into(), &"AUDITOR_EXECUTING".into())
    );
    let out = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.contains("guard AUDIT_PENDING -> AUDITOR_EXECUTING vetoed: no audits on Sundays"),
        "{out}"
    );
}

#[test]
fn policy_hooks_see_the_context_and_steer_the_loop() {
    let w = World::new();
    let (out, id) = run_with_policy(
        &w,
        r#"return {
  limits = { max_iterations = 4 },
  verdict = function(output, ctx)
    if ctx.iteration < 3 then return "retry", "iteration " .. ctx.iteration .. " too early" end
    return { verdict = "done", reason = "third time lucky", confidence = 0.9 }
  end,
  next_prompt = function(ctx) return "attempt " .. (ctx.iteration + 1) .. ": " .. ctx.critique end,
}
"#,
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    let state = w.state(&id.unwrap());
    assert_eq!(state["iteration_count"], 3);
    assert_eq!(state["worker_prompt"], "attempt 3: iteration 2 too early");
    assert_eq!(state["last_verdict"]["confidence"], 0.9);
}

/// A session that failed only because its policy failed keeps its paid work: resuming it under
/// the same policy is refused with what to do; under a corrected one (edited in place, or given
/// with --policy) the failed question is asked again and the worker is not run again.
#[test]
fn a_policy_error_is_taken_up_again_under_a_corrected_policy() {
    let w = World::new();
    let broken = w.file(
        "p.lua",
        "return { verdict = function(o, ctx) return ctx.structured.verdict end }",
    );
    let worker = w.script("w.sh", "echo run >> worker.count; echo fixed");
    let auditor = w.script("a.sh", "echo 'VERDICT: DONE looks right'");
    let out = w.run(
        &worker,
        &auditor,
        &["--policy", broken.to_str().unwrap()],
        "fix it",
    );
    assert_eq!(code(&out), 1, "{}", text(&out));
    let id = w.session_id();
    assert_eq!(w.reason_code(&id, "FAILED"), "policy_error");
    assert!(
        text(&out).contains("it failed only because its policy failed"),
        "{}",
        text(&out)
    );
    let status = w.cmd().args(["status", &id]).output().unwrap();
    assert!(
        text(&status).contains("fix the policy, then oneshot resume"),
        "{}",
        text(&status)
    );

    // The same policy would fail the same way: refused, saying what to do.
    let same = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&same), 4, "{}", text(&same));
    assert!(
        text(&same).contains("its policy is unchanged since"),
        "{}",
        text(&same)
    );

    // A corrected policy given on the command line.
    let fixed = w.file(
        "fixed.lua",
        "return { verdict = function(o) return 'done', 'fixed policy' end }",
    );
    let again = w
        .cmd()
        .args(["resume", &id, "--policy", fixed.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&again), 0, "{}", text(&again));
    assert_eq!(w.state(&id)["state"], "COMPLETED");
    let runs = std::fs::read_to_string(w.work().join("worker.count")).unwrap();
    assert_eq!(runs.lines().count(), 1, "the worker ran once");
    let trace = w.trace(&id);
    let n = trace.len();
    assert_eq!(
        &trace[n - 3..],
        ["FAILED", "AUDITOR_EXECUTING", "COMPLETED"],
        "{trace:?}"
    );
    assert_eq!(w.reason_code(&id, "AUDITOR_EXECUTING"), "retake");
}

/// The policy file edited in place (outside the workdir, so no trust needed) is the corrected
/// policy too.
#[test]
fn a_policy_fixed_in_place_takes_the_session_up_again() {
    let w = World::new();
    let policy = w.policy("return { salvage = function() error('oops') end }");
    let worker = w.script(
        "w.sh",
        "echo part > part.txt; echo run >> worker.count; exit 3",
    );
    let auditor = w.script("a.sh", "echo 'VERDICT: DONE'");
    let out = w.run(&worker, &auditor, &["--policy", &policy], "t");
    assert_eq!(code(&out), 1, "{}", text(&out));
    let id = w.session_id();
    std::fs::write(
        &policy,
        "return { salvage = function() return 'success', 'the part is enough' end }",
    )
    .unwrap();
    let again = w.cmd().args(["resume", &id]).output().unwrap();
    assert_eq!(code(&again), 0, "{}", text(&again));
    assert_eq!(w.state(&id)["state"], "COMPLETED");
    let runs = std::fs::read_to_string(w.work().join("worker.count")).unwrap();
    assert_eq!(runs.lines().count(), 1);
}
