package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		args string
		want *Policy
		err  string
	}{
		{"plain", "api THROTTLE 99 100 1m", &Policy{Name: "api", Args: []string{"THROTTLE", "99", "100", "1m"}}, ""},
		{"options anywhere", "api SLIDE shadow 10 SOFT 0.75 1s APPROX", &Policy{Name: "api", Args: []string{"SLIDE", "10", "1s", "APPROX"}, Soft: 0.75, Shadow: true}, ""},
		{"bad name", "a:b THROTTLE 1 1 1", nil, "policy names are"},
		{"no verb", "api", nil, "takes a name, a verb"},
		{"soft without ratio", "api THROTTLE 1 1 1 SOFT", nil, "SOFT needs a ratio"},
		{"soft out of range", "api THROTTLE 1 1 1 SOFT 0", nil, "SOFT must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy(strings.Fields(tc.args))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, p)
		})
	}
}

func TestParseEntry(t *testing.T) {
	e, err := ParseEntry(Override, strings.Fields("m1 THROTTLE 9 10 1m EX 60"), 1e9)
	require.NoError(t, err)
	require.Equal(t, Entry{Kind: Override, Subject: "m1", Expire: 61e9, Args: []string{"THROTTLE", "9", "10", "1m"}}, e)
	_, err = ParseEntry(Allow, strings.Fields("m1 THROTTLE"), 0)
	require.ErrorContains(t, err, "unknown option 'THROTTLE'")
	_, err = ParseEntry(Deny, strings.Fields("10.0.0.0/33"), 0)
	require.ErrorContains(t, err, "no CIDR network")
	_, err = ParseEntry(Deny, strings.Fields("x EX -1"), 0)
	require.ErrorContains(t, err, "EX must be")
	_, err = ParseEntry(Override, strings.Fields("x"), 0)
	require.ErrorContains(t, err, "takes a verb")
}

func TestEncodeDecode(t *testing.T) {
	tab := Table{
		"api": {Name: "api", Args: []string{"THROTTLE", "9", "10", "1m"}, Soft: 0.5, Shadow: true, Entries: []Entry{
			{Kind: Allow, Subject: "vip"},
			{Kind: Deny, Subject: "old", Expire: 5},
			{Kind: Override, Subject: "m*", Expire: 100, Args: []string{"WINDOW", "5", "1s"}},
		}},
		"file": {Name: "file", Entries: []Entry{{Kind: Deny, Subject: "10.0.0.0/8"}}},
	}
	got, err := Decode(tab.Encode(10))
	require.NoError(t, err)
	tab["api"].Entries = append(tab["api"].Entries[:1], tab["api"].Entries[2]) // lapsed at 10
	require.Equal(t, tab, got)

	b := tab.Encode(0)
	for i := range b {
		_, err := Decode(b[:i])
		require.True(t, errors.Is(err, ErrBadRecord), "truncated at %d", i)
	}
}

func TestMatch(t *testing.T) {
	l := NewLists([]Entry{
		{Kind: Override, Subject: "merchant-*", Args: []string{"a"}},
		{Kind: Override, Subject: "merchant-big*", Args: []string{"b"}},
		{Kind: Override, Subject: "merchant-bigone", Args: []string{"c"}},
		{Kind: Allow, Subject: "10.0.0.0/8"},
		{Kind: Deny, Subject: "10.6.0.0/16"},
		{Kind: Override, Subject: "2001:db8::/32", Args: []string{"d"}},
		{Kind: Allow, Subject: "gone", Expire: 10},
		{Kind: Deny, Subject: "merchant-bad"},
	})
	for _, tc := range []struct {
		subject string
		kind    EntryKind
		index   int
	}{
		{"merchant-1", Override, 0},
		{"merchant-bigtwo", Override, 1},
		{"merchant-bigone", Override, 2},
		{"merchant-bad", Deny, 7},
		{"10.1.2.3", Allow, 3},
		{"10.6.2.3", Deny, 4},
		{"::ffff:10.1.2.3", Allow, 3},
		{"2001:db8::1", Override, 5},
		{"11.0.0.1", 0, -1},
		{"gone", 0, -1},
		{"", 0, -1},
	} {
		t.Run(tc.subject, func(t *testing.T) {
			k, i := l.Match([]byte(tc.subject), 20)
			require.Equal(t, tc.kind, k)
			require.Equal(t, tc.index, i)
		})
	}
	subjects := [][]byte{[]byte("10.6.2.3"), []byte("user-42"), []byte("cafe::zz"), []byte("merchant-1")}
	require.Equal(t, float64(0), testing.AllocsPerRun(100, func() {
		for _, s := range subjects {
			l.Match(s, 20)
		}
	}))
}

func words(line string) ([]string, error) { return strings.Fields(line), nil }

func TestParseFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.conf")
	write := func(s string) { require.NoError(t, os.WriteFile(path, []byte(s), 0o644)) }
	checkArgs := func(args []string) error {
		if args[0] != "THROTTLE" {
			return errors.New("bad verb")
		}
		return nil
	}
	write("port 7000\n# c\npolicy api THROTTLE 1 2 1m SOFT 0.9\npolicy-allow api vip\npolicy-deny api 10.0.0.0/8 EX 60\npolicy-override api m THROTTLE 9 10 1m\n")
	tab, err := ParseFile(path, 1e9, words, checkArgs)
	require.NoError(t, err)
	require.Equal(t, &Policy{Name: "api", Args: []string{"THROTTLE", "1", "2", "1m"}, Soft: 0.9, Line: 3, Entries: []Entry{
		{Kind: Allow, Subject: "vip"},
		{Kind: Deny, Subject: "10.0.0.0/8", Expire: 61e9},
		{Kind: Override, Subject: "m", Args: []string{"THROTTLE", "9", "10", "1m"}},
	}}, tab["api"])

	for _, tc := range []struct{ file, err string }{
		{"policy api GET 1\n", ":1: policy: bad verb"},
		{"\npolicy-allow api x\n", ":2: policy-allow: no policy 'api' declared above"},
		{"policy api THROTTLE 1 1 1\npolicy api THROTTLE 1 1 1\n", ":2: policy: policy 'api' is declared twice (line 1 first)"},
		{"policy api THROTTLE 1 1 1\npolicy-override api x WINDOW 1 1\n", ":2: policy-override: bad verb"},
	} {
		write(tc.file)
		_, err := ParseFile(path, 0, words, checkArgs)
		require.ErrorContains(t, err, path+tc.err)
	}
}
