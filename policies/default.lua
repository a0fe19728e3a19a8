-- default.lua: oneshot's built-in behaviour, written out so you can copy and edit it.
-- Loading this file behaves exactly like running without --policy.
--
-- A policy returns one table. Every key is optional; a missing key means the built-in default.
-- Unknown keys are an error (so a typo such as `max_iteratons` is caught at load).
-- Policies run sandboxed on Luau: no io, no os.execute; `require` loads only sibling modules
-- (see docs/policy.md). Tests live in default_test.lua. Each hook call has a
-- 100 ms budget and the whole policy a 64 MiB memory cap.

-- Finds the last `VERDICT: X` line (any case), like the built-in parser. Returns the verdict
-- word in lowercase, the rest of that line, and the line's index.
local function last_verdict_line(lines)
  for i = #lines, 1, -1 do
    -- Strip markdown decoration auditors like to add around the keyword.
    local line = lines[i]:gsub("[%*_]", "")
    local word, rest = line:match("^%s*[#>%s]*[Vv][Ee][Rr][Dd][Ii][Cc][Tt]%s*[:=]%s*(%a+)(.*)$")
    if word then
      word = word:lower()
      if word == "done" or word == "retry" or word == "impossible" then
        return word, rest, i
      end
    end
  end
  return nil
end

