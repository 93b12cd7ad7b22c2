-- Fixed window counter: INCR the window's key, and give it its expiry on the first hit.
-- KEYS[1]: the window's key (the caller puts the window's number in it)
-- ARGV: limit, window (seconds)
local limit = tonumber(ARGV[1])
local count = redis.call("INCR", KEYS[1])
if count == 1 then
  redis.call("EXPIRE", KEYS[1], ARGV[2])
end
if count > limit then
  return { 0, 0 }
end
return { 1, limit - count }
