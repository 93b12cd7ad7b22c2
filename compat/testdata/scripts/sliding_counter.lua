-- Sliding window counter: a counter per fixed window, in keys made from the prefix and the
-- window's number; the count of the last `window` seconds is estimated as this window's
-- count plus the previous one's, weighted by how much of it still overlaps.
-- KEYS[1]: the prefix (the window keys are <prefix>:<number>)
-- ARGV: window (seconds), limit, now (seconds, with a fraction)
local prefix = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local current = math.floor(now / window)
local current_key = prefix .. ":" .. current
local previous_key = prefix .. ":" .. (current - 1)

local previous_count = tonumber(redis.call("GET", previous_key) or "0")
local current_count = tonumber(redis.call("GET", current_key) or "0")
local weight = 1 - (now - current * window) / window
local estimate = previous_count * weight + current_count

if estimate + 1 > limit then
  return { 0, tostring(estimate) }
end

current_count = redis.call("INCR", current_key)
redis.call("EXPIRE", current_key, window * 2)
return { 1, tostring(previous_count * weight + current_count) }
