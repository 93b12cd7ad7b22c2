package native

import (
	"math"
	"strconv"

	"github.com/throttledhq/throttled/scripting"
)

// Lookup returns the Go code of the script with digest d, or nil when it takes the
// interpreter (scripting.Engine.Natives).
func Lookup(d [20]byte) scripting.Native {
	switch d {
	case redisRateAllowNDigest:
		return redisRateAllowN
	case redisRateAllowAtMostDigest:
		return redisRateAllowAtMost
	case rateLimitRedisIncrementDigest:
		return rateLimitRedisIncrement
	case rateLimitRedisGetDigest:
		return rateLimitRedisGet
	case rateLimiterFlexibleDigest:
		return rateLimiterFlexible
	}
	return nil
}

// luaNumber reads a string a script uses as a number (in arithmetic, or with tonumber),
// when it is a plain decimal every reader agrees on: an optional minus, an integer part
// without leading zeros, an optional fraction and exponent, a finite value, and not a
// negative zero (gopher-lua's arithmetic reads "-0" as 0, tonumber as -0). Anything else
// (blanks, a plus, hexadecimal, "010", which gopher-lua's arithmetic reads as octal,
// "inf", an overflow) is not ok: the interpreter must read it.
func luaNumber(b []byte) (float64, bool) {
	i := 0
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return 0, false
	}
	plain := true // digits alone
	if i < len(b) && b[i] == '.' {
		plain = false
		i++
		if i == len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		plain = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i == len(b) || !isDigit(b[i]) {
			return 0, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i != len(b) {
		return 0, false
	}
	if plain && i-start <= 15 { // below 10^15, exact; else strconv rounds as strtod does
		var n int64
		for _, c := range b[start:] {
			n = n*10 + int64(c-'0')
		}
		if neg {
			if n == 0 {
				return 0, false
			}
			n = -n
		}
		return float64(n), true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || (f == 0 && neg) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// scratch returns n argument slots of the Call's scratch.
func scratch(call *scripting.Call, n int) [][]byte {
	if cap(call.Scratch) < n {
		call.Scratch = make([][]byte, max(n, 8))
	}
	return call.Scratch[:n]
}

// integer reads a whole RESP integer reply; ok is false for anything else (an error).
func integer(b []byte) (int64, bool) {
	if len(b) < 4 || b[0] != ':' || b[len(b)-2] != '\r' || b[len(b)-1] != '\n' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b[1:len(b)-2]), 10, 64)
	return n, err == nil
}

// appendBulk appends b as a bulk string.
func appendBulk(dst, b []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// finite reports whether every number is neither infinite nor NaN: the arithmetic the
// code reproduces exactly.
func finite(fs ...float64) bool {
	for _, f := range fs {
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return false
		}
	}
	return true
}

// bulk reads one RESP2 bulk string at the start of b: its bytes and what follows. isNil is
// set for the null bulk string; ok is false for anything else (an error reply).
func bulk(b []byte) (val, rest []byte, isNil, ok bool) {
	if len(b) < 4 || b[0] != '$' {
		return nil, nil, false, false
	}
	if b[1] == '-' {
		if len(b) >= 5 && string(b[:5]) == "$-1\r\n" {
			return nil, b[5:], true, true
		}
		return nil, nil, false, false
	}
	n, i := 0, 1
	for i < len(b) && isDigit(b[i]) && i < 12 {
		n = n*10 + int(b[i]-'0')
		i++
	}
	if i == 1 || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return nil, nil, false, false
	}
	i += 2
	if len(b)-i < n+2 || b[i+n] != '\r' || b[i+n+1] != '\n' {
		return nil, nil, false, false
	}
	return b[i : i+n], b[i+n+2:], false, true
}

// timeNow reads TIME's reply as a script that does (t[1] - epoch) + (t[2] / 1000000)
// computes it.
func timeNow(b []byte, epoch float64) (float64, bool) {
	if len(b) < 4 || string(b[:4]) != "*2\r\n" {
		return 0, false
	}
	s, rest, isNil, ok := bulk(b[4:])
	if !ok || isNil {
		return 0, false
	}
	us, rest, isNil, ok := bulk(rest)
	if !ok || isNil || len(rest) != 0 {
		return 0, false
	}
	sec, ok1 := luaNumber(s)
	usec, ok2 := luaNumber(us)
	if !ok1 || !ok2 {
		return 0, false
	}
	return float64(sec-epoch) + float64(usec/1000000), true
}

