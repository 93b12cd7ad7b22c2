package glob

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "heeeello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[b-a]llo", "hallo", true},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{"__sentinel__:*", "__sentinel__:hello", true},
		{"__throttled__:denied*", "__throttled__:denied:throttle", true},
		{"__throttled__:denied*", "__throttled__:allowed", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"", "", true},
		{"", "a", false},
	}
	for _, tc := range cases {
		t.Run(tc.pattern+" "+tc.s, func(t *testing.T) {
			require.Equal(t, tc.want, Match([]byte(tc.pattern), []byte(tc.s)))
		})
	}
}

// A pattern of many stars against a long subject that fails at the end stays linear.
func TestMatchNoBlowUp(t *testing.T) {
	p := []byte("a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b")
	s := make([]byte, 10000)
	for i := range s {
		s[i] = 'a'
	}
	require.False(t, Match(p, s))
}
