-- Token bucket in a hash: the bucket holds up to `capacity` tokens and gains `rate` tokens a
-- second, fractions included; a request takes `requested` tokens or is refused.
-- KEYS[1]: the bucket
-- ARGV: capacity, rate (tokens per second), now (seconds, with a fraction), requested
local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local requested = tonumber(ARGV[4])

local bucket = redis.call("HMGET", key, "tokens", "timestamp")
local tokens = tonumber(bucket[1])
local last = tonumber(bucket[2])
if tokens == nil then
  tokens = capacity
  last = now
end

-- refill for the time gone by, never past the top
local elapsed = math.max(0, now - last)
tokens = math.min(capacity, tokens + elapsed * rate)

local allowed = 0
if tokens >= requested then
  tokens = tokens - requested
  allowed = 1
end

redis.call("HSET", key, "tokens", tokens, "timestamp", now)
-- a full bucket needs no key: let it go once it would have refilled twice over
redis.call("EXPIRE", key, math.ceil(capacity / rate * 2))

return { allowed, tostring(tokens), tokens }
