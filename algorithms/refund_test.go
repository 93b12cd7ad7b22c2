package algorithms

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// refunder is every algorithm that takes REFUND.
type refunder interface {
	Algorithm
	Refund(now int64, st State, exists bool, n int64, scratch []byte) (Decision, State, bool, int64, error)
}

var _ = []refunder{TokenBucket{}, LeakyBucket{}, SlidingLog{}, SlidingCounter{}, FixedWindow{}}

// refund runs Refund on k and keeps what it stores (Expire 0: the key goes).
func (k *key) refund(t *testing.T, a refunder, now, n int64) (Decision, int64) {
	t.Helper()
	d, next, store, got, err := a.Refund(now, k.st, k.exists, n, nil)
	require.NoError(t, err)
	require.False(t, d.Limited, "a refund is never denied")
	require.GreaterOrEqual(t, d.Remaining, int64(0))
	require.LessOrEqual(t, d.Remaining, d.Limit)
	require.LessOrEqual(t, got, n)
	if !store {
		require.Equal(t, int64(0), got)
		return d, got
	}
	if next.Expire == 0 {
		k.st, k.exists = State{}, false
	} else {
		next.Bytes = bytes.Clone(next.Bytes)
		k.st, k.exists = next, true
	}
	return d, got
}

func TestRefundEachAlgorithm(t *testing.T) {
	cases := []struct {
		name string
		a    refunder
	}{
		{"tokenbucket", TokenBucket{Capacity: 10, Refill: 10, Period: sec}},
		{"leakybucket", LeakyBucket{Capacity: 10, Leak: 10, Period: sec}},
		{"slidinglog", SlidingLog{Limit: 10, Window: sec}},
		{"slidingcounter", SlidingCounter{Limit: 10, Window: sec}},
		{"fixedwindow", FixedWindow{Limit: 10, Window: sec}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var k key
			d, got := k.refund(t, tc.a, base, 5)
			require.Equal(t, int64(0), got, "a new key holds nothing")
			require.Equal(t, int64(10), d.Remaining)
			require.False(t, k.exists)

			require.False(t, k.take(t, tc.a, base+ms, 7).Limited)
			require.False(t, k.take(t, tc.a, base+2*ms, 3).Limited)
			require.True(t, k.take(t, tc.a, base+2*ms, 1).Limited)
			d, got = k.refund(t, tc.a, base+2*ms, 2)
			require.Equal(t, int64(2), got)
			require.Equal(t, int64(2), d.Remaining, "the decision after the refund")
			require.False(t, k.take(t, tc.a, base+2*ms, 2).Limited)
			require.True(t, k.take(t, tc.a, base+2*ms, 1).Limited)

			d, got = k.refund(t, tc.a, base+2*ms, 100)
			require.Equal(t, int64(10), got, "never past full")
			require.Equal(t, int64(10), d.Remaining)
			require.Equal(t, int64(0), d.ResetAfter)
			require.False(t, k.exists, "full again: the key goes")
		})
	}
}

func TestSlidingLogRefundDropsTheLatest(t *testing.T) {
	p := SlidingLog{Limit: 10, Window: sec}
	var k key
	k.take(t, p, base, 3)
	k.take(t, p, base+100*ms, 4)
	k.take(t, p, base+200*ms, 2)
	d, got := k.refund(t, p, base+300*ms, 5) // the 2 at 200ms and 3 of the 4 at 100ms
	require.Equal(t, int64(5), got)
	require.Equal(t, int64(6), d.Remaining)
	require.Equal(t, 1100*ms-300*ms, d.ResetAfter, "the newest left is at 100ms")
	// At 1s the 3 of 0ms leave; the 1 of 100ms stays.
	require.Equal(t, int64(9), k.take(t, p, base+sec, 0).Remaining)
	require.Equal(t, int64(10), k.take(t, p, base+1100*ms, 0).Remaining)
}

func TestWindowRefundOnlyTheCurrentWindow(t *testing.T) {
	for _, a := range []refunder{FixedWindow{Limit: 10, Window: sec}, SlidingCounter{Limit: 10, Window: sec}} {
		var k key
		k.take(t, a, base, 6)
		_, got := k.refund(t, a, base+sec, 3)
		require.Equal(t, int64(0), got, "%T: the last window's units are past giving back", a)
	}
}

// TestRefundUndoesTake: a take of c and then a refund of c at the same time
// leave the key as a probe saw it before the take.
func TestRefundUndoesTake(t *testing.T) {
	algs := []refunder{
		TokenBucket{Capacity: 20, Refill: 7, Period: sec},
		LeakyBucket{Capacity: 20, Leak: 7, Period: sec},
		SlidingLog{Limit: 20, Window: sec},
		SlidingCounter{Limit: 20, Window: sec},
		FixedWindow{Limit: 20, Window: sec},
	}
	rng := rand.New(rand.NewSource(23))
	for _, a := range algs {
		var k key
		now := base
		for i := 0; i < 2000; i++ {
			now += rng.Int63n(80 * ms)
			before := k.take(t, a, now, 0)
			c := 1 + rng.Int63n(6)
			if k.take(t, a, now, c).Limited {
				continue
			}
			_, got := k.refund(t, a, now, c)
			require.Equal(t, c, got, "%T step %d", a, i)
			after := k.take(t, a, now, 0)
			require.Equal(t, before.Remaining, after.Remaining, "%T step %d", a, i)
			if rng.Intn(3) > 0 {
				k.take(t, a, now, c) // keep some load
			}
		}
	}
}

func TestRefundErrors(t *testing.T) {
	_, _, _, _, err := TokenBucket{Capacity: 1, Refill: 1, Period: sec}.Refund(base, State{Num: -1, Num2: base}, true, 1, nil)
	require.ErrorIs(t, err, ErrCorrupt)
	_, _, _, _, err = SlidingLog{Limit: 1, Window: sec}.Refund(base, State{Num: base / 1000, Bytes: []byte{0x80}}, true, 1, nil)
	require.ErrorIs(t, err, ErrCorrupt)
	_, _, _, _, err = FixedWindow{Limit: 1, Window: sec}.Refund(-1, State{}, false, 1, nil)
	require.ErrorIs(t, err, ErrClock)
	_, _, _, _, err = LeakyBucket{Capacity: 0, Leak: 1, Period: sec}.Refund(base, State{}, false, 1, nil)
	require.ErrorIs(t, err, ErrCapacity)
}
