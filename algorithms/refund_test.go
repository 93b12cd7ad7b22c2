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

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Share
		ok   bool
	}{
		{"1", Whole, true}, {"0.8", 800_000, true}, {"0.125", 125_000, true}, {"1.0", Whole, true},
		{"0.000001", 1, true}, {"0", 0, false}, {"0.0", 0, false}, {"1.5", 0, false}, {"2", 0, false},
		{"10", 0, false}, {".5", 0, false}, {"0.", 0, false}, {"0.1234567", 0, false}, {"-0.5", 0, false},
		{"", 0, false}, {"0.8x", 0, false}, {"1e-1", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseShare([]byte(tc.in))
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.want, got)
			}
		})
	}
	require.Equal(t, int64(200), Share(800_000).Reserve(1000))
	require.Equal(t, int64(1), Share(800_000).Reserve(4), "floor(3.2) = 3 for the tier, 1 kept")
	require.Equal(t, int64(0), Whole.Reserve(1000))
	require.Equal(t, int64(1000), Share(1).Reserve(1000), "a millionth of 1000 is no whole unit")
}

// TestTierKeepsTheReserve: a tier admitted by evaluating cost+reserve never
// takes the reserve, and the whole tier still gets it.
func TestTierKeepsTheReserve(t *testing.T) {
	for _, a := range []Algorithm{
		TokenBucket{Capacity: 10, Refill: 1, Period: 60 * sec},
		LeakyBucket{Capacity: 10, Leak: 1, Period: 60 * sec},
		SlidingLog{Limit: 10, Window: 60 * sec},
		SlidingCounter{Limit: 10, Window: 60 * sec},
		FixedWindow{Limit: 10, Window: 60 * sec},
	} {
		var k key
		reserve := Share(800_000).Reserve(10)
		admitted := 0
		for i := 0; i < 20; i++ {
			d, _, _, err := a.Take(base, k.st, k.exists, 1+reserve, nil) // looked at, not taken
			require.NoError(t, err)
			if d.Limited {
				continue
			}
			k.take(t, a, base, 1)
			admitted++
		}
		require.Equal(t, 8, admitted, "%T", a)
		d := k.take(t, a, base, 0)
		l, r := Tier(d.Limit, d.Remaining, reserve)
		require.Equal(t, [2]int64{8, 0}, [2]int64{l, r}, "%T", a)
		require.False(t, k.take(t, a, base, 2).Limited, "%T: the whole limit takes the reserve", a)
	}
}
