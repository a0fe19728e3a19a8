-- The `t` table a policy test function receives. Errors are raised at level 2 so a failure
-- points at the test's own line, not at this file.
local error, tostring, type, pairs, string = error, tostring, type, pairs, string

local function show(v, depth)
  depth = depth or 0
  if type(v) == "string" then
    return string.format("%q", v)
  end
  if type(v) ~= "table" or depth > 2 then
    return tostring(v)
  end
  local parts = {}
  for k, x in pairs(v) do
    parts[#parts + 1] = tostring(k) .. " = " .. show(x, depth + 1)
    if #parts >= 8 then
      parts[#parts + 1] = "..."
      break
    end
  end
  return "{ " .. table.concat(parts, ", ") .. " }"
end

local function equal(a, b, depth)
  if a == b then
    return true
  end
  if type(a) ~= "table" or type(b) ~= "table" or depth > 32 then
    return false
  end
  for k, v in pairs(a) do
    if not equal(v, b[k], depth + 1) then
      return false
    end
  end
  for k in pairs(b) do
    if a[k] == nil then
      return false
    end
  end
  return true
end

local function suffix(msg)
  return msg ~= nil and (": " .. tostring(msg)) or ""
end

local t = {}

-- t.assert(cond, msg): fails the test when cond is false or nil.
function t.assert(cond, msg)
  if not cond then
    error("assertion failed" .. suffix(msg), 2)
  end
  return cond
end

-- t.eq(actual, expected, msg): deep equality for tables, == otherwise.
function t.eq(actual, expected, msg)
  if not equal(actual, expected, 0) then
    error("expected " .. show(expected) .. ", got " .. show(actual) .. suffix(msg), 2)
  end
end

-- t.contains(text, part, msg): plain substring search.
function t.contains(text, part, msg)
  if type(text) ~= "string" or not string.find(text, part, 1, true) then
    error("expected " .. show(text) .. " to contain " .. show(part) .. suffix(msg), 2)
  end
end

-- t.fail(msg): fails the test unconditionally.
function t.fail(msg)
  error("failed" .. suffix(msg), 2)
end

return table.freeze(t)
