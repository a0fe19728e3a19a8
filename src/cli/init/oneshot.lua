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

  -- Reads the auditor's answer as the built-in reader does, for every kind of auditor:
  -- - an agent auditor (claude, codex, gemini, …) answers in the verdict schema; oneshot finds
  --   that object in its answer, checks it, and hands it over as `ctx.structured`;
  -- - a command auditor prints `VERDICT: DONE | RETRY | IMPOSSIBLE` (the rest of the line, or a
  --   `REASON:` line, is the reason) or a JSON verdict object: `oneshot.parse_verdict` reads it.
  -- For "retry" the reason is the critique the worker gets next. Add your own rules here, e.g.
  -- refuse "done" while `ctx.worker_output` still mentions TODO.
  verdict = function(output, ctx)
    local v = ctx.structured or oneshot.parse_verdict(output)
    if v then
      return v.verdict, v.reason ~= "" and v.reason or nil, v.confidence
    end
    -- No verdict in the answer: "none" asks the auditor again (limits.verdict_reasks, 2 by
    -- default) instead of spending a worker iteration.
    return "none", "end the answer with VERDICT: DONE, RETRY or IMPOSSIBLE"
  end,
}
