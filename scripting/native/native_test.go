package native

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLuaNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true}, {"10", 10, true}, {"-3", -3, true}, {"2.5", 2.5, true}, {"1e3", 1000, true},
		{"-1.5E-2", -0.015, true}, {"123456789012345", 123456789012345, true},
		{"9007199254740993", 9007199254740992, true}, // rounded to even, as strtod
		{"0.1", 0.1, true},
		// What the interpreter reads its own way, or not at all.
		{"-0", 0, false}, {"-0.0", 0, false}, {"010", 0, false}, {" 5", 0, false}, {"5 ", 0, false},
		{"+5", 0, false}, {"0x10", 0, false}, {"1e400", 0, false}, {"inf", 0, false}, {"nan", 0, false},
		{"", 0, false}, {"-", 0, false}, {"1.", 0, false}, {".5", 0, false}, {"1e", 0, false}, {"1_0", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := luaNumber([]byte(tc.in))
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

// FuzzLuaNumber: a string luaNumber reads is one strconv reads to the same value.
func FuzzLuaNumber(f *testing.F) {
	for _, s := range []string{"0", "12", "-3.25", "1e-5", "123456789012345678", "010"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := luaNumber([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err)
		require.Equal(t, want, got, s)
	})
}

func TestBulk(t *testing.T) {
	v, rest, isNil, ok := bulk([]byte("$3\r\nabc\r\n:1\r\n"))
	require.True(t, ok)
	require.False(t, isNil)
	require.Equal(t, "abc", string(v))
	require.Equal(t, ":1\r\n", string(rest))
	_, _, isNil, ok = bulk([]byte("$-1\r\n"))
	require.True(t, ok && isNil)
	for _, bad := range []string{"-ERR x\r\n", "$3\r\nab\r\n", "$\r\n", "$99999999999999\r\n", "$3\r\nabcd\r\n", "*1\r\n", ""} {
		_, _, _, ok = bulk([]byte(bad))
		require.False(t, ok, bad)
	}
}

func TestTimeNow(t *testing.T) {
	now, ok := timeNow([]byte("*2\r\n$10\r\n1483228801\r\n$6\r\n500000\r\n"), jan2017)
	require.True(t, ok)
	require.Equal(t, 1.5, now)
	_, ok = timeNow([]byte("*2\r\n$10\r\n1483228801\r\n"), jan2017)
	require.False(t, ok)
}

func TestSmallInteger(t *testing.T) {
	for _, tc := range []struct {
		in             string
		signed, window bool
	}{
		{"0", true, false}, {"1", true, true}, {"-5", true, false}, {"60", true, true},
		{"999999999", true, true}, {"1000000000", true, false}, {"999999999999999", true, false},
		{"-0", false, false}, {"01", false, false}, {"+1", false, false}, {"1.5", false, false},
		{"", false, false}, {"-", false, false}, {"1e3", false, false}, {"1000000000000000", false, false},
	} {
		require.Equal(t, tc.signed, smallInteger([]byte(tc.in), true), "points %q", tc.in)
		require.Equal(t, tc.window, smallInteger([]byte(tc.in), false), "window %q", tc.in)
	}
}
