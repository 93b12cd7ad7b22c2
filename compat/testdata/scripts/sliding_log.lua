-- Sliding log in a sorted set: one member per request, scored by its time; a request is let
-- through while fewer than `limit` requests fell in the last `window` milliseconds.
-- KEYS[1]: the log
-- ARGV: window (ms), limit, now (ms), a unique id for this request
local key = KEYS[1]
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local id = ARGV[4]

-- forget what left the window
redis.call("ZREMRANGEBYSCORE", key, "-inf", now - window)

local count = redis.call("ZCARD", key)
if count < limit then
  redis.call("ZADD", key, now, id)
  redis.call("PEXPIRE", key, window)
  return { 1, limit - count - 1, 0 }
end

-- refused: tell the caller when the oldest request leaves the window
local oldest = redis.call("ZRANGE", key, 0, 0, "WITHSCORES")
return { 0, 0, tonumber(oldest[2]) + window - now }
