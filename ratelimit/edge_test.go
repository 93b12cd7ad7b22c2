package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPolicyWindow(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		limit int64
		want  time.Duration
	}{
		{[]string{"THROTTLE", "99", "100", "1m"}, 100, time.Minute},
		{[]string{"THROTTLE", "1", "1", "1m"}, 2, 2 * time.Minute},
		{[]string{"TOKENBUCKET", "10", "5", "1s"}, 10, 2 * time.Second},
		{[]string{"LEAKYBUCKET", "10", "20", "1s"}, 10, 500 * time.Millisecond},
		{[]string{"SLIDE", "10", "1m", "APPROX"}, 10, time.Minute},
		{[]string{"WINDOW", "10", "1h"}, 10, time.Hour},
		{[]string{"WINDOW", "10"}, 10, 0},
		{[]string{"WINDOW", "10", "1mo", "TZ", "Europe/Berlin"}, 10, 30 * 24 * time.Hour}, // nominal, as Envoy's headers
		{[]string{"WINDOW", "10", "1w"}, 10, 7 * 24 * time.Hour},
		{[]string{"WINDOW", "10", "1y"}, 10, 365 * 24 * time.Hour},
		{[]string{"WINDOW", "10", "1d", "TZ", "America/New_York"}, 10, 24 * time.Hour},
		{[]string{"THROTTLE", "1", "x", "1m"}, 2, 0},
		{nil, 1, 0},
	} {
		require.Equal(t, tc.want, policyWindow(tc.args, tc.limit), "%v", tc.args)
	}
}

func TestEdgeArgs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []EdgeItem
		want  []string
	}{
		{"one item", []EdgeItem{{Policy: "p", Subject: "s", Cost: 1}}, []string{"CHECK", "p", "s"}},
		{"lists joined", []EdgeItem{{Policy: "p", Subject: "s", Cost: 1}, {Policy: "q", Subject: "t", Cost: 1}},
			[]string{"CHECK", "p,q", "s,t"}},
		{"costs when one is not 1", []EdgeItem{{Policy: "p", Subject: "s", Cost: 1}, {Policy: "q", Subject: "t", Cost: 3}},
			[]string{"CHECK", "p,q", "s,t", "COST", "1,3"}},
		{"a refund's cost is negative", []EdgeItem{{Policy: "p", Subject: "s", Cost: 1, Refund: true}},
			[]string{"CHECK", "p", "s", "COST", "-1"}},
		{"tiers when one is named", []EdgeItem{{Policy: "p", Subject: "s", Cost: 2, Priority: "gold"}, {Policy: "q", Subject: "t", Cost: 1}},
			[]string{"CHECK", "p,q", "s,t", "COST", "2,1", "PRIORITY", "gold,"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range EdgeArgs(tc.items) {
				got = append(got, string(a))
			}
			require.Equal(t, tc.want, got)
		})
	}
}
