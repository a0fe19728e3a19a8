-- Tests for lenient.lua: run with `oneshot policy test policies/lenient.lua`.
return {
  { name = "synonyms count as done", hook = "verdict", input = { output = "Verdict: pass" }, expect = "done" },
  { name = "fail means retry", hook = "verdict",
    input = { output = "VERDICT = fail - tests are red" }, expect = "retry", reason = "tests are red" },
  { name = "no verdict is a retry", hook = "verdict", input = { output = "nothing useful" },
    expect = "retry", reason = "auditor gave no verdict" },
  { name = "an agent auditor's structured verdict", hook = "verdict",
    input = { output = "", ctx = { structured = { verdict = "done", reason = "fine",
              confidence = 0.7, open_criteria = {} } } },
    expect = "done", reason = "fine" },
  { name = "changed files and a clean exit go to the auditor", hook = "salvage",
    input = { evidence = { reason = "inactivity_timeout", exit_code = 0, changed_files = { "a" } } },
    expect = "success" },
  { name = "changed files after a crash are kept", hook = "salvage",
    input = { evidence = { reason = "exit_code", exit_code = 2, changed_files = { "a" } } },
    expect = "partial" },
  { name = "nothing changed", hook = "salvage",
    input = { evidence = { reason = "exit_code", exit_code = 2 } }, expect = "nothing" },
  { name = "a pause keeps the session", hook = "salvage",
    input = { evidence = { reason = "interrupted", signal = 2 } }, expect = "partial" },
  function(t)
    t.eq(policy.limits.max_iterations, 10)
    t.eq(oneshot.duration(policy.limits.inactivity_timeout), 900)
  end,
}
