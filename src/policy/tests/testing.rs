//! `run_tests`, `validate_for_reload` and `check` on real files.

use super::super::{FailMode, PolicyError, PolicyOptions, check, run_tests, validate_for_reload};
use std::path::{Path, PathBuf};

fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::write(&path, text).unwrap();
    path
}

const POLICY: &str = r#"
local common = require("common")
return {
  limits = { max_iterations = 4 },
  on_error = { on_transition = "closed" },
  redact = { "sk-[a-z]+" },
  verdict = function(output, ctx)
    if output:find("VERDICT: DONE", 1, true) then return "done" end
    return "retry", common.why
  end,
  guards = {
    ["REITERATION_PENDING -> WORKER_EXECUTING"] = function(ctx)
      if ctx.iteration >= 3 then return false, "too many" end
      return true
    end,
  },
  tests = {
    { name = "inline done", hook = "verdict", input = { output = "VERDICT: DONE" }, expect = "done" },
  },
}
"#;

const TESTS: &str = r#"
return {
  { name = "retry with reason", hook = "verdict", input = { output = "meh" },
    expect = "retry", reason = { contains = "no verdict" } },
  { name = "guard allows", hook = "guard", from = "REITERATION_PENDING", to = "WORKER_EXECUTING",
    input = { ctx = { iteration = 1 } }, expect = true },
  { name = "guard vetoes", hook = "guard", from = "REITERATION_PENDING", to = "WORKER_EXECUTING",
    input = { ctx = { iteration = 3 } }, expect = false, reason = "too many" },
  { name = "built-in salvage", hook = "salvage",
    input = { evidence = { reason = "interrupted" } }, expect = "partial" },
  { name = "built-in prompt", hook = "next_prompt",
    input = { ctx = { task = "fix it", critique = "tests fail" } }, expect = { contains = "CRITIQUE: tests fail" } },
  function(t)
    t.eq(policy.limits.max_iterations, 4)
    t.assert(select(1, policy.verdict("VERDICT: DONE", {})) == "done")
  end,
  named_function = function(t) t.contains("abc", "b") end,
}
"#;

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "common.lua",
        "return { why = 'no verdict seen' }\n",
    );
    let policy = write(dir.path(), "p.lua", POLICY);
    write(dir.path(), "p_test.lua", TESTS);
    (dir, policy)
}

#[test]
fn passing_cases_and_functions() {
    let (_dir, policy) = fixture();
    let report = run_tests(&policy, PolicyOptions::default()).unwrap();
    assert_eq!(
        report.summary(),
        "8 passed, 0 failed",
        "{}",
        report.render()
    );
    let names: Vec<&str> = report.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names[0], "inline done");
    assert_eq!(names[6], "p_test.lua #6");
    assert_eq!(names[7], "named_function");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["passed"], 8);
    assert_eq!(json["cases"][0]["passed"], true);
}

#[test]
fn failing_cases_and_functions_are_reported_with_places() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "p.lua",
        "return { verdict = function(o) return 'retry', 'nope' end }\n",
    );
    write(
        dir.path(),
        "p_test.lua",
        "return {\n\
           { name = 'wants done', hook = 'verdict', input = { output = 'x' }, expect = 'done' },\n\
           { name = 'typo', hook = 'verdict', expct = 'done' },\n\
           { name = 'bad ctx', hook = 'next_prompt', input = { ctx = { iteration = 'two' } } },\n\
           { name = 'bad ctx field', hook = 'next_prompt', input = { ctx = { iteraton = 2 } } },\n\
           function(t)\n\
             t.eq({1, 2}, {1, 3})\n\
           end,\n\
           function(t) while true do end end,\n\
           { name = 'expected error', hook = 'guard', from = 'A', to = 'B' },\n\
         }\n",
    );
    let report = run_tests(&policy, PolicyOptions::default()).unwrap();
    assert_eq!(
        report.summary(),
        "0 passed, 7 failed",
        "{}",
        report.render()
    );
    let msg = |i: usize| report.cases[i].message.clone().unwrap();
    assert_eq!(
        msg(0),
        "expected \"done\", got \"retry\" (reason: \"nope\")"
    );
    assert_eq!(report.cases[0].location.as_deref(), Some("p_test.lua:2"));
    assert!(msg(1).contains("unknown key `expct` in the test case; did you mean expect?"));
    assert!(msg(2).contains("ctx.iteration: invalid type"), "{}", msg(2));
    assert!(msg(3).contains("unknown field `iteraton` in ctx; did you mean iteration?"));
    assert!(
        msg(4).contains("p_test.lua:7: expected { 1 = 1, 2 = 3 }, got { 1 = 1, 2 = 2 }"),
        "{}",
        msg(4)
    );
    assert_eq!(report.cases[4].location.as_deref(), Some("p_test.lua:7"));
    assert!(msg(5).contains("budget"), "{}", msg(5));
    assert!(
        msg(6).contains("\"A\" is not a session state"),
        "{}",
        msg(6)
    );
    assert!(report.render().ends_with("0 passed, 7 failed\n"));
}

