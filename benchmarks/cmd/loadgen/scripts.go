package main

// The Redis baselines: each rate limit as the Lua script that articles and libraries run on Redis,
// taking "now" from redis.call('TIME') so that every client agrees on the clock. Each replies
// {limited, limit, remaining, ...} like throttled's verbs, so the load tool counts denials alike.

// gcraScript is the classic GCRA: the key holds the theoretical arrival time (TAT) in µs with a
// PX expiry at the moment the key would be idle again.
// KEYS[1] key; ARGV: max_burst, count per period, period (ms), cost.
// Reply: limited, limit, remaining, retry_after_ms, reset_after_ms.
const gcraScript = `
local burst = tonumber(ARGV[1])
local emission = tonumber(ARGV[3]) * 1000 / tonumber(ARGV[2])
local increment = emission * tonumber(ARGV[4])
local dvt = emission * (burst + 1)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + increment
local diff = now - (new_tat - dvt)
if diff < 0 then
  local retry = -1
  if increment <= dvt then retry = math.ceil(-diff / 1000) end
  return {1, burst + 1, 0, retry, math.ceil((tat - now) / 1000)}
end
local ttl = math.ceil((new_tat - now) / 1000)
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', ttl)
return {0, burst + 1, math.floor(diff / emission), -1, ttl}
`

// tokenBucketScript is the token bucket kept in a hash of tokens and last refill time (ms),
// read with HMGET and written back with HSET and an expiry for when it is full again.
// KEYS[1] key; ARGV: capacity, refill tokens, per period (ms), cost.
// Reply: limited, limit, remaining.
const tokenBucketScript = `
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2]) / tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or capacity
local ts = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - ts) * rate)
local limited = 1
if tokens >= cost then
  tokens = tokens - cost
  limited = 0
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate) + 1)
return {limited, capacity, math.floor(tokens)}
`

// slidingLogScript is the sliding log as a sorted set of admission times (µs): drop those that
// left the window, count the rest, add this one if there is room.
// KEYS[1] key; ARGV: limit, window (ms).
// Reply: limited, limit, remaining.
const slidingLogScript = `
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  return {1, limit, 0}
end
redis.call('ZADD', KEYS[1], now, string.format('%.0f-%d', now, count))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {0, limit, limit - count - 1}
`