-- Splits text into lines (keeps empty lines, so a blank line ends a REASON block).
local function split_lines(text)
  local lines = {}
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do
    lines[#lines + 1] = line
  end
  return lines
end

-- Reads `"key": "string"` or `"key": number` out of a one-line JSON object. Enough for the
-- verdict objects auditors print; the built-in Rust parser uses a full JSON parser.
local function json_field(object, key)
  local s = object:match('"' .. key .. '"%s*:%s*"(.-)"')
  if s then return s end
  return tonumber(object:match('"' .. key .. '"%s*:%s*([%d%.]+)'))
end

-- The tools that change files, as Claude Code, Gemini CLI and Codex name them.
local FILE_EDIT_TOOLS = {
  Write = true, Edit = true, MultiEdit = true, NotebookEdit = true,
  write_file = true, replace = true, apply_patch = true, file_change = true,
  -- An ACP agent's tool with no name of its own goes by its kind.
  edit = true, delete = true, move = true,
}

return {
  -- Budgets the engine enforces. Durations are seconds (1.5) or strings ("90s", "5m", "1h 30m").
  limits = {
    max_iterations = 5,          -- worker runs per session before it fails
    verdict_reasks = 2,          -- an answer without a verdict: ask the auditor again, this often
    inactivity_timeout = "5m",   -- no output for this long kills the agent's process group
    worker_timeout = false,      -- wall-clock cap per worker run (false = none)
    auditor_timeout = false,     -- wall-clock cap per auditor run (false = none)
    grace_period = "5s",         -- time between SIGTERM and SIGKILL when stopping an agent
    -- Transient provider failures (5xx, 529, 429, refused connection, cut stream) are retried
    -- `attempts` times (0 = never), waiting initial_delay, then factor times longer each time,
    -- never more than max_delay.
    retry = { attempts = 3, initial_delay = "2s", factor = 2, max_delay = "60s" },
    -- Per-session budgets from the agents' own usage reports, e.g.
    -- budget = { turns = 200, tokens = 5000000, usd = 10 }: warnings at 80 % and 95 %,
    -- FAILED budget_exceeded at 100 %. None by default.
    budget = {},
  },

  -- Whether the next worker iteration continues the worker's own conversation
  -- (`claude --resume`, `codex exec resume`), so the critique arrives in context.
  continue_conversation = true,

  -- Extra secret patterns (Rust regex syntax) redacted from output before it is logged.
  -- The built-in set already covers common API keys.
  redact = {},

  -- verdict(output, ctx): read the auditor's answer. Return "done", "retry" or "impossible",
  -- optionally followed by a reason and a confidence in [0, 1] (or return a table
  -- { verdict = ..., reason = ..., confidence = ... }). Return "none" when the answer holds no
  -- verdict: the auditor is asked again (limits.verdict_reasks) and no iteration is spent.
  -- (oneshot.parse_verdict(output) is this same reader, for a policy that adds rules to it.)
  verdict = function(output, ctx)
    -- 0. An agent auditor (Claude, Codex, …) answers in the verdict schema: oneshot found the
    --    object in its answer and checked it.
    local s = ctx.structured
    if s then
      return s.verdict, s.reason ~= "" and s.reason or nil, s.confidence
    end
    local lines = split_lines(output)
    -- 1. A JSON object with a "verdict" field on a line of its own; the last one wins.
    for i = #lines, 1, -1 do
      local line = lines[i]:match("^%s*(.-)%s*$")
      if line:sub(1, 1) == "{" and line:sub(-1) == "}" then
        local v = json_field(line, "verdict")
        if type(v) == "string" then
          v = v:lower()
          if v == "done" or v == "retry" or v == "impossible" then
            return v, json_field(line, "reason"), json_field(line, "confidence")
          end
        end
      end
    end
    -- 2. A `VERDICT: X` line; text after X, or a following `REASON:` line, is the reason.
    local verdict, rest, at = last_verdict_line(lines)
    if verdict then
      local reason = rest:gsub("^[%s%-:%.,;]+", ""):gsub("%s+$", "")
      if reason == "" then
        reason = nil
        for i = at + 1, #lines do
          local r = lines[i]:gsub("[%*_]", ""):match("^%s*[Rr][Ee][Aa][Ss][Oo][Nn]%s*[:=]%s*(.*)$")
          if r then reason = r break end
        end
      end
      return verdict, reason
    end
    -- 3. No verdict at all: ask the auditor again, and say what was missing.
    return "none", "the answer held no verdict: end it with VERDICT: DONE, RETRY or IMPOSSIBLE"
  end,

  -- salvage(evidence, ctx): a worker died, hung or was stopped. Return "success" (audit the
  -- work as is), "partial" (run the worker again) or "nothing" (fail the session), and a reason.
  -- evidence = { reason, exit_code, signal, output_tail, changed_files, changes_source }
  salvage = function(evidence, ctx)
    if #evidence.changed_files > 0 then
      return "partial", #evidence.changed_files .. " file(s) changed"
    end
    -- Being paused (Ctrl-C, or oneshot itself dying) is never the worker's fault.
    if evidence.reason == "interrupted" or evidence.reason == "oneshot_died" then
      return "partial", "the worker was paused, not failed"
    end
    return "nothing", "no files changed"
  end,

  -- guards["FROM -> TO"] = function(ctx) return true end  -- or: return false, "why"
  -- A guard can veto a transition the machine allows (the session then fails with your
  -- reason); it can never invent one. The default policy has no guards.
  guards = {},

  -- permit(tool, input, ctx, role): an agent asks to use a tool (`tool` is its name, `input`
  -- its input as a table). Return "allow" or "deny" (or true/false), optionally and a reason
  -- the agent is shown. `role` is "worker" or "auditor". A permit that fails (error, budget,
  -- bad return value) denies: this hook always fails closed.
  -- The worker may use every tool; the auditor judges the work, so it may not edit files.
  permit = function(tool, input, ctx, role)
    if role == "auditor" and FILE_EDIT_TOOLS[tool] then
      return "deny", "the auditor judges the work; it does not change files"
    end
    return "allow"
  end,

  -- next_prompt(ctx) / audit_prompt(ctx): return a string to replace the built-in prompt, or
  -- nil to keep it. Left out here, so the built-in templates are used.
  -- on_transition(from, to, ctx): observe every transition; the return value is ignored.
  -- on_notify(ctx): before a [notify] event is sent (ctx is the event). Return true/nil to
  -- send it as it is, false [, reason] to suppress it, or { extra = { ... } } to add fields to
  -- its payload. Left out here: every event is sent as it is. It always fails open.
}
