package native

import (
	"crypto/sha1"
	"math"

	"github.com/throttledhq/throttled/scripting"
)

// The scripts of github.com/go-redis/redis_rate/v10 v10.0.1 (lua.go, allowN and
// allowAtMost; after rwz/redis-gcra's perform_gcra_ratelimit.lua), byte for byte as the
// library sends them: a digest is of the exact text. GCRA: the key holds the theoretical
// arrival time (tat), in seconds since 2017 as a float; a request of cost n moves it by
// n emission intervals (period / rate) and is allowed while it stays within burst
// intervals of now.

// RedisRateAllowN is redis_rate's allowN, the script of Limiter.Allow and AllowN.
const RedisRateAllowN = `
-- this script has side-effects, so it requires replicate commands mode
redis.replicate_commands()

local rate_limit_key = KEYS[1]
local burst = ARGV[1]
local rate = ARGV[2]
local period = ARGV[3]
local cost = tonumber(ARGV[4])

local emission_interval = period / rate
local increment = emission_interval * cost
local burst_offset = emission_interval * burst

-- redis returns time as an array containing two integers: seconds of the epoch
-- time (10 digits) and microseconds (6 digits). for convenience we need to
-- convert them to a floating point number. the resulting number is 16 digits,
-- bordering on the limits of a 64-bit double-precision floating point number.
-- adjust the epoch to be relative to Jan 1, 2017 00:00:00 GMT to avoid floating
-- point problems. this approach is good until "now" is 2,483,228,799 (Wed, 09
-- Sep 2048 01:46:39 GMT), when the adjusted value is 16 digits.
local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

local tat = redis.call("GET", rate_limit_key)

if not tat then
  tat = now
else
  tat = tonumber(tat)
end

tat = math.max(tat, now)

local new_tat = tat + increment
local allow_at = new_tat - burst_offset

local diff = now - allow_at
local remaining = diff / emission_interval

if remaining < 0 then
  local reset_after = tat - now
  local retry_after = diff * -1
  return {
    0, -- allowed
    0, -- remaining
    tostring(retry_after),
    tostring(reset_after),
  }
end

local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", rate_limit_key, new_tat, "EX", math.ceil(reset_after))
end
local retry_after = -1
return {cost, remaining, tostring(retry_after), tostring(reset_after)}
`

// RedisRateAllowAtMost is redis_rate's allowAtMost, the script of Limiter.AllowAtMost.
const RedisRateAllowAtMost = `
-- this script has side-effects, so it requires replicate commands mode
redis.replicate_commands()

local rate_limit_key = KEYS[1]
local burst = ARGV[1]
local rate = ARGV[2]
local period = ARGV[3]
local cost = tonumber(ARGV[4])

local emission_interval = period / rate
local burst_offset = emission_interval * burst

-- redis returns time as an array containing two integers: seconds of the epoch
-- time (10 digits) and microseconds (6 digits). for convenience we need to
-- convert them to a floating point number. the resulting number is 16 digits,
-- bordering on the limits of a 64-bit double-precision floating point number.
-- adjust the epoch to be relative to Jan 1, 2017 00:00:00 GMT to avoid floating
-- point problems. this approach is good until "now" is 2,483,228,799 (Wed, 09
-- Sep 2048 01:46:39 GMT), when the adjusted value is 16 digits.
local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

local tat = redis.call("GET", rate_limit_key)

if not tat then
  tat = now
else
  tat = tonumber(tat)
end

tat = math.max(tat, now)

local diff = now - (tat - burst_offset)
local remaining = diff / emission_interval

if remaining < 1 then
  local reset_after = tat - now
  local retry_after = emission_interval - diff
  return {
    0, -- allowed
    0, -- remaining
    tostring(retry_after),
    tostring(reset_after),
  }
end

if remaining < cost then
  cost = remaining
  remaining = 0
else
  remaining = remaining - cost
end

local increment = emission_interval * cost
local new_tat = tat + increment

local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", rate_limit_key, new_tat, "EX", math.ceil(reset_after))
end

return {
  cost,
  remaining,
  tostring(-1),
  tostring(reset_after),
}
`

var (
	redisRateAllowNDigest      = sha1.Sum([]byte(RedisRateAllowN))
	redisRateAllowAtMostDigest = sha1.Sum([]byte(RedisRateAllowAtMost))
)

// jan2017 is the scripts' epoch, 2017-01-01T00:00:00Z in Unix seconds.
const jan2017 = 1483228800

// The commands' names, as the scripts spell them.
var (
	cmdTime = []byte("TIME")
	cmdGet  = []byte("GET")
	cmdSet  = []byte("SET")
	argEX   = []byte("EX")
)

// maxEX bounds the EX the code hands SET: past it (a stored tat far in the future) SET's
// own checks decide, and the interpreter runs the script.
const maxEX = 1e15

