package datatype_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/internal/testserver"
)

// step is one command of an INCREX case and its reply, or the error it gets.
type step struct {
	args []any
	want any    // the reply; BYFLOAT replies are strings in RESP2
	err  string // the whole error text, when it fails
}

// s and e build steps: a reply, an error.
func s(want any, args ...any) step   { return step{args: args, want: want} }
func e(err string, args ...any) step { return step{args: args, err: err} }

// ints is INCREX's reply in integer mode.
func ints(v, applied int64) []any { return []any{v, applied} }

// floats is its reply in BYFLOAT mode, in RESP2.
func floats(v, applied string) []any { return []any{v, applied} }

const (
	maxInt = "9223372036854775807"
	minInt = "-9223372036854775808"
)

// TestIncrExRedisVectors runs the cases of Redis 8.8's tests/unit/type/increx.tcl (and
// Valkey 9.2's INCREX tests for NX, XX and the bounds), each on a fresh key.
func TestIncrExRedisVectors(t *testing.T) {
	const (
		syntax = "ERR syntax error"
		wrong  = "WRONGTYPE Operation against a key holding the wrong kind of value"
	)
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"missing key, no options", []step{s(ints(1, 1), "INCREX", "k")}},
		{"default increment", []step{s("OK", "SET", "k", 10), s(ints(11, 1), "INCREX", "k")}},
		{"no options keeps the TTL", []step{s("OK", "SET", "k", 5, "EX", 100), s(ints(6, 1), "INCREX", "k"), s(int64(100), "TTL", "k")}},
		{"no options at LLONG_MAX is skipped", []step{s("OK", "SET", "k", maxInt), s(ints(9223372036854775807, 0), "INCREX", "k"), s(maxInt, "GET", "k")}},
		{"no options on a non-integer", []step{s("OK", "SET", "k", "abc"), e("ERR value is not an integer or out of range", "INCREX", "k")}},
		{"no options on a list", []step{s(int64(1), "LPUSH", "k", "a"), e(wrong, "INCREX", "k")}},
		{"BYINT both signs", []step{s("OK", "SET", "k", 100), s(ints(105, 5), "INCREX", "k", "BYINT", 5), s(ints(95, -10), "INCREX", "k", "BYINT", -10), s(ints(95, 0), "INCREX", "k", "BYINT", 0)}},
		{"BYINT saturates to UBOUND", []step{s("OK", "SET", "k", 50), s(ints(80, 30), "INCREX", "k", "BYINT", 100, "UBOUND", 80, "SATURATE"), s("80", "GET", "k")}},
		{"BYINT saturates to LBOUND", []step{s("OK", "SET", "k", 10), s(ints(0, -10), "INCREX", "k", "BYINT", -100, "LBOUND", 0, "SATURATE"), s("0", "GET", "k")}},
		{"inside both bounds", []step{s("OK", "SET", "k", 5), s(ints(6, 1), "INCREX", "k", "BYINT", 1, "LBOUND", 0, "UBOUND", 10)}},
		{"overflow saturates to LLONG_MAX", []step{s("OK", "SET", "k", "9223372036854775800"), s(ints(9223372036854775807, 7), "INCREX", "k", "BYINT", "9223372036854775800", "SATURATE"), s(maxInt, "GET", "k")}},
		{"overflow saturates to UBOUND", []step{s("OK", "SET", "k", "9223372036854775800"), s(ints(9223372036854775807, 7), "INCREX", "k", "BYINT", "9223372036854775800", "UBOUND", maxInt, "SATURATE")}},
		{"underflow saturates to LLONG_MIN", []step{s("OK", "SET", "k", "-9223372036854775800"), s(ints(-9223372036854775808, -8), "INCREX", "k", "BYINT", "-9223372036854775800", "SATURATE"), s(minInt, "GET", "k")}},
		{"underflow saturates to LBOUND", []step{s("OK", "SET", "k", "-9223372036854775800"), s(ints(-9223372036854775808, -8), "INCREX", "k", "BYINT", "-9223372036854775800", "LBOUND", minInt, "SATURATE")}},
		{"applied increment overflows", []step{s("OK", "SET", "k", "9223372036854775800"), e("ERR applied increment would overflow", "INCREX", "k", "BYINT", 1, "SATURATE", "UBOUND", minInt), s("9223372036854775800", "GET", "k")}},
		{"int encoding", []step{s(ints(1, 1), "INCREX", "k"), s("int", "OBJECT", "ENCODING", "k"), s("OK", "SET", "k", 2000000000), s(ints(2000000100, 100), "INCREX", "k", "BYINT", 100), s("int", "OBJECT", "ENCODING", "k"),
			s("OK", "SET", "k", 1), s(int64(2), "APPEND", "k", 2), s("raw", "OBJECT", "ENCODING", "k"), s(ints(13, 1), "INCREX", "k"), s("int", "OBJECT", "ENCODING", "k")}},
		{"BYFLOAT", []step{s("OK", "SET", "k", 1.5), s(floats("1.75", "0.25"), "INCREX", "k", "BYFLOAT", 0.25), s(floats("2.75", "1"), "INCREX", "k", "BYFLOAT", 1)}},
		{"BYFLOAT saturates", []step{s("OK", "SET", "k", 10), s(floats("42.5", "32.5"), "INCREX", "k", "BYFLOAT", 100, "UBOUND", 42.5, "SATURATE"), s("OK", "SET", "k", 0), s(floats("-5.5", "-5.5"), "INCREX", "k", "BYFLOAT", -100, "LBOUND", -5.5, "SATURATE")}},
		{"BYFLOAT infinities", []step{s("OK", "SET", "k", 0), e("ERR BYFLOAT increment cannot be Infinity", "INCREX", "k", "BYFLOAT", "+inf"), e("ERR BYFLOAT increment cannot be Infinity", "INCREX", "k", "BYFLOAT", "-inf"),
			s("OK", "SET", "k", "inf"), e("ERR value cannot be Infinity", "INCREX", "k", "BYFLOAT", 1), s("inf", "GET", "k"),
			s("OK", "SET", "k", "-inf"), e("ERR value cannot be Infinity", "INCREX", "k", "BYFLOAT", 0, "LBOUND", -100), s("-inf", "GET", "k")}},
		{"BYFLOAT NaN and overflowing text", []step{e("ERR Increment is not a valid float", "INCREX", "k", "BYFLOAT", "nan"), e("ERR Increment is not a valid float", "INCREX", "k", "BYFLOAT", "1e99999")}},
		{"missing key stays missing when skipped", []step{s(ints(0, 0), "INCREX", "k", "BYINT", 5, "LBOUND", 10), s(int64(0), "EXISTS", "k"), s(floats("0", "0"), "INCREX", "k", "BYFLOAT", -0.5, "UBOUND", -1.5), s(int64(0), "EXISTS", "k")}},
		{"missing key saturated is written", []step{s(ints(0, 0), "INCREX", "k", "UBOUND", 0, "SATURATE"), s("0", "GET", "k"), s("OK", "SET", "k", 1), s(int64(1), "DEL", "k"), s(ints(5, 5), "INCREX", "k", "LBOUND", 5, "SATURATE")}},
		{"BYFLOAT value already out of bounds", []step{s("OK", "SET", "k", 50.5), s(floats("50.5", "0"), "INCREX", "k", "BYFLOAT", 5.5, "UBOUND", 30), s("50.5", "GET", "k"), s(floats("30", "-20.5"), "INCREX", "k", "BYFLOAT", 5.5, "UBOUND", 30, "SATURATE"),
			s("OK", "SET", "k", -50.5), s(floats("-30", "20.5"), "INCREX", "k", "BYFLOAT", -5.5, "LBOUND", -30, "SATURATE"),
			s("OK", "SET", "k", 50), s(floats("25", "-25"), "INCREX", "k", "BYFLOAT", -25, "UBOUND", 30)}},
		{"BYINT value already out of bounds", []step{s("OK", "SET", "k", 50), s(ints(50, 0), "INCREX", "k", "BYINT", 5, "UBOUND", 30), s("50", "GET", "k"), s(ints(30, -20), "INCREX", "k", "BYINT", 5, "UBOUND", 30, "SATURATE"),
			s("OK", "SET", "k", -50), s(ints(-30, 20), "INCREX", "k", "BYINT", -5, "LBOUND", -30, "SATURATE"),
			s("OK", "SET", "k", 50), s(ints(25, -25), "INCREX", "k", "BYINT", -25, "UBOUND", 30)}},
		{"skip past UBOUND, saturate", []step{s("OK", "SET", "k", 10), s(ints(10, 0), "INCREX", "k", "BYINT", 10, "UBOUND", 15), s("10", "GET", "k"), s(ints(15, 5), "INCREX", "k", "BYINT", 10, "UBOUND", 15, "SATURATE"), s("15", "GET", "k")}},
		{"skip past LBOUND, saturate", []step{s("OK", "SET", "k", 10), s(ints(10, 0), "INCREX", "k", "BYINT", -10, "LBOUND", 5), s(ints(5, -5), "INCREX", "k", "BYINT", -10, "LBOUND", 5, "SATURATE")}},
		{"within bounds", []step{s("OK", "SET", "k", 10), s(ints(13, 3), "INCREX", "k", "BYINT", 3, "UBOUND", 20), s(ints(10, -3), "INCREX", "k", "BYINT", -3, "LBOUND", 0, "SATURATE"), s(ints(11, 1), "INCREX", "k", "BYINT", 1, "UBOUND", 20)}},
		{"both bounds", []step{s("OK", "SET", "k", 5), s(ints(7, 2), "INCREX", "k", "BYINT", 2, "LBOUND", 0, "UBOUND", 10), s(ints(7, 0), "INCREX", "k", "BYINT", 10, "LBOUND", 0, "UBOUND", 10), s(ints(7, 0), "INCREX", "k", "BYINT", -20, "LBOUND", 0, "UBOUND", 10),
			s(ints(10, 3), "INCREX", "k", "BYINT", 10, "LBOUND", 0, "UBOUND", 10, "SATURATE"), s(ints(0, -10), "INCREX", "k", "BYINT", -20, "LBOUND", 0, "UBOUND", 10, "SATURATE")}},
		{"exact bounds accepted", []step{s("OK", "SET", "k", 5), s(ints(10, 5), "INCREX", "k", "BYINT", 5, "UBOUND", 10), s(ints(0, -10), "INCREX", "k", "BYINT", -10, "LBOUND", 0)}},
		{"BYFLOAT skip and saturate", []step{s("OK", "SET", "k", "10.0"), s(floats("10", "0"), "INCREX", "k", "BYFLOAT", "10.0", "UBOUND", 15.5), s("10.0", "GET", "k"), s(floats("15.5", "5.5"), "INCREX", "k", "BYFLOAT", "10.0", "UBOUND", 15.5, "SATURATE"),
			s("OK", "SET", "k", "10.0"), s(floats("10", "0"), "INCREX", "k", "BYFLOAT", "-10.0", "LBOUND", 5.5), s(floats("5.5", "-4.5"), "INCREX", "k", "BYFLOAT", "-10.0", "LBOUND", 5.5, "SATURATE")}},
		{"BYFLOAT both bounds", []step{s("OK", "SET", "k", "5.0"), s(floats("6.5", "1.5"), "INCREX", "k", "BYFLOAT", 1.5, "LBOUND", 0, "UBOUND", 10), s(floats("6.5", "0"), "INCREX", "k", "BYFLOAT", 10, "LBOUND", 0, "UBOUND", 10), s(floats("6.5", "0"), "INCREX", "k", "BYFLOAT", -20, "LBOUND", 0, "UBOUND", 10),
			s(floats("10", "3.5"), "INCREX", "k", "BYFLOAT", 3.5, "UBOUND", "10.0"), s(floats("0", "-10"), "INCREX", "k", "BYFLOAT", "-10.0", "LBOUND", 0)}},
		{"overflow skipped by default", []step{s("OK", "SET", "k", "9223372036854775800"), s(ints(9223372036854775800, 0), "INCREX", "k", "BYINT", "9223372036854775800", "UBOUND", maxInt), s(ints(9223372036854775800, 0), "INCREX", "k", "BYINT", "9223372036854775800"),
			s("OK", "SET", "k", "-9223372036854775800"), s(ints(-9223372036854775800, 0), "INCREX", "k", "BYINT", "-9223372036854775800", "LBOUND", minInt)}},
		{"new key with bound", []step{s(ints(5, 5), "INCREX", "k", "BYINT", 5, "UBOUND", 10), s(int64(1), "DEL", "k"), s(ints(0, 0), "INCREX", "k", "BYINT", 15, "UBOUND", 10), s(int64(0), "EXISTS", "k"),
			s(floats("5.5", "5.5"), "INCREX", "k", "BYFLOAT", 5.5, "UBOUND", 10), s(int64(1), "DEL", "k"), s(floats("0", "0"), "INCREX", "k", "BYFLOAT", 15.5, "UBOUND", 10), s(int64(0), "EXISTS", "k")}},
		{"modes mix", []step{s("OK", "SET", "k", 10), s(ints(11, 1), "INCREX", "k", "BYINT", 1), s(floats("12", "1"), "INCREX", "k", "BYFLOAT", "1.0"), s(ints(13, 1), "INCREX", "k")}},
		{"skip leaves the TTL", []step{s("OK", "SET", "k", 10), s(ints(10, 0), "INCREX", "k", "BYINT", 100, "UBOUND", 15, "EX", 100), s(int64(-1), "TTL", "k"),
			s(ints(13, 3), "INCREX", "k", "BYINT", 3, "UBOUND", 20, "EX", 200), s(int64(200), "TTL", "k"),
			s("OK", "SET", "k", 10), s(ints(15, 5), "INCREX", "k", "BYINT", 100, "UBOUND", 15, "SATURATE", "EX", 300), s(int64(300), "TTL", "k")}},
		{"arity", []step{e("ERR wrong number of arguments for 'increx' command", "INCREX")}},
		{"unknown option", []step{e(syntax, "INCREX", "k", "FOO"), e(syntax, "INCREX", "k", "BYINT", 1, "FOO"), e(syntax, "INCREX", "k", "BYINT"), e(syntax, "INCREX", "k", "LBOUND"), e(syntax, "INCREX", "k", "SAT", "LBOUND", 0)}},
		{"exclusive options", []step{e(syntax, "INCREX", "k", "BYINT", 1, "BYFLOAT", 1.5), e(syntax, "INCREX", "k", "BYFLOAT", 1.5, "BYINT", 1),
			e(syntax, "INCREX", "k", "EX", 10, "PX", 5000), e(syntax, "INCREX", "k", "EX", 10, "EXAT", 9999999999), e(syntax, "INCREX", "k", "PX", 5000, "PXAT", 9999999999000),
			e(syntax, "INCREX", "k", "EX", 10, "PERSIST"), e(syntax, "INCREX", "k", "PERSIST", "EX", 10), e(syntax, "INCREX", "k", "PERSIST", "ENX"), e(syntax, "INCREX", "k", "ENX", "PERSIST"),
			e(syntax, "INCREX", "k", "NX", "XX"), e(syntax, "INCREX", "k", "XX", "NX")}},
		{"repeated options", []step{e(syntax, "INCREX", "k", "BYINT", 1, "BYINT", 2), e(syntax, "INCREX", "k", "BYFLOAT", 1, "BYFLOAT", 2), e(syntax, "INCREX", "k", "LBOUND", 0, "LBOUND", 1), e(syntax, "INCREX", "k", "UBOUND", 9, "UBOUND", 8),
			e(syntax, "INCREX", "k", "SATURATE", "SATURATE", "LBOUND", 0), e(syntax, "INCREX", "k", "ENX", "ENX", "EX", 10), e(syntax, "INCREX", "k", "PERSIST", "PERSIST"), e(syntax, "INCREX", "k", "EX", 10, "EX", 20),
			e(syntax, "INCREX", "k", "PX", 10, "PX", 20), e(syntax, "INCREX", "k", "EXAT", 9999999999, "EXAT", 9999999998), e(syntax, "INCREX", "k", "PXAT", 9999999999000, "PXAT", 9999999998000), e(syntax, "INCREX", "k", "NX", "NX")}},
		{"ENX needs an expiry", []step{e("ERR ENX flag requires an expiration", "INCREX", "k", "BYINT", 1, "ENX"), e("ERR ENX flag requires an expiration", "INCREX", "k", "ENX")}},
		{"bad numbers", []step{e("ERR Increment is not an integer or out of range", "INCREX", "k", "BYINT", "abc"), e("ERR Increment is not an integer or out of range", "INCREX", "k", "BYINT", 1.5),
			e("ERR Increment is not a valid float", "INCREX", "k", "BYFLOAT", "abc"),
			e("ERR UBOUND is not an integer or out of range", "INCREX", "k", "BYINT", 5, "UBOUND", 12.5), e("ERR UBOUND is not an integer or out of range", "INCREX", "k", "UBOUND", "inf"), e("ERR LBOUND is not an integer or out of range", "INCREX", "k", "LBOUND", "abc"),
			e("ERR UBOUND is not a valid float", "INCREX", "k", "BYFLOAT", 1, "UBOUND", "abc"), e("ERR LBOUND is not a valid float", "INCREX", "k", "LBOUND", "abc", "BYFLOAT", 1)}},
		{"LBOUND above UBOUND", []step{e("ERR LBOUND can't be greater than UBOUND", "INCREX", "k", "BYINT", 1, "LBOUND", 10, "UBOUND", 5), e("ERR LBOUND can't be greater than UBOUND", "INCREX", "k", "BYFLOAT", 0.5, "LBOUND", 10.5, "UBOUND", 1.5),
			e("ERR LBOUND can't be greater than UBOUND", "INCREX", "k", "BYFLOAT", 1, "UBOUND", "-inf"), e("ERR LBOUND can't be greater than UBOUND", "INCREX", "k", "BYFLOAT", 1, "LBOUND", "+inf")}},
		{"infinite float bounds", []step{s("OK", "SET", "k", 10), s(floats("11", "1"), "INCREX", "k", "BYFLOAT", 1, "UBOUND", "inf"), s(floats("12", "1"), "INCREX", "k", "BYFLOAT", 1, "LBOUND", "-inf"),
			s(floats("12", "0"), "INCREX", "k", "BYFLOAT", 1, "LBOUND", "-inf", "UBOUND", "-inf"), e("ERR applied increment would be Infinity", "INCREX", "k", "BYFLOAT", 1, "LBOUND", "inf", "UBOUND", "inf", "SATURATE")}},
		{"invalid expire time", []step{e("ERR invalid expire time in 'increx' command", "INCREX", "k", "EX", 0), e("ERR invalid expire time in 'increx' command", "INCREX", "k", "PX", 0), e("ERR invalid expire time in 'increx' command", "INCREX", "k", "EX", -1),
			e("ERR value is not an integer or out of range", "INCREX", "k", "EX", "soon")}},
		{"wrong type", []step{s(int64(3), "RPUSH", "k", "a", "b", "c"), e(wrong, "INCREX", "k"), e(wrong, "INCREX", "k", "BYINT", 1), e(wrong, "INCREX", "k", "BYFLOAT", 1.5), e(wrong, "INCREX", "k", "EXAT", 1)}},
		{"not a number", []step{s("OK", "SET", "k", "hello"), e("ERR value is not a valid float", "INCREX", "k", "BYFLOAT", 1.5), e("ERR value is not an integer or out of range", "INCREX", "k", "BYINT", 1),
			s("OK", "SET", "k", "inf"), e("ERR value is not an integer or out of range", "INCREX", "k")}},
		{"EX and PX", []step{s(ints(1, 1), "INCREX", "k", "BYINT", 1, "EX", 100), s(int64(100000), "PTTL", "k"), s(ints(2, 1), "INCREX", "k", "PX", 1500), s(int64(1500), "PTTL", "k")}},
		{"keeps the TTL without an expiry", []step{s("OK", "SET", "k", 5, "EX", 1000), s(ints(6, 1), "INCREX", "k"), s(int64(1000), "TTL", "k")}},
		{"PERSIST", []step{s("OK", "SET", "k", 5, "EX", 1000), s(ints(6, 1), "INCREX", "k", "PERSIST"), s(int64(-1), "TTL", "k"), s(ints(7, 1), "INCREX", "k", "PERSIST"), s(int64(-1), "TTL", "k"),
			s("OK", "SET", "k", 5, "EX", 500), s(ints(5, 0), "INCREX", "k", "BYINT", 5, "UBOUND", 5, "PERSIST"), s(int64(500), "TTL", "k")}},
		{"ENX", []step{s("OK", "SET", "k", 10), s(ints(11, 1), "INCREX", "k", "EX", 100, "ENX"), s(int64(100), "TTL", "k"),
			s("OK", "SET", "k", 10, "EX", 500), s(ints(11, 1), "INCREX", "k", "BYINT", 1, "EX", 10, "ENX"), s(int64(500), "TTL", "k"), s("11", "GET", "k"),
			s(int64(1), "DEL", "k"), s(ints(5, 5), "INCREX", "k", "BYINT", 5, "EX", 100, "ENX"), s(int64(100), "TTL", "k")}},
		{"past EXAT and PXAT delete", []step{s("OK", "SET", "k", 10), s(ints(11, 1), "INCREX", "k", "EXAT", 1), s(int64(0), "EXISTS", "k"),
			s("OK", "SET", "k", 10), s(ints(11, 1), "INCREX", "k", "PXAT", 1), s(int64(0), "EXISTS", "k"),
			s(ints(1, 1), "INCREX", "k", "EXAT", 1), s(int64(0), "EXISTS", "k")}},
		{"ENX keeps a TTL against a past EXAT", []step{s("OK", "SET", "k", 10, "EX", 500), s(ints(11, 1), "INCREX", "k", "EXAT", 1, "ENX"), s("11", "GET", "k"), s(int64(500), "TTL", "k"),
			s("OK", "SET", "k", 10), s(ints(11, 1), "INCREX", "k", "EXAT", 1, "ENX"), s(int64(0), "EXISTS", "k")}},
		{"options in any order", []step{s(ints(5, 5), "INCREX", "k", "EX", 100, "BYINT", 5), s(int64(100), "TTL", "k"), s("OK", "SET", "k", 5), s(ints(10, 5), "INCREX", "k", "LBOUND", 0, "BYINT", 100, "UBOUND", 10, "SATURATE")}},
		{"NX", []step{s(ints(1, 1), "INCREX", "k", "NX"), s(ints(1, 0), "INCREX", "k", "NX"), s("1", "GET", "k"), s(ints(1, 0), "INCREX", "k", "NX", "EX", 100), s(int64(-1), "TTL", "k")}},
		{"XX", []step{s(ints(0, 0), "INCREX", "k", "XX"), s(int64(0), "EXISTS", "k"), s(floats("0", "0"), "INCREX", "k", "XX", "BYFLOAT", 1.5), s("OK", "SET", "k", 10), s(ints(11, 1), "INCREX", "k", "XX")}},
		{"no negative zero", []step{s(floats("0.5", "0.5"), "INCREX", "k", "BYFLOAT", 0.5), s(floats("0", "-0.5"), "INCREX", "k", "BYFLOAT", -0.5), s("0", "GET", "k")}},
		{"Valkey: bound constrains the result, not the direction", []step{s("OK", "SET", "k", 10), s(ints(5, -5), "INCREX", "k", "BYINT", -5, "UBOUND", 5), s("OK", "SET", "k", 10), s(ints(5, -5), "INCREX", "k", "BYINT", 5, "UBOUND", 5, "SATURATE"),
			s("OK", "SET", "k", 10), s(ints(20, 10), "INCREX", "k", "BYINT", -5, "LBOUND", 20, "SATURATE"), s("OK", "SET", "k", 10), s(ints(100, 90), "INCREX", "k", "BYINT", maxInt, "UBOUND", 100, "SATURATE")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := testserver.Start(t)
			rdb := ts.Client(t, 2)
			for _, st := range tc.steps {
				if st.err != "" {
					require.Equal(t, st.err, doErr(t, rdb, st.args...), "%v", st.args)
				} else {
					require.Equal(t, st.want, do(t, rdb, st.args...), "%v", st.args)
				}
			}
		})
	}
}

