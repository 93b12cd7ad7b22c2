package gcra

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireError checks that err is an *Error fit for a RESP error line.
func requireError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	require.True(t, errors.As(err, &e), "%T %v", err, err)
	require.NotEmpty(t, e.Text)
	require.False(t, bytes.ContainsAny([]byte(e.Text), "\r\n"), "%q", e.Text)
}

// requireSane checks the invariants every reply keeps.
func requireSane(t *testing.T, now int64, r Result) {
	t.Helper()
	require.GreaterOrEqual(t, r.Remaining, int64(0))
	require.LessOrEqual(t, r.Remaining, r.Limit)
	require.GreaterOrEqual(t, r.ResetAfter, int64(0))
	if r.Limited {
		require.False(t, r.Store)
		require.True(t, r.RetryAfter >= 0 || r.RetryAfter == -1, "retry %d", r.RetryAfter)
	} else {
		require.Equal(t, int64(-1), r.RetryAfter)
	}
	if r.Store {
		require.Positive(t, r.TTL)
		require.GreaterOrEqual(t, now+r.TTL, r.TAT, "the key must outlive its TAT")
	}
}

func fuzzArgs(n uint8, parts ...[]byte) [][]byte { return parts[:int(n)%(len(parts)+1)] }

func FuzzParseCell(f *testing.F) {
	f.Add(uint8(3), []byte("15"), []byte("30"), []byte("60"), []byte("1"), []byte(""))
	f.Add(uint8(4), []byte("4"), []byte("1"), []byte("1"), []byte("6"), []byte(""))
	f.Add(uint8(4), []byte("-1"), []byte("0"), []byte("+9223372036854775807"), []byte("x\r\n"), []byte(""))
	f.Add(uint8(3), []byte("9223372036"), []byte("1"), []byte("9223372036"), []byte(""), []byte(""))
	f.Fuzz(func(t *testing.T, n uint8, a, b, c, d, e []byte) {
		p, err := ParseCell(fuzzArgs(n, a, b, c, d, e))
		if err != nil {
			requireError(t, err)
			return
		}
		for _, exists := range []bool{false, true} {
			r, err := Cell(base, base+7e9, exists, p)
			if err != nil {
				requireError(t, err)
				continue
			}
			requireSane(t, base, r)
			require.Equal(t, p.MaxBurst+1, r.Limit)
		}
	})
}

func FuzzParseGCRA(f *testing.F) {
	f.Add(uint8(3), []byte("5"), []byte("10"), []byte("60"), []byte(""), []byte(""))
	f.Add(uint8(5), []byte("0"), []byte("3"), []byte("0.000005"), []byte("tokens"), []byte("2"))
	f.Add(uint8(4), []byte("1"), []byte("1"), []byte("1e400"), []byte("TOKENS"), []byte(""))
	f.Add(uint8(5), []byte("9223372036854775807"), []byte("1"), []byte("inf"), []byte("t\x00"), []byte("-1"))
	f.Fuzz(func(t *testing.T, n uint8, a, b, c, d, e []byte) {
		p, err := ParseGCRA(fuzzArgs(n, a, b, c, d, e))
		if err != nil {
			requireError(t, err)
			return
		}
		require.True(t, p.Period > 0 && p.Period < 1e12)
		require.Positive(t, p.Quantity)
		for _, exists := range []bool{false, true} {
			r, err := Redis(base, base+7e9, exists, p)
			if err != nil {
				requireError(t, err)
				continue
			}
			requireSane(t, base, r)
		}
	})
}