// redisRateAllowN is allowN: the request's cost all or nothing. It replies {allowed,
// remaining, tostring(retry_after), tostring(reset_after)}.
func redisRateAllowN(dst []byte, call *scripting.Call) ([]byte, bool, error) {
	return redisRate(dst, call, false)
}

// redisRateAllowAtMost is allowAtMost: as much of the cost as the bucket holds.
func redisRateAllowAtMost(dst []byte, call *scripting.Call) ([]byte, bool, error) {
	return redisRate(dst, call, true)
}

// redisRate runs allowN (atMost false) or allowAtMost, line by line as the Lua does; the
// comments are the Lua's. Each product is rounded on its own (float64(...)), as the
// interpreter's are, where Go could fuse it with the sum after it.
func redisRate(dst []byte, call *scripting.Call, atMost bool) ([]byte, bool, error) {
	if len(call.Keys) < 1 || len(call.Args) < 4 {
		return dst, false, nil // KEYS[1] or an ARGV nil: a Lua error, the interpreter's
	}
	key := call.Keys[0]
	burst, ok1 := luaNumber(call.Args[0])
	rate, ok2 := luaNumber(call.Args[1])
	period, ok3 := luaNumber(call.Args[2])
	cost, ok4 := luaNumber(call.Args[3]) // tonumber(ARGV[4])
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return dst, false, nil
	}
	emission := period / rate                // emission_interval = period / rate
	burstOffset := float64(emission * burst) // burst_offset = emission_interval * burst
	increment := float64(emission * cost)    // allowN's increment = emission_interval * cost
	if !finite(emission, burstOffset, increment) {
		return dst, false, nil
	}

	args := scratch(call, 5)
	args[0] = cmdTime
	now, ok, err := callTime(dst, call, args[:1], jan2017) // now = redis.call("TIME")
	if err != nil || !ok {
		return dst, false, err
	}

	args[0], args[1] = cmdGet, key
	val, isNil, ok, _, err := callGet(dst, call, args[:2]) // tat = redis.call("GET", rate_limit_key)
	if err != nil || !ok {
		return dst, false, err
	}
	tat := now // if not tat then tat = now
	if !isNil {
		if tat, ok = luaNumber(val); !ok { // else tat = tonumber(tat)
			return dst, false, nil
		}
	}
	if now > tat { // tat = math.max(tat, now)
		tat = now
	}

	var remaining, resetAfter, newTat float64
	if !atMost {
		newTat = tat + increment        // new_tat = tat + increment
		allowAt := newTat - burstOffset // allow_at = new_tat - burst_offset
		diff := now - allowAt           // diff = now - allow_at
		remaining = diff / emission     // remaining = diff / emission_interval
		if !finite(newTat, allowAt, diff, remaining) {
			return dst, false, nil
		}
		if remaining < 0 {
			// return {0, 0, tostring(retry_after = diff * -1), tostring(reset_after = tat - now)}
			return appendReply(dst, 0, 0, diff*-1, tat-now), true, nil
		}
		resetAfter = newTat - now // reset_after = new_tat - now
	} else {
		diff := now - (tat - burstOffset) // diff = now - (tat - burst_offset)
		remaining = diff / emission       // remaining = diff / emission_interval
		if !finite(diff, remaining) {
			return dst, false, nil
		}
		if remaining < 1 {
			// return {0, 0, tostring(retry_after = emission_interval - diff), tostring(reset_after = tat - now)}
			return appendReply(dst, 0, 0, emission-diff, tat-now), true, nil
		}
		if remaining < cost {
			cost, remaining = remaining, 0
		} else {
			remaining -= cost
		}
		increment = float64(emission * cost) // increment = emission_interval * cost
		newTat = tat + increment             // new_tat = tat + increment
		resetAfter = newTat - now            // reset_after = new_tat - now
		if !finite(increment, newTat, resetAfter) {
			return dst, false, nil
		}
	}

	if resetAfter > 0 {
		// redis.call("SET", rate_limit_key, new_tat, "EX", math.ceil(reset_after))
		ex := math.Ceil(resetAfter)
		if ex > maxEX {
			return dst, false, nil
		}
		nums := scripting.AppendArgNumber(call.ScratchBytes[:0], newTat)
		n := len(nums)
		nums = scripting.AppendArgNumber(nums, ex)
		call.ScratchBytes = nums
		tatArg, exArg := nums[:n:n], nums[n:]
		args[0], args[1], args[2], args[3], args[4] = cmdSet, key, tatArg, argEX, exArg
		if _, ok, err := callSet(dst, call, args[:5], tatArg, ex*1000, false); err != nil || !ok {
			// SET failed (out of memory, a read-only script...): it changed nothing, and
			// the interpreter's run gives the error as the script would.
			return dst, false, err
		}
	}
	// return {cost, remaining, tostring(-1), tostring(reset_after)}
	return appendReply(dst, cost, remaining, -1, resetAfter), true, nil
}