// TestIncrExReplies: integers in both protocols; in BYFLOAT mode bulk strings in RESP2 and
// doubles in RESP3, on the wire as Valkey's tests read them.
func TestIncrExReplies(t *testing.T) {
	ts := testserver.Start(t)
	r2, r3 := ts.Client(t, 2), ts.Client(t, 3)
	require.Equal(t, []any{int64(5), int64(5)}, do(t, r3, "INCREX", "i", "BYINT", 5))
	require.Equal(t, []any{2.5, 2.5}, do(t, r3, "INCREX", "f", "BYFLOAT", 2.5))
	require.Equal(t, []any{"5", "2.5"}, do(t, r2, "INCREX", "f", "BYFLOAT", 2.5))

	raw := ts.Raw(t)
	require.Equal(t, "*2\r\n:6\r\n:1\r\n", raw.Do(t, "INCREX", "i"))
	require.Equal(t, "*2\r\n$3\r\n7.5\r\n$3\r\n2.5\r\n", raw.Do(t, "INCREX", "f", "BYFLOAT", "2.5"))
	require.Equal(t, "*2\r\n$1\r\n0\r\n$1\r\n0\r\n", raw.Do(t, "INCREX", "nope", "XX", "BYFLOAT", "1.5"))
	raw.Do(t, "HELLO", "3")
	require.Equal(t, "*2\r\n,10\r\n,2.5\r\n", raw.Do(t, "INCREX", "f", "BYFLOAT", "2.5"))
	require.Equal(t, "*2\r\n,0\r\n,0\r\n", raw.Do(t, "INCREX", "nope", "XX", "BYFLOAT", "1.5"))
	require.Equal(t, "*2\r\n:0\r\n:0\r\n", raw.Do(t, "INCREX", "nope", "XX"))
}