// FuzzThrottle drives one key through a run of calls whose clock moves by
// random steps, forwards and backwards, with random costs. Besides the reply
// invariants it checks that the reply is honest (remaining units pass and
// one more does not, retrying after retry_after passes) and that over the
// run no more than limit + count*(latest now - earliest now)/period units
// are admitted.
func FuzzThrottle(f *testing.F) {
	f.Add(int64(4), int64(1), int64(1e9), []byte{0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1})
	f.Add(int64(0), int64(3), int64(1e9), []byte{0, 0, 1, 255, 255, 1, 0, 16, 2, 128, 0, 1})
	f.Add(int64(100), int64(7), int64(1234567), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add(int64(-5), int64(0), int64(-1), []byte{0, 0, 0})
	f.Fuzz(fuzzThrottleBody)
}

func fuzzThrottleBody(t *testing.T, maxBurst, count, period int64, ops []byte) {
	// Raw parameters: an error or a sane reply, never a panic.
	if r, err := Throttle(base, base+period, true, Quota{maxBurst, count, period}, count); err != nil {
		requireError(t, err)
	} else {
		requireSane(t, base, r)
	}

	// A valid limit: burst < 2^16, count <= 10^6, period in
	// [count, count + 10^12) ns.
	q := Quota{MaxBurst: abs(maxBurst) % (1 << 16), Count: 1 + abs(count)%1_000_000}
	q.Period = q.Count + abs(period)%1e12
	limit := q.MaxBurst + 1
	interval := ceilDiv(q.Period, q.Count)
	// Steps of up to ±128 intervals; runs of at most 1000 calls keep each
	// input fast (the fuzzer's byte slices can grow large) and the clock
	// within 1.3e17 ns of base.
	unit := max(interval/256, 1)
	ops = ops[:min(len(ops), 3000)]

	var s store
	now, lo, hi := base, base, base
	var admitted int64 // at most 1000 * (2^16 + 2): no overflow
	var refunded int64 // units given back, as many
	for len(ops) >= 3 {
		step := int64(int16(uint16(ops[0])<<8 | uint16(ops[1])))
		cost := int64(ops[2]) % (limit + 3)
		if ops[2] == 255 {
			cost = math.MaxInt64 / 2 // never fits, may overflow: denied, retry -1
		}
		ops = ops[3:]
		now += step * unit
		lo, hi = min(lo, now), max(hi, now)

		if step%5 == 3 && cost <= limit { // now and then a refund of up to cost
			r, n, err := Refund(now, s.tat, s.exists, q, cost)
			if err != nil {
				t.Fatalf("refund %d: %v", cost, err)
			}
			if r.Limited || r.RetryAfter != -1 || n < 0 || n > cost || r.Remaining < 0 || r.Remaining > limit {
				t.Fatalf("refund %d gave back %d: %+v", cost, n, r)
			}
			refunded += n
			if r.Store {
				// The state persists, as this loop keeps every key (expiry is not modelled):
				// a refund that leaves the TAT at now is a key with nothing owed, which the
				// server deletes; a clock stepped back before now must still find it owed.
				s.tat, s.exists = r.TAT, true
			}
			continue
		}

		// Plain checks in this loop: testify per call would make each input
		// slow to run and to minimize.
		r, err := Throttle(now, s.tat, s.exists, q, cost)
		if err != nil {
			t.Fatalf("cost %d: %v", cost, err) // any cost of a valid limit is a decision
		}
		if v := throttleViolation(now, cost, limit, r); v != "" {
			t.Fatalf("now %d cost %d %+v: %s", now, cost, r, v)
		}
		if !r.Limited {
			admitted += cost
		}
		if r.Store {
			s.tat, s.exists = r.TAT, true
		}

		// remaining units pass now, one more does not.
		if r.Remaining > 0 {
			if next, err := Throttle(now, s.tat, s.exists, q, r.Remaining); err != nil || next.Limited {
				t.Fatalf("remaining %d did not pass: %+v %v", r.Remaining, next, err)
			}
		}
		if more, err := Throttle(now, s.tat, s.exists, q, r.Remaining+1); err != nil || !more.Limited {
			t.Fatalf("remaining %d + 1 passed: %+v %v", r.Remaining, more, err)
		}
		// retry_after is long enough (a denial leaves the state as it was).
		if r.Limited && r.RetryAfter > 0 {
			if again, err := Throttle(now+r.RetryAfter*1e6, s.tat, s.exists, q, cost); err != nil || again.Limited {
				t.Fatalf("retry after %dms still limited: %+v %v", r.RetryAfter, again, err)
			}
		}
	}

	// admitted <= limit + count*(hi-lo)/period + refunded
	bound := new(big.Int).Mul(big.NewInt(q.Count), big.NewInt(hi-lo))
	bound.Quo(bound, big.NewInt(q.Period))
	bound.Add(bound, big.NewInt(limit+refunded))
	require.LessOrEqual(t, big.NewInt(admitted).Cmp(bound), 0, "admitted %v > bound %v", admitted, bound)
}

// throttleViolation names the first reply invariant r breaks, or "".
func throttleViolation(now, cost, limit int64, r Result) string {
	switch {
	case r.Limit != limit:
		return "limit"
	case r.Remaining < 0 || r.Remaining > limit:
		return "remaining outside [0, limit]"
	case r.ResetAfter < 0:
		return "negative reset_after"
	case r.Limited && r.Store:
		return "denied call stores"
	case r.Limited && cost <= limit && r.RetryAfter <= 0:
		return "denied call that can fit has no positive retry_after"
	case r.Limited && cost > limit && r.RetryAfter != -1:
		return "cost above the limit has a retry_after"
	case !r.Limited && r.RetryAfter != -1:
		return "allowed call has a retry_after"
	case r.Store != (!r.Limited && cost > 0):
		return "store"
	case r.Store && (r.TTL <= 0 || r.TAT-now != r.TTL):
		return "TTL is not TAT - now"
	}
	return ""
}

func abs(x int64) int64 {
	if x < 0 {
		if x == math.MinInt64 {
			return math.MaxInt64
		}
		return -x
	}
	return x
}
