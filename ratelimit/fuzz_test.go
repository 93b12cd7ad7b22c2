package ratelimit_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// FuzzLimitOptions runs the native verbs, ALLOF and CHECK with arbitrary options after valid
// parameters (REFUND, TIERS, PRIORITY, BLOCK, COST, PEEK in any mix), on keys that hold units,
// some in their penalty box: no panic, and a reply that is a decision or an error. A denied
// decision says when to retry (a positive retry_after, or -1), and one of a key in its
// penalty box says the block's rest (blocks here are at most a day: below 86400001 ms).
// The seeds' BLOCK 1d... puts keys in their penalty box; the clock is real, so they stay.
func FuzzLimitOptions(f *testing.F) {
	ts := testserver.Start(f, realClock, func(c *server.Config) { c.AppendOnly = false })
	c := ts.Raw(f)
	c.Do(f, "POLICY.SET", "api", "THROTTLE", "9", "10", "1m", "TIERS", "payments=1", "default=0.8")
	c.Do(f, "POLICY.SET", "box", "WINDOW", "2", "1m", "BLOCK", "1h")
	verbs := [][]string{
		{"THROTTLE", "k1", "9", "10", "1m"}, {"TOKENBUCKET", "k2", "10", "1", "1s"}, {"LEAKYBUCKET", "k3", "10", "1", "1s"},
		{"SLIDE", "k4", "10", "1m"}, {"SLIDE", "k5", "10", "1m", "APPROX"}, {"WINDOW", "k6", "10", "1m"},
		{"CONCURRENCY.ACQUIRE", "k7", "3", "1m", "id"}, {"ALLOF", "WINDOW", "k6", "10", "1m"}, {"CHECK", "api", "m7"},
		{"WINDOW", "k8", "10", "1mo"}, {"WINDOW", "k9", "10", "1d"},
		{"CHECK", "box", "m8"}, {"ALLOF", "SLIDE", "k4", "10", "1m", "BLOCK", "1s", "THROTTLE", "k1", "9", "10", "1m"},
	}
	for _, seed := range []string{"REFUND 3", "COST 4", "TIERS a=1 default=0.5 PRIORITY a", "PRIORITY payments REFUND 2",
		"TIERS a=0.000001 COST 1", "REFUND 9223372036854775807 PEEK", "TIERS =1", "TIERS a=1 a=1", "PRIORITY",
		"COST 2 REFUND 1", "TIERS a=1 PRIORITY b", "REFUND 1 WINDOW k6 10 1m PRIORITY x TIERS x=0.3",
		"TZ Europe/Berlin", "TZ America/New_York COST 3", "TZ ../x", "TZ UTC TZ UTC", "REFUND 2 TZ Australia/Lord_Howe", "TZ",
		"COST 20 BLOCK 1d", "COST 10 BLOCK 250ms", "BLOCK", "BLOCK 0", "BLOCK 1.5", "BLOCK 1m BLOCK 1m", "BLOCK 9999999d",
		"BLOCK 1d REFUND 3", "BLOCK 1d PEEK", "BLOCK 1h TIERS a=1 default=0.5 COST 9", "BLOCK WINDOW k6 10 1m", "BLOCK 1d COST 0"} {
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
		if r[0] == '*' {
			checkDecisions(t, args, r)
		}
	})
}

// checkDecisions checks each decision in a reply's bytes (an array of integers: a native
// verb's, CHECK's, each of ALLOF's): limited is 0 or 1, 0 <= remaining <= limit, a denial
// says when to retry (> 0, or -1 for never), and no wait is longer than the longest window
// the fuzz target sets (a calendar year: WINDOW's 1mo and 1y seeds; a day's limits and blocks).
// maxWaitMs bounds the longest calendar window: a leap year, and a day for a zone whose
// new year is an hour off midnight.
const maxWaitMs = 367 * 86_400_000

func checkDecisions(t *testing.T, args []string, reply string) {
	lines := strings.Split(reply, "\r\n")
	for i := 0; i+5 < len(lines); i++ {
		if lines[i] == "" || lines[i][0] != '*' && lines[i][0] != '%' || lines[i+1] == "" || lines[i+1][0] != ':' {
			continue
		}
		var d [5]int64
		for j := range d {
			n, err := strconv.ParseInt(strings.TrimPrefix(lines[i+1+j], ":"), 10, 64)
			if err != nil {
				t.Fatalf("%q: %q", args, reply)
			}
			d[j] = n
		}
		limited, limit, remaining, retry, reset := d[0], d[1], d[2], d[3], d[4]
		switch {
		case limited != 0 && limited != 1, remaining < 0, remaining > limit,
			limited == 1 && retry == 0, retry < -1, limited == 0 && retry != -1,
			retry > maxWaitMs, reset < 0, reset > maxWaitMs:
			t.Fatalf("%q: a bad decision %v in %q", args, d, reply)
		}
	}
}
