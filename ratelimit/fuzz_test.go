package ratelimit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// FuzzLimitOptions runs the native verbs, ALLOF and CHECK with arbitrary options after valid
// parameters (REFUND, TIERS, PRIORITY, COST, PEEK in any mix), on keys that hold units: no
// panic, and a reply that is a decision or an error.
func FuzzLimitOptions(f *testing.F) {
	ts := testserver.Start(f, realClock, func(c *server.Config) { c.AppendOnly = false })
	c := ts.Raw(f)
	c.Do(f, "POLICY.SET", "api", "THROTTLE", "9", "10", "1m", "TIERS", "payments=1", "default=0.8")
	verbs := [][]string{
		{"THROTTLE", "k1", "9", "10", "1m"}, {"TOKENBUCKET", "k2", "10", "1", "1s"}, {"LEAKYBUCKET", "k3", "10", "1", "1s"},
		{"SLIDE", "k4", "10", "1m"}, {"SLIDE", "k5", "10", "1m", "APPROX"}, {"WINDOW", "k6", "10", "1m"},
		{"CONCURRENCY.ACQUIRE", "k7", "3", "1m", "id"}, {"ALLOF", "WINDOW", "k6", "10", "1m"}, {"CHECK", "api", "m7"},
		{"WINDOW", "k8", "10", "1mo"}, {"WINDOW", "k9", "10", "1d"},
	}
	for _, seed := range []string{"REFUND 3", "COST 4", "TIERS a=1 default=0.5 PRIORITY a", "PRIORITY payments REFUND 2",
		"TIERS a=0.000001 COST 1", "REFUND 9223372036854775807 PEEK", "TIERS =1", "TIERS a=1 a=1", "PRIORITY",
		"COST 2 REFUND 1", "TIERS a=1 PRIORITY b", "REFUND 1 WINDOW k6 10 1m PRIORITY x TIERS x=0.3",
		"TZ Europe/Berlin", "TZ America/New_York COST 3", "TZ ../x", "TZ UTC TZ UTC", "REFUND 2 TZ Australia/Lord_Howe", "TZ"} {
		f.Add(uint8(len(seed)), seed)
	}
	f.Fuzz(func(t *testing.T, pick uint8, input string) {
		args := append(append([]string{}, verbs[int(pick)%len(verbs)]...), strings.Fields(input)...)
		c.SetDeadline(time.Now().Add(10 * time.Second)) // Dial's deadline is for one test, not a fuzzing run
		r := c.Do(t, args...)
		if r[0] != '*' && r[0] != '-' {
			t.Fatalf("%q: %q", args, r)
		}
		if strings.Contains(r, "internal error") {
			t.Fatalf("%q: %s", args, r)
		}
	})
}
