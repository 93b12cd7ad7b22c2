package scripting

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// luaHelpers are prepended to the library tests' scripts: hex writes bytes as hex, list
// writes values as tostring does, separated by spaces.
const luaHelpers = `local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end
local function list(...) local t = {...} for i = 1, select('#', ...) do t[i] = tostring(t[i]) end return table.concat(t, ' ') end
`

// libCase is a script's expression and what Redis 7.0.15 answers: a string, or an
// error's text.
type libCase struct{ expr, want string }

// runLibCases runs "return expr" for each case and requires its reply: the string, or
// with isErr the error as Redis words it, from line 1.
func runLibCases(t *testing.T, cases []libCase, isErr bool) {
	t.Helper()
	e := New()
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			if isErr {
				body := "return " + tc.expr
				out := runScript(t, e, &fakeHost{}, 2, body, nil, nil)
				require.Equal(t, "-ERR user_script:1: "+tc.want+" script: "+sha1hex([]byte(body))+", on @user_script:1.\r\n", out)
				return
			}
			out := runScript(t, e, &fakeHost{}, 2, luaHelpers+"return "+tc.expr, nil, nil)
			require.Equal(t, bulk(tc.want), out)
		})
	}
}

func TestStructPack(t *testing.T) {
	runLibCases(t, []libCase{
		{"hex(struct.pack('>bBhHlLiI', -1, 255, -2, 65535, -3, 7, -4, 9))", "fffffffefffffffffffffffffffd0000000000000007fffffffc00000009"},
		{"hex(struct.pack('<hi3I5', -2, -3, 2^40 - 1))", "fefffdffffffffffffff"},
		{"hex(struct.pack('>i16', -2))", "0000000000000000fffffffffffffffe"}, // no sign past 8 bytes
		{"hex(struct.pack('!4bdbi', 1, 0.5, 2, 3))", "01000000000000000000e03f0200000003000000"},
		{"hex(struct.pack('>fd', 0.1, 0.1))", "3dcccccd3fb999999999999a"},
		{"hex(struct.pack('>c3sc0', 'abcdef', 'hi', 'xyz'))", "61626368690078797a"},
		{"hex(struct.pack('>LLL', 0/0, 2^64, 2^63 + 2^11))", "800000000000000000000000000000008000000000000800"},
		{"hex(struct.pack('b\\0=', 1))", "01"}, // the format ends at its NUL
		{"hex(struct.pack('b', ' 0x10 '))", "10"},
	}, false)
}

func TestStructUnpack(t *testing.T) {
	runLibCases(t, []libCase{
		{"list(struct.unpack('>bBhHlLiI', struct.pack('>bBhHlLiI', -1, 255, -2, 65535, -3, 7, -4, 9)))", "-1 255 -2 65535 -3 7 -4 9 31"},
		{"list(struct.unpack('<i3I5', struct.pack('<i3I5', -3, 2^40 - 1)))", "-3 1099511627775 9"},
		{"list(struct.unpack('>Ic0s', struct.pack('>Ic0s', 3, 'abc', 'de')))", "abc de 11"},
		{"list(struct.unpack('!4bdbi', struct.pack('!4bdbi', 1, 0.5, 2, 3)))", "1 0.5 2 3 21"},
		{"list(struct.unpack('>i9', string.rep('\\0', 8) .. '\\128'))", "-128 10"},
		{"list(struct.unpack('b', 'abc', 3))", "99 4"},
		{"list(struct.unpack('', 'a', -1))", "-1"},
		{"list(struct.unpack('c1c0', '2abcdef'))", "ab 4"},
		{"tostring(struct.size('!8bdbi3c5'))", "27"},
		{"tostring(struct.size('q'))", "0"}, // a letter size does not check
	}, false)
}

func TestStructErrors(t *testing.T) {
	runLibCases(t, []libCase{
		{"struct.pack('q', 1)", "bad argument #1 to 'pack' (invalid format option 'q')"},
		{"struct.pack('i')", "bad argument #2 to 'pack' (number expected, got nil)"}, // C's mark, not "no value"
		{"struct.pack('c5', 'abc')", "bad argument #3 to 'pack' (string too short)"}, // the next argument's number
		{"struct.size('i33')", "integral size 33 is larger than limit of 32"},
		{"struct.size('c99999999999')", "integral size overflow"},
		{"struct.size('!3')", "alignment 3 is not a power of 2"},
		{"struct.size('s')", "bad argument #1 to 'size' (option 's' has no fixed size)"},
		{"struct.unpack('>I4', 'abc')", "bad argument #2 to 'unpack' (data string too short)"},
		{"struct.unpack('i', 'abcd', 0)", "bad argument #3 to 'unpack' (offset must be 1 or greater)"},
		{"struct.unpack('s', 'abc')", "unfinished string in data"},
		{"struct.unpack('c0', '1')", "format 'c0' needs a previous size"},
		{"struct.unpack(string.rep('b', 7998), string.rep('a', 7998))", "stack overflow (too many results)"},
	}, true)
}
