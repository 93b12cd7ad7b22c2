-- Leaky bucket (as a meter): each request pours one unit in, the bucket leaks `leak` units a
-- second, and a request that would make it overflow is refused.
-- KEYS[1]: the bucket
-- ARGV: capacity, leak (units per second), now (ms)
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local leak = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local state = redis.call("HMGET", key, "level", "updated")
local level = tonumber(state[1]) or 0
local updated = tonumber(state[2]) or now

-- drain what leaked out since the last request
level = math.max(0, level - (now - updated) * leak / 1000)

if level + 1 > capacity then
  local wait = math.ceil((level + 1 - capacity) * 1000 / leak)
  return { 0, wait, tostring(level) }
end

level = level + 1
redis.call("HMSET", key, "level", level, "updated", now)
redis.call("PEXPIRE", key, math.ceil(level * 1000 / leak))
return { 1, math.floor(capacity - level), tostring(level) }
