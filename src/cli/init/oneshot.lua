-- oneshot.lua: this project's policy. Every key is optional; a missing one means oneshot's
-- built-in behaviour (see docs/policy.md). Test it with `oneshot policy test oneshot.lua`;
-- the tests are in oneshot_test.lua.
---@type OneshotPolicy
return {
  -- Budgets the engine enforces. Durations are seconds or strings ("90s", "5m").
  limits = {
    max_iterations = 5,          -- worker runs before the session fails
    inactivity_timeout = "5m",   -- no output for this long stops an agent
  },

  -- Reads the auditor's answer: its last `VERDICT: DONE | RETRY | IMPOSSIBLE` line, with the
  -- rest of that line as the reason (for RETRY it is the critique the worker gets next).
  verdict = function(output, ctx)
    local word, reason
    for line in (output .. "\n"):gmatch("(.-)\r?\n") do
      local w, rest = line:match("^%s*[Vv][Ee][Rr][Dd][Ii][Cc][Tt]%s*:%s*(%a+)%s*[-:]?%s*(.-)%s*$")
      w = w and w:lower()
      if w == "done" or w == "retry" or w == "impossible" then
        word, reason = w, rest
      end
    end
    if word then
      return word, reason ~= "" and reason or nil
    end
    return "retry", "the auditor gave no verdict; end the answer with VERDICT: DONE, RETRY or IMPOSSIBLE"
  end,
}
