-- lenient.lua: more attempts, more patience, and keep whatever work a dead worker left.

return {
  limits = {
    max_iterations = 10,
    inactivity_timeout = "15m",
    worker_timeout = "2h",
    auditor_timeout = "30m",
    grace_period = "10s",
  },

  -- Accept any case and a few synonyms. No verdict at all means try again: lenient chooses to
  -- spend a worker iteration on it (the default asks the auditor again, answering "none").
  verdict = function(output, ctx)
    if ctx.structured then
      return ctx.structured.verdict, ctx.structured.reason
    end
    local verdict, reason
    for line in output:gmatch("[^\n]+") do
      local word, rest = line:lower():match("verdict%s*[:=]%s*%**%s*(%a+)(.*)")
      if word == "done" or word == "pass" or word == "approved" then
        verdict, reason = "done", rest
      elseif word == "retry" or word == "fail" then
        verdict, reason = "retry", rest
      elseif word == "impossible" then
        verdict, reason = "impossible", rest
      end
    end
    if verdict == nil then
      return "retry", "auditor gave no verdict"
    end
    reason = reason:gsub("^[%s%-:%.]+", "")
    return verdict, reason ~= "" and reason or nil
  end,

  -- Files changed and a clean-ish exit: the work is probably finished, let the auditor judge.
  -- Files changed otherwise: keep them and run the worker again. Paused: run again.
  salvage = function(evidence, ctx)
    local changed = #evidence.changed_files > 0
    local clean = evidence.exit_code == 0 or evidence.exit_code == nil and evidence.signal == nil
    if changed and clean then
      return "success", "lenient: files changed and the worker exited cleanly"
    end
    if changed or evidence.reason == "interrupted" or evidence.reason == "oneshot_died" then
      return "partial", "lenient: keeping the work so far"
    end
    return "nothing", "lenient: nothing changed"
  end,
}
