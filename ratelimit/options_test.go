package ratelimit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/testserver"
)

// TestRefundSpeaksForTier: a REFUND in a tier answers for the tier, as the tier's takes do:
// limit is the tier's share, remaining what the tier may still take after the refund; and
// a call without the options answers for the whole limit, on the same key.
func TestRefundSpeaksForTier(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	for _, tc := range []struct {
		name string
		args []any // a limit of 10 that refills one a minute: the frozen clock refills nothing
	}{
		{"throttle", []any{"THROTTLE", "t:gcra", 9, 1, "1m"}},
		{"tokenbucket", []any{"TOKENBUCKET", "t:tb", 10, 1, "1m"}},
		{"leakybucket", []any{"LEAKYBUCKET", "t:lb", 10, 1, "1m"}},
		{"slide", []any{"SLIDE", "t:sl", 10, "1m"}},
		{"slide approx", []any{"SLIDE", "t:sc", 10, "1m", "APPROX"}},
		{"window", []any{"WINDOW", "t:fw", 10, "1m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := func(opts ...any) []any {
				d := do(t, rdb, append(append([]any{}, tc.args...), opts...)...).([]any)
				return d[:3] // limited, limit, remaining
			}
			tier := func(opts ...any) []any {
				return call(append([]any{"TIERS", "payments=1", "default=0.8"}, opts...)...)
			}
			require.Equal(t, ints(0, 8, 0), tier("COST", 8), "the default tier's 8 taken")
			require.Equal(t, ints(1, 8, 0), tier(), "and no more")
			require.Equal(t, ints(0, 8, 5), tier("REFUND", 5), "5 back: the default tier may take 5 more of its 8")
			require.Equal(t, ints(0, 10, 7), tier("REFUND", 0, "PRIORITY", "payments"), "payments see the whole limit")
			require.Equal(t, ints(0, 10, 7), call("COST", 0), "no tiers: the whole limit")
			require.Equal(t, ints(0, 10, 6), call(), "one taken")
			require.Equal(t, ints(0, 8, 6), tier("REFUND", 2), "2 back: 2 consumed, of the tier's 8")
			require.Equal(t, ints(0, 10, 8), call("REFUND", 0), "a refund without tiers answers for the whole limit")
		})
	}
}
