package native

import (
	"crypto/sha1"
	"math"

	"github.com/throttledhq/throttled/scripting"
)

// The scripts of rate-limit-redis 6.0.1 (npm, dist/index.mjs and index.cjs, scripts.increment
// and scripts.get), the store of express-rate-limit: a fixed window counted in a string
// with a PTTL, byte for byte as the library sends them (its template literals with each
// line's leading blanks and the blank lines removed, then trimmed; the INCR line keeps its
// trailing blanks).

// RateLimitRedisIncrement is scripts.increment. KEYS[1] the key; ARGV[1] the window (ms).
const RateLimitRedisIncrement = `local windowMs = tonumber(ARGV[1])
local timeToExpire = redis.call("PTTL", KEYS[1])
if timeToExpire <= 0 then
redis.call("SET", KEYS[1], 1, "PX", windowMs)
return { 1, windowMs }
end
local totalHits = redis.call("INCR", KEYS[1])        
return { totalHits, timeToExpire }`

// RateLimitRedisGet is scripts.get. KEYS[1] the key.
const RateLimitRedisGet = `local totalHits = redis.call("GET", KEYS[1])
local timeToExpire = redis.call("PTTL", KEYS[1])
return { totalHits, timeToExpire }`

var (
	rateLimitRedisIncrementDigest = sha1.Sum([]byte(RateLimitRedisIncrement))
	rateLimitRedisGetDigest       = sha1.Sum([]byte(RateLimitRedisGet))
)

var (
	cmdPTTL = []byte("PTTL")
	cmdINCR = []byte("INCR")
	argPX   = []byte("PX")
	argOne  = []byte("1")
)

// maxPX bounds the window the code hands SET's PX: past it SET's own checks decide, and the
// interpreter runs the script.
const maxPX = 1e15

// rateLimitRedisIncrement is scripts.increment: a hit in the window, a new window of
// windowMs when the key has none (or no TTL). It replies {hits, ms to the window's end}.
func rateLimitRedisIncrement(dst []byte, call *scripting.Call) ([]byte, bool, error) {
	if len(call.Keys) < 1 || len(call.Args) < 1 {
		return dst, false, nil
	}
	key := call.Keys[0]
	window, ok := luaNumber(call.Args[0]) // local windowMs = tonumber(ARGV[1])
	if !ok {
		return dst, false, nil
	}
	args := scratch(call, 5)
	args[0], args[1] = cmdPTTL, key
	ttl, fail, err := callPTTL(dst, call, args[:2]) // local timeToExpire = redis.call("PTTL", KEYS[1])
	if err != nil || fail != "" {
		return dst, false, err
	}
	if float64(ttl) <= 0 { // if timeToExpire <= 0 then
		if window != math.Trunc(window) || window < 1 || window > maxPX {
			return dst, false, nil // SET would refuse the PX: the interpreter gives its error
		}
		// redis.call("SET", KEYS[1], 1, "PX", windowMs)
		px := scripting.AppendArgNumber(call.ScratchBytes[:0], window)
		call.ScratchBytes = px
		args[0], args[1], args[2], args[3], args[4] = cmdSet, key, argOne, argPX, px
		if _, ok, err := callSet(dst, call, args[:5], argOne, window, false); err != nil || !ok {
			return dst, false, err // SET failed and changed nothing
		}
		dst = append(dst, "*2\r\n:1\r\n"...) // return { 1, windowMs }
		return appendInt(dst, scripting.ReplyInteger(window)), true, nil
	}
	args[0], args[1] = cmdINCR, key
	hits, fail, err := callIncrBy(dst, call, args[:2], 1) // local totalHits = redis.call("INCR", KEYS[1])
	if err != nil || fail != "" {
		return dst, false, err // not a counter, or not a string: INCR changed nothing
	}
	// return { totalHits, timeToExpire }: each an integer made a Lua number and back
	dst = append(dst, "*2\r\n"...)
	dst = appendInt(dst, scripting.ReplyInteger(float64(hits)))
	return appendInt(dst, scripting.ReplyInteger(float64(ttl))), true, nil
}

// rateLimitRedisGet is scripts.get: the window's hits (a string, or false when there is no
// key) and the ms to its end.
func rateLimitRedisGet(dst []byte, call *scripting.Call) ([]byte, bool, error) {
	if len(call.Keys) < 1 {
		return dst, false, nil
	}
	key := call.Keys[0]
	args := scratch(call, 2)
	args[0], args[1] = cmdGet, key
	val, isNil, ok, out, err := callGet(dst, call, args[:2]) // local totalHits = redis.call("GET", KEYS[1])
	if err != nil || !ok {
		return dst, false, err
	}
	args[0], args[1] = cmdPTTL, key
	ttl, fail, err := callPTTL(out, call, args[:2]) // local timeToExpire = redis.call("PTTL", KEYS[1])
	if err != nil || fail != "" {
		return dst, false, err
	}
	// return { totalHits, timeToExpire }: false is a null in the caller's protocol
	reply := append(call.ScratchBytes[:0], "*2\r\n"...)
	if isNil {
		if call.Proto == 3 {
			reply = append(reply, "_\r\n"...)
		} else {
			reply = append(reply, "$-1\r\n"...)
		}
	} else {
		reply = appendBulk(reply, val)
	}
	reply = appendInt(reply, scripting.ReplyInteger(float64(ttl)))
	call.ScratchBytes = reply
	return append(dst, reply...), true, nil
}
