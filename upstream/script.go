package upstream

// casScript is the one script the upstream runs: a compare-and-set over a call's keys, or a
// check when nothing changes. It knows nothing of the algorithms.
//
// KEYS: the keys. For the i-th key, ARGV[3i-2] is the tag (the first 8 bytes of the value)
// the caller saw, ” when it saw none; ARGV[3i-1] the new value, ” to leave the key as it
// is, '-' to delete it; ARGV[3i] its expiry, Unix ms. When every key holds what the caller
// saw, the changes are made and the reply is 1; otherwise nothing changes and the reply is
// each key's value (nil when missing), from which the caller evaluates again.
const casScript = `
local n = #KEYS
local cur = {}
local same = true
for i = 1, n do
  local v = redis.call('GET', KEYS[i])
  cur[i] = v
  local want = ARGV[3*i-2]
  if v then
    if want == '' or string.sub(v, 1, 8) ~= want then same = false end
  elseif want ~= '' then
    same = false
  end
end
if not same then return cur end
for i = 1, n do
  local new = ARGV[3*i-1]
  if new == '-' then
    redis.call('DEL', KEYS[i])
  elseif new ~= '' then
    redis.call('SET', KEYS[i], new, 'PXAT', ARGV[3*i])
  end
end
return 1
`
