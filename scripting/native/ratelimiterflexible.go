package native

import (
	"crypto/sha1"
	"encoding/hex"

	"github.com/throttledhq/throttled/scripting"
)

// RateLimiterFlexible is rate-limiter-flexible 11.4.0's script (npm, lib/RateLimiterRedis.js,
// incrTtlLuaScript), byte for byte as the library sends it with EVAL: its template literal's
// lines joined by the backslashes that end them, so one line with a blank at its end. A
// fixed window: the key counts the points consumed, created at 0 with the window's TTL.
// KEYS[1] the key; ARGV: points, window (s).
const RateLimiterFlexible = `redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX') local consumed = redis.call('incrby', KEYS[1], ARGV[1]) local ttl = redis.call('pttl', KEYS[1]) if ttl == -1 then   redis.call('expire', KEYS[1], ARGV[2])   ttl = 1000 * ARGV[2] end return {consumed, ttl} `

var (
	rateLimiterFlexibleDigest = sha1.Sum([]byte(RateLimiterFlexible))
	rateLimiterFlexibleSHA    = hex.EncodeToString(rateLimiterFlexibleDigest[:])
)

// The commands' names, as the script spells them.
var (
	lowSet    = []byte("set")
	lowIncrBy = []byte("incrby")
	lowPTTL   = []byte("pttl")
	lowExpire = []byte("expire")
	argZero   = []byte("0")
	lowEX     = []byte("EX")
	lowNX     = []byte("NX")
)

// rateLimiterFlexible is incrTtlLuaScript: consume ARGV[1] points in a window of ARGV[2]
// seconds. It replies {points consumed, ms to the window's end}.
//
// Its first command writes, so what would fail after it must be known before it: the
// points must be an integer INCRBY takes and the window one SET's EX and EXPIRE both take
// (small plain integers; anything else declines at once). Then SET ... NX either created
// the key at 0, and INCRBY of those points cannot fail, or changed nothing, and an INCRBY
// that fails (not a counter, an overflow) changed nothing either: the interpreter then
// runs the script from a keyspace as it was.
func rateLimiterFlexible(dst []byte, call *scripting.Call) ([]byte, bool, error) {
	if len(call.Keys) < 1 || len(call.Args) < 2 {
		return dst, false, nil
	}
	key, points, window := call.Keys[0], call.Args[0], call.Args[1]
	if !smallInteger(points, true) || !smallInteger(window, false) {
		return dst, false, nil
	}
	seconds, _ := luaNumber(window)
	args := scratch(call, 6)
	// redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
	args[0], args[1], args[2], args[3], args[4], args[5] = lowSet, key, argZero, lowEX, window, lowNX
	created, ok, err := callSet(dst, call, args[:6], argZero, seconds*1000, true)
	if err != nil || !ok {
		return dst, false, err // an error: nothing changed
	}
	// local consumed = redis.call('incrby', KEYS[1], ARGV[1])
	by, _ := luaNumber(points)
	args[0], args[1], args[2] = lowIncrBy, key, points
	consumed, fail, err := callIncrBy(dst, call, args[:3], int64(by))
	switch {
	case err != nil:
		return dst, false, err
	case fail != "" && created:
		return failed(dst, fail), true, nil
	case fail != "":
		return dst, false, nil
	}
	// local ttl = redis.call('pttl', KEYS[1])
	args[0], args[1] = lowPTTL, key
	pttl, fail, err := callPTTL(dst, call, args[:2])
	switch {
	case err != nil:
		return dst, false, err
	case fail != "":
		return failed(dst, fail), true, nil
	}
	ttl := float64(pttl)
	if ttl == -1 { // if ttl == -1 then
		// redis.call('expire', KEYS[1], ARGV[2])
		args[0], args[1], args[2] = lowExpire, key, window
		if fail, err := callExpire(dst, call, args[:3], int64(seconds)); err != nil || fail != "" {
			if err != nil {
				return dst, false, err
			}
			return failed(dst, fail), true, nil
		}
		ttl = float64(1000 * seconds) // ttl = 1000 * ARGV[2]
	}
	// return {consumed, ttl}
	dst = append(dst, "*2\r\n"...)
	dst = appendInt(dst, scripting.ReplyInteger(float64(consumed)))
	return appendInt(dst, scripting.ReplyInteger(ttl)), true, nil
}

// failed appends the script's error (line 1) for a command's error reply.
func failed(dst []byte, reply string) []byte {
	return scripting.AppendCallError(dst, []byte(reply), rateLimiterFlexibleSHA, 1)
}

// smallInteger reports whether b is an integer every command reads alike: plain digits
// without a leading zero or a plus; when signed (INCRBY's points) a minus or 0 too, below
// 10^15; else (the window, SET's EX and EXPIRE's seconds) from 1 to below 10^9, which no
// clock before 2230 makes overflow.
func smallInteger(b []byte, signed bool) bool {
	limit := 9
	if signed {
		if len(b) == 1 && b[0] == '0' {
			return true
		}
		if len(b) > 0 && b[0] == '-' {
			b = b[1:]
		}
		limit = 15
	}
	if len(b) == 0 || len(b) > limit || b[0] < '1' || b[0] > '9' {
		return false
	}
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}
