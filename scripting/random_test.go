package scripting

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLibraryErrors: the library functions Redis's Lua has its own way, each reply
// redis-server 7.0.15's for the same script: bit.tohex's widths (-2^31 is 8 upper-case
// digits, Redis's fix), math.random's intervals in C ints and its errors, its numbers after
// math.randomseed (Redis's drand48), string.char's range, and a malformed pattern.
func TestLibraryErrors(t *testing.T) {
	e := New()
	for _, tc := range []struct{ body, want string }{
		{"return bit.tohex(255, 2147483647)", "$8\r\n000000ff\r\n"},
		{"return bit.tohex(255, -8)", "$8\r\n000000FF\r\n"},
		{"return bit.tohex(255, 0)", "$0\r\n\r\n"},
		{"return bit.tohex(255, 9)", "$8\r\n000000ff\r\n"},
		{"return bit.tohex(255, -9)", "$8\r\n000000FF\r\n"},
		{"return bit.tohex(255, 2^32 - 8)", "$8\r\n000000FF\r\n"},
		{"return bit.tohex(255)", "$8\r\n000000ff\r\n"},
		{"return {pcall(math.random, 0)}", "*2\r\n$-1\r\n$42\r\nbad argument #1 to '?' (interval is empty)\r\n"},
		{"return {pcall(math.random, 2, 1)}", "*2\r\n$-1\r\n$42\r\nbad argument #2 to '?' (interval is empty)\r\n"},
		{"return {pcall(math.random, 1, 2, 3)}", "*2\r\n$-1\r\n$25\r\nwrong number of arguments\r\n"},
		{"return {pcall(math.random, -1)}", "*2\r\n$-1\r\n$42\r\nbad argument #1 to '?' (interval is empty)\r\n"},
		{"return {pcall(math.random, 0.5)}", "*2\r\n$-1\r\n$42\r\nbad argument #1 to '?' (interval is empty)\r\n"},
		{"return math.random(1)", ":1\r\n"},
		{"return math.random(5, 5)", ":5\r\n"},
		{"return {pcall(math.random, 'x')}", "*2\r\n$-1\r\n$52\r\nbad argument #1 to '?' (number expected, got string)\r\n"},
		{"return {pcall(string.char, 256)}", "*2\r\n$-1\r\n$38\r\nbad argument #1 to '?' (invalid value)\r\n"},
		{"return {pcall(string.char, -1)}", "*2\r\n$-1\r\n$38\r\nbad argument #1 to '?' (invalid value)\r\n"},
		{"return {pcall(string.char, 65, 256)}", "*2\r\n$-1\r\n$38\r\nbad argument #2 to '?' (invalid value)\r\n"},
		{"return {pcall(string.char, 'x')}", "*2\r\n$-1\r\n$52\r\nbad argument #1 to '?' (number expected, got string)\r\n"},
		{"return string.char(255.9)", "$1\r\n\xff\r\n"},
		{"return string.find('abc', '%')", "-ERR user_script:1: malformed pattern (ends with '%') script: a0781bfcab210a2854cf8adff90b040dc2c4b15a, on @user_script:1.\r\n"},
		{"return {pcall(string.find, 'abc', '%')}", "*2\r\n$-1\r\n$33\r\nmalformed pattern (ends with '%')\r\n"},
		{"return {pcall(string.match, 'abc', '%')}", "*2\r\n$-1\r\n$33\r\nmalformed pattern (ends with '%')\r\n"},
		{"return {pcall(string.gmatch('abc', '%'))}", "*2\r\n$-1\r\n$33\r\nmalformed pattern (ends with '%')\r\n"},
		{"return {pcall(string.rep, 'x', -1)}", "*2\r\n:1\r\n$0\r\n\r\n"},
		{"return {pcall(math.random, 1, 0)}", "*2\r\n$-1\r\n$42\r\nbad argument #2 to '?' (interval is empty)\r\n"},
		{"return math.random(0)", "-ERR user_script:1: bad argument #1 to 'random' (interval is empty) script: 008bcb60f86ee36d26c67b641b46674578d9cba0, on @user_script:1.\r\n"},
		{"return string.char(256)", "-ERR user_script:1: bad argument #1 to 'char' (invalid value) script: 3d9288df94e38fc1669acdaeb8b94be37e5c7bf8, on @user_script:1.\r\n"},
		{"return math.random(1,2,3)", "-ERR user_script:1: wrong number of arguments script: 5cd983b5db563301a1c7ab05351573640323e7a9, on @user_script:1.\r\n"},
		{"return bit.tohex(255, -2147483648)", "$8\r\n000000FF\r\n"},
		{"return bit.tohex(255, nil)", "-ERR user_script:1: bad argument #2 to 'tohex' (number expected, got nil) script: dedc20f748c3e47f0411d2fdada51fc3d35006dd, on @user_script:1.\r\n"},
		{"math.randomseed(7) return {math.random(100), tostring(math.random()), math.random(3,9)}", "*3\r\n:27\r\n$16\r\n0.68203523041775\r\n:4\r\n"},
		{"math.randomseed(-5) return {math.random(100), math.random(1e9)}", "*2\r\n:82\r\n:226949660\r\n"},
		{"return {pcall(math.randomseed)}", "*2\r\n$-1\r\n$54\r\nbad argument #1 to '?' (number expected, got no value)\r\n"},
		{"math.randomseed('12') return math.random(10)", ":7\r\n"},
		{"return math.random(2^31+5)", "-ERR user_script:1: bad argument #1 to 'random' (interval is empty) script: a0942f8c4cc9aee7b875b3a698836a9e2875f064, on @user_script:1.\r\n"},
		{"return {pcall(math.random, 1, 2^31)}", "*2\r\n$-1\r\n$42\r\nbad argument #2 to '?' (interval is empty)\r\n"},
		{"math.randomseed(1) return math.random(-2147483648, 2147483647)", ":-2147483648\r\n"},
		{"return string.char()", "$0\r\n\r\n"},
		{"return string.char(0, 255, '65')", "$3\r\n\x00\xffA\r\n"},
		{"return {pcall(string.char, nil)}", "*2\r\n$-1\r\n$49\r\nbad argument #1 to '?' (number expected, got nil)\r\n"},
		{"return {pcall(string.char, 2^32 + 65)}", "*2\r\n:1\r\n$1\r\nA\r\n"},
		{"return bit.tohex(255, -2147483647)", "$8\r\n000000FF\r\n"},
		{"return bit.tohex(-1, 2^31)", "$8\r\nFFFFFFFF\r\n"},
		{"return bit.tohex(1, '-3')", "$3\r\n001\r\n"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			require.Equal(t, tc.want, runScript(t, e, &fakeHost{}, 2, tc.body, nil, nil))
		})
	}
}

// TestRand48: the generator's first numbers unseeded, and after a seed, as drand48's.
func TestRand48(t *testing.T) {
	x := rand48(rand48Init)
	var got []int32
	for range 3 {
		got = append(got, x.next())
	}
	require.Equal(t, []int32{851401618, 1804928587, 758783491}, got)
	x.seed(0)
	require.Equal(t, int32(366850414), x.next())
}
