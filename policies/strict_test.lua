-- Tests for strict.lua: run with `oneshot policy test policies/strict.lua`.
return {
  { name = "explicit done", hook = "verdict",
    input = { output = "VERDICT: DONE", ctx = { worker_output = "all fixed" } }, expect = "done" },
  { name = "done while the worker left a TODO is a retry", hook = "verdict",
    input = { output = "VERDICT: DONE", ctx = { worker_output = "fixed, TODO: tests" } },
    expect = "retry", reason = { contains = "TODO or FIXME" } },
  { name = "lowercase verdicts do not count", hook = "verdict",
    input = { output = "verdict: done" }, expect = "retry",
    reason = { contains = "explicit VERDICT line" } },
  { name = "reason is taken from REASON:", hook = "verdict",
    input = { output = "VERDICT: RETRY\nREASON: the parser is untested" },
    expect = "retry", reason = "the parser is untested" },
  { name = "a crash starts over", hook = "salvage",
    input = { evidence = { reason = "exit_code", exit_code = 1, changed_files = { "a.rs" } } },
    expect = "nothing" },
  { name = "a pause resumes", hook = "salvage",
    input = { evidence = { reason = "oneshot_died" } }, expect = "partial" },
  { name = "early iterations may start", hook = "guard",
    from = "REITERATION_PENDING", to = "WORKER_EXECUTING",
    input = { ctx = { elapsed = 600, iteration = 1 } }, expect = true },
  { name = "no new iteration after 30 minutes", hook = "guard",
    from = "REITERATION_PENDING", to = "WORKER_EXECUTING",
    input = { ctx = { elapsed = 3600, iteration = 2 } }, expect = false,
    reason = { contains = "60 minutes elapsed, not starting iteration 3" } },
  function(t)
    t.eq(policy.limits.max_iterations, 3)
    t.eq(#policy.redact, 3)
    t.assert(oneshot.regex_find(policy.redact[1], "key AKIAABCDEFGHIJKLMNOP") ~= nil, "AWS keys are redacted")
  end,
}
