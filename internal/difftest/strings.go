package difftest

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Strings draws the string and key commands, over Keys and now and then a binary
// key. Every expiry it sets for good is an absolute time far ahead (2100), so that
// PEXPIRETIME compares exactly; relative ones come with bad or non-positive values, which
// are errors or delete at once (datatype's strings_test.go tests them against a clock). It mixes
// in the collection types' writes on the same keys (WRONGTYPE).
func Strings(r *rand.Rand) Cmd {
	k, k2 := Key(r), Key(r)
	if r.IntN(30) == 0 {
		k = "b\x00\r\n\xff" // binary safe
	}
	switch r.IntN(52) {
	case 47, 48, 49, 50, 51:
		return diffKeyCmd(r, k)
	case 44:
		return cmd("GETSET", k, diffStrValue(r))
	case 45:
		return cmd("MSETNX", k, diffStrValue(r), k2, diffStrValue(r))
	case 46:
		return cmd(Pick(r, "MSETNX", "GETSET"), k) // arity and wrong counts
	case 0, 1:
		return cmd(append([]string{"SET", k, diffStrValue(r)}, diffSetOptions(r)...)...)
	case 2:
		return cmd("GET", k)
	case 3:
		return cmd("INCRBY", k, Int(r, -5, 5))
	case 4:
		return cmd("DEL", k, k2)
	case 5:
		return cmd("EXISTS", k, k2)
	case 6:
		return cmd("TYPE", k)
	case 7:
		return cmd("MSET", k, diffStrValue(r), k2, diffStrValue(r))
	case 8:
		return cmd("MGET", k, k2)
	case 9:
		return cmd("SETNX", k, diffStrValue(r))
	case 10:
		return cmd(Pick(r, "INCR", "DECR"), k)
	case 11:
		return cmd("PERSIST", k)
	case 12:
		return cmd(Pick(r, "EXPIRE", "PEXPIRE"), k, Pick(r, "0", "-1", "-100", "abc", "9223372036854775807", "-9223372036854775808"))
	case 13:
		return cmd(Pick(r, "EXPIREAT", "PEXPIREAT"), k, diffAbsTime(r, false))
	case 14:
		return cmd(Pick(r, "PEXPIRETIME", "EXPIRETIME"), k)
	case 15, 16, 17:
		return cmd("INCRBYFLOAT", k, diffLongDouble(r))
	case 18, 19:
		return cmd(append([]string{"GETEX", k}, diffGetExOptions(r)...)...)
	case 20:
		return cmd("GETDEL", k)
	case 21, 22:
		return cmd("APPEND", k, diffStrValue(r))
	case 23:
		return cmd("STRLEN", k)
	case 24, 25:
		return diffSetRange(r, k)
	case 26, 27:
		return cmd(Pick(r, "GETRANGE", "SUBSTR"), k, Int(r, -25, 25), Int(r, -25, 25))
	case 28, 29:
		return cmd("OBJECT", Pick(r, "ENCODING", "encoding", "REFCOUNT"), k)
	case 30:
		c := cmd("OBJECT", Pick(r, "IDLETIME", "FREQ", "HELP", "help", "nosuch", "ENCODING"), k)
		switch r.IntN(4) {
		case 0:
			c.Args = c.Args[:2] // HELP right, the others short of a key
		case 1:
			c.Args = append(c.Args, k2) // HELP and the others with one too many
		case 2:
			c.Args = c.Args[:1]
		}
		// Seconds since the last access: each server's own, which may differ by one at the
		// edge of a second.
		c.Skip = len(c.Args) == 3 && c.Args[1] == "IDLETIME"
		return c
	case 31, 32:
		return cmd(Pick(r, "RENAME", "RENAMENX"), k, k2)
	case 33, 34:
		return cmd(append([]string{"COPY", k, k2}, diffCopyOptions(r)...)...)
	case 35:
		return cmd("TOUCH", k, k2, Key(r))
	case 36:
		return cmd("DBSIZE")
	case 37:
		return Cmd{Args: []string{"KEYS", Pick(r, "*", "k*", "{k}*", "*[0-3]")}, Unordered: true}
	case 38:
		return diffOtherType(r, k)
	case 39:
		return cmd("SCAN", "0", "COUNT", "1000", "TYPE", Pick(r, "string", "hash", "list", "zset"), "MATCH", k)
	case 40:
		return cmd("SETEX", k, Pick(r, "0", "-1", "x"), diffStrValue(r))
	case 41:
		return cmd("GETRANGE", k, Pick(r, "0", "-1", "-9223372036854775808", "9223372036854775807"), Pick(r, "0", "-1", "-9223372036854775808", "9223372036854775807"))
	}
	return cmd("OBJECT", "ENCODING", k)
}

// diffStrValue returns a string value: diffValue's, or numbers in the forms INCR,
// INCRBYFLOAT and OBJECT ENCODING treat apart (a small integer is shared, a long one is not,
// 20 and 21 digits, 44 and 45 bytes).
func diffStrValue(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		return Pick(r, "0", "9999", "10000", "-1", "01", "-0", "12345678901234567890", "9223372036854775807",
			"-9223372036854775808", "9223372036854775808", "1.5", "10.5", " 1", "1e3", "0x10", "inf", "nan")
	case 1:
		return strings.Repeat("y", 43+r.IntN(3))
	case 2:
		return strconv.Itoa(r.IntN(20000) - 5000)
	}
	return Value(r)
}