// appendReply appends a script's reply {a, b, tostring(c), tostring(d)}: two numbers
// truncated to integers, two numbers as Lua writes them, the same in RESP2 and RESP3.
func appendReply(dst []byte, a, b, c, d float64) []byte {
	dst = append(dst, "*4\r\n"...)
	dst = appendInt(dst, scripting.ReplyInteger(a))
	dst = appendInt(dst, scripting.ReplyInteger(b))
	dst = appendLuaString(dst, c)
	return appendLuaString(dst, d)
}

func appendInt(dst []byte, n int64) []byte {
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

// appendLuaString appends tostring(f) as a bulk string.
func appendLuaString(dst []byte, f float64) []byte {
	var b [32]byte
	s := scripting.AppendLuaNumber(b[:0], f)
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// The commands the scripts call, on Keys[0]: through call.Direct when the host offers it,
// else through call.Host.Call with the reply read back. args is the command as the script
// calls it. ok false is a reply the code does not reproduce (an error), which changed
// nothing; err is the host's. Each leaves dst as it was given, but callGet, whose value
// may lie in out, after dst.

// callTime is redis.call("TIME") as a script reads it: (t[1] - epoch) + (t[2] / 1000000).
func callTime(dst []byte, call *scripting.Call, args [][]byte, epoch float64) (float64, bool, error) {
	if d := call.Direct; d != nil {
		sec, usec := d.Time(args)
		return float64(sec) - epoch + float64(usec)/1000000, true, nil
	}
	mark := len(dst)
	out, err := call.Host.Call(dst, args, 2)
	if err != nil {
		return 0, false, err
	}
	now, ok := timeNow(out[mark:], epoch)
	return now, ok, nil
}

// callGet is GET: the value, isNil for none.
func callGet(dst []byte, call *scripting.Call, args [][]byte) (val []byte, isNil, ok bool, out []byte, err error) {
	if d := call.Direct; d != nil {
		val, found, ok := d.Get(args)
		return val, !found, ok, dst, nil
	}
	mark := len(dst)
	if out, err = call.Host.Call(dst, args, 2); err != nil {
		return nil, false, false, dst, err
	}
	val, rest, isNil, ok := bulk(out[mark:])
	return val, isNil, ok && len(rest) == 0, out, nil
}

// callPTTL is PTTL: the time left, or the command's error reply in fail.
func callPTTL(dst []byte, call *scripting.Call, args [][]byte) (n int64, fail string, err error) {
	if d := call.Direct; d != nil {
		return d.PTTL(args), "", nil
	}
	return hostInteger(dst, call, args)
}

// hostInteger runs a command whose reply is an integer through the host: the integer, or
// the command's error reply in fail.
func hostInteger(dst []byte, call *scripting.Call, args [][]byte) (n int64, fail string, err error) {
	mark := len(dst)
	out, err := call.Host.Call(dst, args, 2)
	if err != nil {
		return 0, "", err
	}
	if n, ok := integer(out[mark:]); ok {
		return n, "", nil
	}
	return 0, string(out[mark:]), nil
}

// callSet is SET key val with EX or PX (ms, as milliseconds) and NX when nx: set false
// when NX found the key.
func callSet(dst []byte, call *scripting.Call, args [][]byte, val []byte, ms float64, nx bool) (set, ok bool, err error) {
	if d := call.Direct; d != nil && ms >= 1 && ms <= scripting.MaxDirectMs {
		set, err := d.Set(args, val, int64(ms), nx)
		return set, err == nil, nil
	}
	mark := len(dst)
	out, err := call.Host.Call(dst, args, 2)
	if err != nil {
		return false, false, err
	}
	switch string(out[mark:]) {
	case "+OK\r\n":
		return true, true, nil
	case "$-1\r\n":
		return false, nx, nil
	}
	return false, false, nil
}

// callIncrBy is INCR or INCRBY (by): the sum, or the command's error reply in fail.
func callIncrBy(dst []byte, call *scripting.Call, args [][]byte, by int64) (n int64, fail string, err error) {
	if d := call.Direct; d != nil {
		n, err := d.IncrBy(args, by)
		if err != nil {
			return 0, "-" + err.Error() + "\r\n", nil
		}
		return n, "", nil
	}
	return hostInteger(dst, call, args)
}

// callExpire is EXPIRE key seconds, whose reply the script drops: fail is its error reply.
func callExpire(dst []byte, call *scripting.Call, args [][]byte, seconds int64) (fail string, err error) {
	if d := call.Direct; d != nil {
		if _, err := d.Expire(args, seconds); err != nil {
			return "-" + err.Error() + "\r\n", nil
		}
		return "", nil
	}
	mark := len(dst)
	out, err := call.Host.Call(dst, args, 2)
	if err != nil || len(out) == mark || out[mark] != '-' {
		return "", err
	}
	return string(out[mark:]), nil
}
