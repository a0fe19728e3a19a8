-- strict.lua: fewer attempts, shorter patience, and "done" only when the auditor says so
-- explicitly and the worker left no loose ends.

local MAX_ELAPSED = 30 * 60 -- seconds; no new worker runs after half an hour

return {
  limits = {
    max_iterations = 3,
    inactivity_timeout = "2m",
    worker_timeout = "20m",
    auditor_timeout = "5m",
    grace_period = "3s",
  },

  -- Extra secrets to redact: AWS access keys, GitHub tokens, bearer headers.
  redact = {
    "AKIA[0-9A-Z]{16}",
    "gh[pousr]_[A-Za-z0-9]{36,}",
    "(?i)authorization:\\s*bearer\\s+[A-Za-z0-9._~+/-]+=*",
  },

  -- Only an explicit verdict counts — an agent auditor's answer in the verdict schema, or a
  -- `VERDICT: DONE` line — and "done" not while the worker's own output still mentions TODO or
  -- FIXME. An answer without a verdict is asked again (limits.verdict_reasks), never guessed.
  verdict = function(output, ctx)
    local verdict, reason
    if ctx.structured then
      verdict, reason = ctx.structured.verdict, ctx.structured.reason
    else
      for line in output:gmatch("[^\n]+") do
        local word = line:match("^%s*VERDICT:%s*(%u+)")
        if word == "DONE" or word == "RETRY" or word == "IMPOSSIBLE" then
          verdict = word:lower()
        end
      end
      reason = output:match("REASON:%s*([^\n]+)")
    end
    if verdict == nil then
      return "none", "strict: the answer must end with an explicit VERDICT: line"
    end
    if verdict == "done" then
      local w = ctx.worker_output
      if w:find("TODO", 1, true) or w:find("FIXME", 1, true) then
        return "retry", "strict: the worker's output still mentions TODO or FIXME"
      end
    end
    return verdict, reason
  end,

  -- Keep work only when the worker was paused; a crash or a hang means start over.
  salvage = function(evidence, ctx)
    if evidence.reason == "interrupted" or evidence.reason == "oneshot_died" then
      return "partial", "strict: paused, resuming"
    end
    return "nothing", "strict: the worker stopped on its own (" .. tostring(evidence.reason) .. ")"
  end,

  guards = {
    -- Do not start another worker run once the session has taken too long.
    ["REITERATION_PENDING -> WORKER_EXECUTING"] = function(ctx)
      if ctx.elapsed > MAX_ELAPSED then
        return false, string.format("strict: %d minutes elapsed, not starting iteration %d",
          ctx.elapsed // 60, ctx.iteration + 1)
      end
      return true
    end,
  },
}
