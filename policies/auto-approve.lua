-- auto-approve.lua: seed 003 §5.5, conditional auto-approval of a job's result.
--
--   IF confidence >= THRESHOLD AND risk == LOW: auto-approve ELSE a human signs off.
--
-- Everything else is the built-in behaviour. Rust still has the last word: "approve" for a
-- session that did not complete is refused as a policy error, so this hook checks
-- `result.completed` first and sends such a job to intervention.
-- Test it with `oneshot policy test policies/auto-approve.lua`.

-- Below this confidence a human looks, whatever the risk.
local THRESHOLD = 0.95

-- The job has stopped making progress: the same empty diff or the same findings too often.
local function stalled(job)
  local limit = job.no_progress_limit
  if limit <= 0 then return nil end
  if job.empty_diffs >= limit then
    return "no progress: " .. job.empty_diffs .. " empty diffs in a row"
  end
  if job.same_findings >= limit then
    return "no progress: the same findings " .. job.same_findings .. " times in a row"
  end
  return nil
end

return {
  -- approve(result, job): "approve" (SUCCESS), "human" (APPROVAL_REQUIRED) or "intervene"
  -- (INTERVENTION_REQUIRED), and a reason for the job's record.
  approve = function(result, job)
    if result.panel_passed == false then
      -- The session completed, but the panel of auditors did not pass the work.
      return "intervene", result.reason or "the panel did not pass"
    end
    if not result.completed then
      return "intervene", "the session ended " .. result.outcome
    end
    local why = stalled(job)
    if why then return "intervene", why end
    if result.confidence ~= nil and result.confidence >= THRESHOLD and job.risk == "low" then
      return "approve", string.format("confidence %.2f on a low-risk job", result.confidence)
    end
    return "human", "a human signs off: risk " .. job.risk .. ", confidence "
      .. (result.confidence and string.format("%.2f", result.confidence) or "unknown")
  end,
}
