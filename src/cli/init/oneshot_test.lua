-- Tests for oneshot.lua: run with `oneshot policy test oneshot.lua`. They test what the policy
-- decides, so changing a limit never breaks them.
return {
  { name = "a verdict line", hook = "verdict", input = { output = "All good.\nVERDICT: DONE" },
    expect = "done" },
  { name = "retry with a reason", hook = "verdict",
    input = { output = "VERDICT: RETRY - the build is broken" }, expect = "retry",
    reason = "the build is broken" },
  { name = "the last verdict line wins", hook = "verdict",
    input = { output = "VERDICT: RETRY\nfixed it after all\nVERDICT: DONE" }, expect = "done" },
  { name = "an agent auditor's answer in the verdict schema", hook = "verdict",
    input = { output = '{"verdict":"retry","reason":"add a test","confidence":0.9,"open_criteria":["a test"]}',
              ctx = { structured = { verdict = "retry", reason = "add a test", confidence = 0.9,
                                     open_criteria = { "a test" } } } },
    expect = "retry", reason = "add a test" },
  { name = "a JSON verdict from a command auditor", hook = "verdict",
    input = { output = '{"verdict": "impossible", "reason": "needs network"}' },
    expect = "impossible", reason = "needs network" },
  { name = "no verdict: the auditor is asked again", hook = "verdict",
    input = { output = "looks fine to me" }, expect = "none" },
}