// TestIncrExSurface: COMMAND INFO and DOCS, the ACL categories, MULTI, WATCH and scripts.
func TestIncrExSurface(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	a, b := ts.Client(t, 2), ts.Client(t, 2)

	info := do(t, a, "COMMAND", "INFO", "increx").([]any)[0].([]any)
	require.Equal(t, []any{"increx", int64(-2), []any{"write", "denyoom", "fast"}, int64(1), int64(1), int64(1)}, info[:6])
	require.ElementsMatch(t, []any{"@write", "@string", "@fast"}, info[6])
	specs := info[8].([]any)
	require.Len(t, specs, 1)
	require.Equal(t, "RW", specs[0].([]any)[1].([]any)[0])
	require.Equal(t, []any{"k"}, do(t, a, "COMMAND", "GETKEYS", "INCREX", "k", "BYINT", 1, "EX", 10))
	docs := toMap(do(t, a, "COMMAND", "DOCS", "increx").([]any)[1])
	require.Equal(t, "8.8.0", docs["since"])
	require.Equal(t, "string", docs["group"])

	require.Equal(t, "OK", do(t, a, "ACL", "SETUSER", "nostr", "on", "nopass", "+@all", "-@string", "~*"))
	require.Equal(t, "OK", do(t, a, "ACL", "SETUSER", "fast", "on", "nopass", "-@all", "+@fast", "~*"))
	c := ts.Client(t, 2)
	require.Equal(t, "OK", do(t, c, "AUTH", "nostr", "x"))
	require.Contains(t, doErr(t, c, "INCREX", "k"), "NOPERM")
	require.Equal(t, "OK", do(t, c, "AUTH", "fast", "x"))
	require.Equal(t, []any{int64(1), int64(1)}, do(t, c, "INCREX", "k"))

	cmds, err := a.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "INCREX", "m", "BYINT", 3, "EX", 60)
		p.Do(ctx, "INCREX", "m", "BYINT", 3, "UBOUND", 5, "SATURATE")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []any{int64(3), int64(3)}, cmds[0].(*redis.Cmd).Val())
	require.Equal(t, []any{int64(5), int64(2)}, cmds[1].(*redis.Cmd).Val())
	require.Equal(t, int64(60), do(t, a, "TTL", "m"))

	for _, tc := range []struct {
		name    string
		args    []any
		changed bool
	}{
		{"skipped past UBOUND", []any{"INCREX", "w", "UBOUND", 5}, false},
		{"skipped by NX", []any{"INCREX", "w", "NX"}, false},
		{"applied", []any{"INCREX", "w", "UBOUND", 6}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, "OK", do(t, a, "SET", "w", 5))
			err := a.Watch(ctx, func(tx *redis.Tx) error {
				require.NoError(t, b.Do(ctx, tc.args...).Err())
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() })
				return err
			}, "w")
			if tc.changed {
				require.ErrorIs(t, err, redis.TxFailedErr)
			} else {
				require.NoError(t, err)
			}
		})
	}

	require.Equal(t, []any{int64(8), int64(8)}, do(t, a, "EVAL", "return redis.call('INCREX', KEYS[1], 'BYINT', 10, 'UBOUND', 8, 'SATURATE')", "1", "s"))
	require.Equal(t, []any{"8.5", "0.5"}, do(t, a, "EVAL", "return redis.call('INCREX', KEYS[1], 'BYFLOAT', '0.5')", "1", "s"))
	require.Contains(t, doErr(t, a, "EVAL", "return redis.call('INCREX', KEYS[1], 'ENX')", "1", "s"), "ENX flag requires an expiration")
}