#[test]
fn expected_errors_pass() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "p.lua",
        "return {\n  verdict = function() error('kaboom') end,\n  tests = {\n    { hook = 'verdict', error = 'kaboom' },\n  },\n}\n",
    );
    let report = run_tests(&policy, PolicyOptions::default()).unwrap();
    assert_eq!(
        report.summary(),
        "1 passed, 0 failed",
        "{}",
        report.render()
    );
    assert_eq!(report.cases[0].name, "p.lua #1");
}

#[test]
fn validate_for_reload_rejects_failing_tests() {
    let (dir, policy) = fixture();
    let host = validate_for_reload(&policy, PolicyOptions::default()).unwrap();
    assert_eq!(host.limits().max_iterations, 4);
    write(
        dir.path(),
        "p.lua",
        &POLICY.replace("return \"done\"", "return \"retry\""),
    );
    let e = validate_for_reload(&policy, PolicyOptions::default()).unwrap_err();
    assert!(matches!(e, PolicyError::Tests { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with("validate policy p.lua: 2 of 8 policy test(s) failed: inline done"),
        "{text}"
    );
    // A load error is reported as such, before any test runs.
    write(
        dir.path(),
        "p.lua",
        "return { limits = { max_iteratons = 3 } }\n",
    );
    let e = validate_for_reload(&policy, PolicyOptions::default()).unwrap_err();
    assert_eq!(e.location().as_deref(), Some("p.lua:1"));
}

#[test]
fn check_reports_everything() {
    let (dir, policy) = fixture();
    let r = check(&policy, PolicyOptions::default()).unwrap();
    assert_eq!(r.tests, 8);
    assert_eq!(r.limits.max_iterations, 4);
    assert_eq!(r.limits.inactivity_timeout, "5m");
    assert_eq!(r.limits.worker_timeout, None);
    assert_eq!(r.redact, vec!["sk-[a-z]+".to_string()]);
    assert_eq!(
        r.modules,
        vec![std::path::absolute(dir.path().join("common.lua")).unwrap()]
    );
    assert!(
        r.hooks
            .contains(&"guards[REITERATION_PENDING -> WORKER_EXECUTING]".to_string())
    );
    assert!(r.hooks.contains(&"tests".to_string()));
    assert!(
        r.fail_modes
            .contains(&("on_transition".to_string(), FailMode::Closed))
    );
    assert!(r.hash.starts_with("sha256:"));
    let text = r.render();
    assert!(text.contains("tests:      8"), "{text}");
    assert!(text.contains("on_transition=closed"), "{text}");
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json["fail_modes"][0],
        serde_json::json!(["verdict", "closed"])
    );
    // Errors are the load's, with file:line; a broken test file is an error too.
    write(dir.path(), "p_test.lua", "return {\n  oops(\n}\n");
    let e = check(&policy, PolicyOptions::default()).unwrap_err();
    assert!(e.location().unwrap().starts_with("p_test.lua:"), "{e}");
    write(dir.path(), "p.lua", "return {\n  verdict = 42,\n}\n");
    let e = check(&policy, PolicyOptions::default()).unwrap_err();
    assert_eq!(e.location().as_deref(), Some("p.lua:2"));
}

#[test]
fn approve_cases_call_the_hook_through_the_hosts_path() {
    let dir = tempfile::tempdir().unwrap();
    // Approves everything, even what Rust refuses to approve.
    let policy = write(
        dir.path(),
        "p.lua",
        "return { approve = function(result, job)\n\
           if job.risk == 'low' then return 'approve', 'low risk ' .. job.id end\n\
           return nil\n\
         end }\n",
    );
    write(
        dir.path(),
        "p_test.lua",
        "return {\n\
           { name = 'low', hook = 'approve', input = { job = { risk = 'low' } },\n\
             expect = 'approve', reason = 'low risk job-test' },\n\
           { name = 'nil is the default', hook = 'approve', expect = 'human',\n\
             reason = { contains = 'by default' } },\n\
           { name = 'refused', hook = 'approve', error = 'cannot be auto-approved',\n\
             input = { result = { outcome = 'FAILED', completed = false }, job = { risk = 'low' } } },\n\
           { name = 'wrong expect', hook = 'approve', input = { job = { risk = 'low' } },\n\
             expect = 'human' },\n\
           { name = 'typo in result', hook = 'approve', input = { result = { confidense = 1 } } },\n\
           { name = 'bad risk', hook = 'approve', input = { job = { risk = 'extreme' } } },\n\
           { name = 'refusal unexpected', hook = 'approve', expect = 'approve',\n\
             input = { result = { completed = false, outcome = 'FAILED' }, job = { risk = 'low' } } },\n\
         }\n",
    );
    let report = run_tests(&policy, PolicyOptions::default()).unwrap();
    assert_eq!(
        report.summary(),
        "3 passed, 4 failed",
        "{}",
        report.render()
    );
    let msg = |i: usize| report.cases[i].message.clone().unwrap();
    assert_eq!(
        msg(3),
        "expected \"human\", got \"approve\" (reason: \"low risk job-test\")"
    );
    assert!(
        msg(4).contains("unknown field `confidense` in result; did you mean confidence?"),
        "{}",
        msg(4)
    );
    assert!(msg(5).contains("job.risk"), "{}", msg(5));
    assert!(
        msg(6).contains("a session that ended FAILED did not complete"),
        "{}",
        msg(6)
    );
}

#[test]
fn on_notify_cases_send_suppress_and_enrich() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "p.lua",
        "return { on_notify = function(ctx)\n\
           if ctx.kind == 'budget_80' then return false, 'not at night' end\n\
           if ctx.kind == 'agent_stalled' then return true end\n\
           return { extra = { team = 'payments', job = ctx.job, n = 2 } }\n\
         end }\n",
    );
    write(
        dir.path(),
        "p_test.lua",
        "return {\n\
           { name = 'suppressed', hook = 'on_notify', input = { event = { kind = 'budget_80' } },\n\
             expect = false, reason = { contains = 'night' } },\n\
           { name = 'as is', hook = 'on_notify', input = { event = { kind = 'agent_stalled' } },\n\
             expect = true },\n\
           { name = 'enriched', hook = 'on_notify',\n\
             expect = { extra = { team = 'payments', job = 'job-test', n = 2 } } },\n\
           { name = 'wrong extra', hook = 'on_notify', expect = { extra = { team = 'ops' } } },\n\
           { name = 'no such kind', hook = 'on_notify', input = { event = { kind = 'approved' } } },\n\
           { name = 'typo', hook = 'on_notify', input = { event = { knd = 'budget_80' } } },\n\
         }\n",
    );
    let report = run_tests(&policy, PolicyOptions::default()).unwrap();
    assert_eq!(
        report.summary(),
        "3 passed, 3 failed",
        "{}",
        report.render()
    );
    let msg = |i: usize| report.cases[i].message.clone().unwrap();
    assert!(
        msg(3).starts_with("expected {\"extra\":{\"team\":\"ops\"}}, got {\"extra\":"),
        "{}",
        msg(3)
    );
    assert!(
        msg(4).contains("event.kind = \"approved\" is no event; the kinds are approval_pending"),
        "{}",
        msg(4)
    );
    assert!(
        msg(5).contains("unknown field `knd` in event; did you mean kind?"),
        "{}",
        msg(5)
    );
}
