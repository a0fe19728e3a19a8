-- Tests for default.lua: run with `oneshot policy test policies/default.lua`.
-- Each case calls a hook through the same path a session uses and checks the answer.
return {
  { name = "explicit done", hook = "verdict", input = { output = "All good.\nVERDICT: DONE" }, expect = "done" },
  { name = "retry with inline reason", hook = "verdict",
    input = { output = "verdict: retry - the build is broken" },
    expect = "retry", reason = "the build is broken" },
  { name = "reason on the next line", hook = "verdict",
    input = { output = "**VERDICT:** IMPOSSIBLE\nREASON: needs network" },
    expect = "impossible", reason = "needs network" },
  { name = "json verdict wins", hook = "verdict",
    input = { output = 'VERDICT: DONE\n{"verdict": "retry", "reason": "tests fail"}' },
    expect = "retry", reason = "tests fail" },
  { name = "no verdict: the auditor is asked again", hook = "verdict",
    input = { output = "looks fine to me" }, expect = "none",
    reason = { contains = "held no verdict" } },
  { name = "an agent auditor's structured answer", hook = "verdict",
    input = { output = "prose around it",
              ctx = { structured = { verdict = "retry", reason = "add a test", confidence = 0.8,
                                     open_criteria = { "a test" } } } },
    expect = "retry", reason = "add a test" },
  { name = "changed files are kept", hook = "salvage",
    input = { evidence = { reason = "exit_code", exit_code = 1, changed_files = { "src/a.rs" } } },
    expect = "partial", reason = "1 file(s) changed" },
  { name = "a pause is never a failure", hook = "salvage",
    input = { evidence = { reason = "interrupted" } }, expect = "partial" },
  { name = "nothing changed, nothing kept", hook = "salvage",
    input = { evidence = { reason = "inactivity_timeout" } }, expect = "nothing" },
  { name = "no guards: every transition is allowed", hook = "guard",
    from = "REITERATION_PENDING", to = "WORKER_EXECUTING", expect = true },
  { name = "built-in retry prompt carries the critique", hook = "next_prompt",
    input = { ctx = { task = "fix the test", worker_output = "tried", critique = "still red" } },
    expect = { contains = "CRITIQUE: still red" } },
  { name = "built-in audit prompt asks for a verdict line", hook = "audit_prompt",
    input = { ctx = { task = "fix the test" } }, expect = { contains = "VERDICT: DONE" } },
  { name = "the worker may edit files", hook = "permit",
    input = { tool = "Write", input = { file_path = "a.rs", content = "x" } }, expect = "allow" },
  { name = "the auditor may not edit files", hook = "permit",
    input = { tool = "Edit", role = "auditor" }, expect = "deny",
    reason = { contains = "does not change files" } },
  { name = "the auditor may run commands", hook = "permit",
    input = { tool = "Bash", input = { command = "cargo test" }, role = "auditor" },
    expect = "allow" },
  function(t)
    t.eq(policy.limits.retry.attempts, 3)
    t.eq(policy.continue_conversation, true)
    t.eq(policy.limits.max_iterations, 5)
    t.eq(policy.limits.verdict_reasks, 2)
    t.eq(policy.limits.inactivity_timeout, "5m")
  end,
}
