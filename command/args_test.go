package command

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWordIsEqualFold: Word tells a word of lower-case letters from any argument exactly as
// EqualFold does, for every one- and two-byte argument and for the words' own spellings.
func TestWordIsEqualFold(t *testing.T) {
	words := []string{"nx", "xx", "ex", "px", "enx", "exat", "pxat", "byint", "lbound", "ubound", "persist", "byfloat", "saturate"}
	word := func(s string) uint64 { // the number a word is written as: 'n' | 'x'<<8
		var w uint64
		for i := len(s) - 1; i >= 0; i-- {
			w = w<<8 | uint64(s[i])
		}
		return w
	}
	check := func(b []byte) {
		for _, w := range words {
			require.Equal(t, EqualFold(b, w), Word(b) == word(w), "%q against %q", b, w)
		}
	}
	for i := range 256 {
		check([]byte{byte(i)})
		for j := range 256 {
			check([]byte{byte(i), byte(j)})
		}
	}
	for _, w := range words {
		check([]byte(w))
		up := []byte(w)
		for i := range up {
			up[i] -= 'a' - 'A'
			check(up)
			check(append(append([]byte{}, up...), 'x'))
			check(up[:len(up)-1])
		}
	}
	require.Equal(t, uint64(0), Word([]byte("saturates")))
	require.Equal(t, uint64(0), Word(nil))
}

// TestParseInt: the short positive numbers' path reads what the general one does.
func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"100", 100, true}, {"-1", -1, true}, {"-0", 0, false},
		{"01", 0, false}, {"", 0, false}, {"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false},
		{"1a", 0, false}, {"1/", 0, false}, {"1:", 0, false},
		{"999999999999999999", 999999999999999999, true},
		{"9223372036854775807", 9223372036854775807, true}, {"9223372036854775808", 0, false},
		{"-9223372036854775808", -9223372036854775808, true}, {"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false}, {"99999999999999999999", 0, false},
	} {
		n, ok := ParseInt([]byte(tc.in))
		require.Equal(t, tc.ok, ok, "%q", tc.in)
		require.Equal(t, tc.want, n, "%q", tc.in)
	}
}
