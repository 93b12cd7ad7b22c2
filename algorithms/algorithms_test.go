package algorithms

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTakeArguments(t *testing.T) {
	algos := []Algorithm{
		TokenBucket{10, 1, sec}, LeakyBucket{10, 1, sec}, SlidingLog{10, sec},
		SlidingCounter{10, sec}, FixedWindow{Limit: 10, Window: sec}, Concurrency{10, sec, []byte("a")},
	}
	cases := []struct {
		name string
		now  int64
		cost int64
		want error
	}{
		{"negative cost", base, -1, ErrCost},
		{"clock before the epoch", -1, 1, ErrClock},
		{"clock past 2116", MaxTime, 1, ErrClock},
		{"epoch", 0, 1, nil},
		{"last instant", MaxTime - 1, 1, nil},
		{"huge cost never fits", base, math.MaxInt64, nil},
	}
	for _, a := range algos {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var k key
				_, err := k.try(a, c.now, c.cost)
				if c.want != nil {
					requireErr(t, c.want, err)
					return
				}
				require.NoError(t, err)
				// And again on the state it left, and much later.
				_, err = k.try(a, c.now, c.cost)
				require.NoError(t, err)
				_, err = k.try(a, MaxTime-1, 1)
				require.NoError(t, err)
			})
		}
	}
}

func TestLargestLimits(t *testing.T) {
	// Limits and costs at the edge of what each algorithm takes: exact
	// answers, no overflow. other is a second caller of the same key.
	cases := []struct {
		name     string
		a, other Algorithm
	}{
		{"sliding log", SlidingLog{math.MaxInt64, MaxDuration}, nil},
		{"fixed window", FixedWindow{Limit: math.MaxInt64, Window: MaxDuration}, nil},
		{"concurrency", Concurrency{math.MaxInt64, MaxDuration, []byte("a")}, Concurrency{math.MaxInt64, MaxDuration, []byte("b")}},
		{"token bucket", TokenBucket{maxUnits, maxUnits, MaxDuration}, nil},
		{"leaky bucket", LeakyBucket{maxUnits, maxUnits, MaxDuration}, nil},
		{"sliding counter", SlidingCounter{math.MaxUint32, MaxDuration}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.other == nil {
				c.other = c.a
			}
			var k key
			limit := k.take(t, c.a, base, 0).Limit
			d := k.take(t, c.a, base, limit)
			require.False(t, d.Limited)
			require.Equal(t, int64(0), d.Remaining)
			d = k.take(t, c.other, base+1, 1)
			require.True(t, d.Limited)
			require.Positive(t, d.RetryAfter)
			require.False(t, k.take(t, c.other, base+1, 0).Limited)
			d = k.take(t, c.other, base+1, math.MaxInt64)
			if limit < math.MaxInt64 {
				require.Equal(t, int64(-1), d.RetryAfter)
			} else {
				require.Positive(t, d.RetryAfter) // the whole limit, once the key is idle
			}
		})
	}
}
