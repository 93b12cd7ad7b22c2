package scripting

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStringArithmetic: arithmetic on strings, library numbers and numeric for bounds read
// as Lua 5.1 reads them; each reply is redis-server 7's for the same script.
func TestStringArithmetic(t *testing.T) {
	e := New()
	h := &fakeHost{reply: "$3\r\n010\r\n"}
	for _, tc := range []struct{ body, want string }{
		{`return tostring("010"+0)`, "$2\r\n10\r\n"},
		{`return tostring(redis.call('GET','k')+1)`, "$2\r\n11\r\n"},
		{`return tostring(" 0x1A "*1)`, "$2\r\n26\r\n"},
		{`return tostring("1e3"/10)`, "$3\r\n100\r\n"},
		{`return tostring("-0"*1)`, "$2\r\n-0\r\n"},
		{`return tostring(-"-0")`, "$1\r\n0\r\n"},
		{`return tostring("inf"+0)`, "$3\r\ninf\r\n"},
		{`return tostring("7" % "-3")`, "$2\r\n-2\r\n"},
		{`return tostring("10\0" + 1)`, "$2\r\n11\r\n"},
		{`return tostring(("nan") ^ 1)`, "$3\r\nnan\r\n"},
		{`return tostring("-8" ^ 0.5)`, "$4\r\n-nan\r\n"},
		{`return bit.band("nan(123)", 255)`, ":123\r\n"},
		{`return tostring("1_0"+0)`, "-ERR user_script:1: attempt to perform arithmetic on a string value script: 09827d2e5871910cdf0d26891bd169bd96a3edf5, on @user_script:1.\r\n"},
		{`local x = "1_0" return x+1`, "-ERR user_script:1: attempt to perform arithmetic on local 'x' (a string value) script: aea829e8716761b6ccbc1c13af95bddba87e2774, on @user_script:1.\r\n"},
		{`local s="abc" return -s`, "-ERR user_script:1: attempt to perform arithmetic on local 's' (a string value) script: 0a5588900a93594c9b86ef49bae4812a5d6053e5, on @user_script:1.\r\n"},
		{`local t = {} return t.x + "1"`, "-ERR user_script:1: attempt to perform arithmetic on field 'x' (a nil value) script: 68c64f50de6170ab3a9f1fb4b3317bdc63a53e4d, on @user_script:1.\r\n"},
		{`local y = "5 x" return 1 - y`, "-ERR user_script:1: attempt to perform arithmetic on local 'y' (a string value) script: ca5e6079f24e3da347308ced5d95ba99efa81925, on @user_script:1.\r\n"},
		{`local t = setmetatable({}, {__add = function(a, b) return 42 end}) return "x" + t`, ":42\r\n"},
		{`return string.sub("abcdef", "2", " 3 ")`, "$2\r\nbc\r\n"},
		{`return string.rep("ab", "0x3")`, "$6\r\nababab\r\n"},
		{`return string.rep("ab", 2^32 + 1)`, "$2\r\nab\r\n"},
		{`return math.floor("1e3")`, ":1000\r\n"},
		{`return select("2", "a", "b", "c")`, "$1\r\nb\r\n"},
		{`return {string.find('hello', 'l', 0/0)}`, "*2\r\n:3\r\n:3\r\n"},
		{`return table.concat({1, 0.1 + 0.2, "x"}, ",", "1")`, "$7\r\n1,0.3,x\r\n"},
		{`return string.sub("abc", "1_0")`, "-ERR user_script:1: bad argument #2 to 'sub' (number expected, got string) script: 187e9a0d7a4f9abcdb6b47403da0ecd5e8ce6f4f, on @user_script:1.\r\n"},
		{`return {pcall(unpack, {1, 2, 3}, -7995)}`, "*2\r\n$-1\r\n$26\r\ntoo many results to unpack\r\n"},
		{`local n = 0 for i = "1", " 3 " do n = n + i end return n`, ":6\r\n"},
		{`for i = 1, "x" do end`, "-ERR user_script:1: 'for' limit must be a number script: 91a06528cbcb74bdd26743522b8c0b3f74b87c05, on @user_script:1.\r\n"},
		{`return tostring(math.huge)`, "$3\r\ninf\r\n"},
		{`return tostring(math.log(-1))`, "$4\r\n-nan\r\n"},
		{`return tostring(math.acos(2))`, "$3\r\nnan\r\n"},
		{`return tostring(math.log(0/0))`, "$4\r\n-nan\r\n"},
		{`return tostring(math.abs(0/0))`, "$3\r\nnan\r\n"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			require.Equal(t, tc.want, runScript(t, e, h, 2, tc.body, nil, nil))
		})
	}
}

// BenchmarkArithmetic: arithmetic on numbers never reaches the strings' metamethods; on a
// string read from Redis it goes through them.
func BenchmarkArithmetic(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"numbers", "local n = tonumber(ARGV[1]) local s = 0 for i = 1, 100 do s = s + n * 2 end return s"},
		{"strings", "local n = ARGV[1] local s = 0 for i = 1, 100 do s = s + n * 2 end return s"},
		{"reply", "return redis.call('GET', KEYS[1]) + 1"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := New()
			h := &fakeHost{reply: "$3\r\n010\r\n"}
			s, err := e.Load([]byte(bc.body))
			require.NoError(b, err)
			call := &Call{Host: h, Proto: 2, Keys: [][]byte{[]byte("k")}, Args: [][]byte{[]byte("12")}}
			b.ReportAllocs()
			for b.Loop() {
				h.calls = h.calls[:0]
				if _, err := e.Run(nil, s, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