// diffAbsTime returns an absolute expiry: far ahead (2100), in the past, or a bad one;
// in milliseconds when ms.
func diffAbsTime(r *rand.Rand, ms bool) string {
	switch r.IntN(10) {
	case 0:
		return Pick(r, "1", "1000", "1700000000", "0", "-1")
	case 1:
		return Pick(r, "abc", "", "1.5", "9223372036854775808")
	}
	return FutureTime(r, ms)
}

// FutureTime is diffAbsTime without times in the past, for SET: Redis keeps a key set
// to expire in the past until expiry finds it, and DBSIZE counts it meanwhile.
func FutureTime(r *rand.Rand, ms bool) string {
	switch r.IntN(10) {
	case 0:
		return Pick(r, "0", "-1")
	case 1:
		return Pick(r, "abc", "", "1.5", "9223372036854775808")
	}
	sec := 4102444800 + r.IntN(1000)
	if ms {
		return strconv.Itoa(sec*1000 + r.IntN(1000))
	}
	return strconv.Itoa(sec)
}

// diffSetOptions returns SET's options, valid or not.
func diffSetOptions(r *rand.Rand) []string {
	var opts []string
	for range r.IntN(4) {
		switch r.IntN(9) {
		case 0:
			opts = append(opts, "NX")
		case 1:
			opts = append(opts, "XX")
		case 2:
			opts = append(opts, Pick(r, "GET", "get"))
		case 3:
			opts = append(opts, "KEEPTTL")
		case 4:
			opts = append(opts, "EXAT", FutureTime(r, false))
		case 5:
			opts = append(opts, "PXAT", FutureTime(r, true))
		case 6:
			opts = append(opts, Pick(r, "EX", "PX"), Pick(r, "0", "-1", "x", "9223372036854775807"))
		case 7:
			opts = append(opts, Pick(r, "EX", "PERSIST", "bogus"))
		}
	}
	return opts
}

// diffGetExOptions returns GETEX's options, valid or not.
func diffGetExOptions(r *rand.Rand) []string {
	var opts []string
	for range r.IntN(3) {
		switch r.IntN(7) {
		case 0:
			opts = append(opts, Pick(r, "EXAT", "exat"), diffAbsTime(r, false))
		case 1:
			opts = append(opts, "PXAT", diffAbsTime(r, true))
		case 2, 3:
			opts = append(opts, Pick(r, "PERSIST", "persist"))
		case 4:
			opts = append(opts, Pick(r, "EX", "PX"), Pick(r, "0", "-1", "x", "9223372036854775807", "-9223372036854775808"))
		case 5:
			opts = append(opts, Pick(r, "EX", "PXAT", "KEEPTTL", "bogus"))
		case 6:
			opts = append(opts, "EXAT", "9223372036854775807")
		}
	}
	return opts
}

// diffLongDouble returns an INCRBYFLOAT increment: in every form strtold reads, and not.
func diffLongDouble(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		return Pick(r, "inf", "-inf", "Infinity", "nan", "abc", "", " 1", "1 ", "1e", "0x", "0x1p-3", "0X1.8P1",
			"1e4933", "1e-4951", "1e4000", "-1e4000", "5e-18", "1e-17", "0.000003814697265625", "+.5", "5.", "-0",
			"18446744073709551617", "0x1p-16445")
	case 1:
		return strconv.FormatFloat(r.NormFloat64()*1e6, 'g', -1, 64)
	case 2:
		return strconv.FormatFloat(r.Float64()*math.Pow(10, float64(r.IntN(60)-30)), 'e', r.IntN(20), 64)
	case 3:
		return diffStrValue(r)
	}
	return Float(r)
}

// diffSetRange returns a SETRANGE, with offsets that pass proto-max-bulk-len only when
// nothing would be written (a real write there takes 512 MB on both servers).
func diffSetRange(r *rand.Rand, k string) Cmd {
	val := diffStrValue(r)
	off := strconv.Itoa(r.IntN(70))
	switch r.IntN(8) {
	case 0:
		off = Pick(r, "-1", "abc", "", "9223372036854775808", "-9223372036854775808")
	case 1:
		off = Pick(r, "536870912", "536870911", "9223372036854775807")
		if off == "536870911" && len(val) < 2 {
			val = "xy"
		}
	case 2:
		val = ""
	}
	return cmd("SETRANGE", k, off, val)
}

// diffCopyOptions returns COPY's options; of databases only 0 and bad ones, as this server
// has no other.
func diffCopyOptions(r *rand.Rand) []string {
	var opts []string
	for range r.IntN(3) {
		switch r.IntN(5) {
		case 0, 1:
			opts = append(opts, Pick(r, "REPLACE", "replace"))
		case 2:
			opts = append(opts, "DB", "0")
		case 3:
			opts = append(opts, "DB", Pick(r, "x", "-1", "16", "2147483648", "99999999999999999999", ""))
		case 4:
			opts = append(opts, Pick(r, "DB", "bogus"))
		}
	}
	return opts
}

// diffOtherType returns a write of a collection type on k.
func diffOtherType(r *rand.Rand, k string) Cmd {
	cands := []Cmd{cmd("HSET", k, "f", Value(r)), cmd("RPUSH", k, Value(r)), cmd("ZADD", k, "1", Value(r)), cmd("SADD", k, Value(r))}
	return cands[r.IntN(len(cands))]
}
