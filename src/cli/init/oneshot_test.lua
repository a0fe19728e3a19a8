-- Tests for oneshot.lua: run with `oneshot policy test oneshot.lua`.
return {
  { name = "done", hook = "verdict", input = { output = "All good.\nVERDICT: DONE" }, expect = "done" },
  { name = "retry with a reason", hook = "verdict",
    input = { output = "VERDICT: RETRY - the build is broken" }, expect = "retry",
    reason = "the build is broken" },
  { name = "the last verdict line wins", hook = "verdict",
    input = { output = "VERDICT: RETRY\nfixed it after all\nVERDICT: DONE" }, expect = "done" },
  { name = "no verdict is a retry", hook = "verdict", input = { output = "looks fine to me" },
    expect = "retry" },
  function(t)
    t.eq(policy.limits.max_iterations, 5)
  end,
}
