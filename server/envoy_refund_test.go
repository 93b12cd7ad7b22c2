package server

import (
	"testing"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// refundOf is desc(kv...) giving n hits back: hits_addend n with is_negative_hits, as Envoy
// sends a rate_limits entry whose hits_addend has is_negative_hits (apply_on_stream_done).
func refundOf(n uint64, kv ...string) *commonv3.RateLimitDescriptor {
	d := desc(kv...)
	d.HitsAddend, d.IsNegativeHits = wrapperspb.UInt64(n), true
	return d
}

// TestRLSRefund: the AI gateway's pattern through go-control-plane's client on the real gRPC
// port, for each algorithm a rate_limit may name: a request reserves tokens (hits_addend), and
// its settlement gives back what the answer did not use (is_negative_hits), as REFUND does:
// the units come back, never past full, and a refund is never over the limit.
func TestRLSRefund(t *testing.T) {
	algos := []string{"gcra", "tokenbucket", "sliding", "sliding-approx", "window"}
	files := map[string]string{}
	for _, a := range algos {
		files[a+".yaml"] = "domain: " + a + `
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1000, algorithm: ` + a + `}
  - key: org
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: ` + a + `}
`
	}
	rs := startRLS(t, files) // the clock stands still: nothing refills by itself
	for _, a := range algos {
		t.Run(a, func(t *testing.T) {
			remaining := func(r *rlsv3.RateLimitResponse) uint32 { return r.Statuses[0].LimitRemaining }
			reserve := func(n uint32) *rlsv3.RateLimitResponse { return rs.ask(t, a, n, desc("user", "u1")) }
			refund := func(n uint64) *rlsv3.RateLimitResponse { return rs.ask(t, a, 1, refundOf(n, "user", "u1")) }

			r := refund(300)
			require.Equal(t, []string{ok, ok}, codesOf(r), "a refund on an idle key")
			require.Equal(t, uint32(1000), remaining(r), "gives nothing: the key is full")

			require.Equal(t, uint32(600), remaining(reserve(400)))
			require.Equal(t, uint32(200), remaining(reserve(400)))
			r = reserve(400)
			require.Equal(t, []string{over, over}, codesOf(r), "a third reservation does not fit")

			r = refund(300) // the first answer used 100 of its 400
			require.Equal(t, []string{ok, ok}, codesOf(r))
			require.Equal(t, uint32(500), remaining(r))
			require.Equal(t, []string{ok, ok}, codesOf(reserve(400)), "the refunded tokens are there to take")
			look := func() uint32 { // a descriptor's hits_addend 0 looks
				d := desc("user", "u1")
				d.HitsAddend = wrapperspb.UInt64(0)
				return remaining(rs.ask(t, a, 1, d))
			}
			require.Equal(t, uint32(100), look())

			r = refund(1 << 40)
			require.Equal(t, []string{ok, ok}, codesOf(r), "a refund is never over the limit")
			require.Equal(t, uint32(1000), remaining(r), "never past full")
			require.Equal(t, []string{ok, ok}, codesOf(reserve(1000)))
			require.Equal(t, []string{over, over}, codesOf(reserve(1)), "a refund past full gave nothing more")

			// The request's hits_addend is a refund's when the descriptor has none.
			neg := desc("user", "u1")
			neg.IsNegativeHits = true
			r = rs.ask(t, a, 250, neg)
			require.Equal(t, []string{ok, ok}, codesOf(r))
			require.Equal(t, uint32(250), remaining(r))

			// A refund stands when another descriptor of the request is over its limit: it
			// settles a request that passed before, which the denial does not undo.
			require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, a, 10, desc("org", "o1"))))
			r = rs.ask(t, a, 1, refundOf(50, "user", "u1"), desc("org", "o1"))
			require.Equal(t, []string{over, ok, over}, codesOf(r))
			require.Equal(t, uint32(300), remaining(r))
			require.Equal(t, uint32(300), look())
		})
	}
	// Refunds count in INFO as REFUND's do: 300 + 900 + 250 + 50 a key (the first refund
	// gave nothing, the one past full the 900 that were taken).
	require.Equal(t, "7500", infoFields(t, rs.client(t, 2), "throttle")["throttle_refunded"])
}
