package algorithms

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLeakyBucketSequence(t *testing.T) {
	// At most 3 units waiting, 1 leaves per second.
	p := LeakyBucket{Capacity: 3, Leak: 1, Period: sec}
	steps := []struct {
		name string
		at   int64 // ns after base
		cost int64
		want [6]int64 // limited, limit, remaining, retry, reset, delay
	}{
		{"empty queue: go now", 0, 1, [6]int64{0, 3, 2, -1, sec, 0}},
		{"one ahead: wait a second", 0, 1, [6]int64{0, 3, 1, -1, 2 * sec, sec}},
		{"two ahead: wait two", 0, 1, [6]int64{0, 3, 0, -1, 3 * sec, 2 * sec}},
		{"full: retry when one has left", 0, 1, [6]int64{1, 3, 0, sec, 3 * sec, 0}},
		{"cost above capacity never fits", 0, 4, [6]int64{1, 3, 0, -1, 3 * sec, 0}},
		{"half a second: still full", 500 * ms, 1, [6]int64{1, 3, 0, 500 * ms, 2500 * ms, 0}},
		{"one has left: proceed at 3s", sec, 1, [6]int64{0, 3, 0, -1, 3 * sec, 2 * sec}},
		{"probe: delay to drain the queue", 1500 * ms, 0, [6]int64{0, 3, 0, -1, 2500 * ms, 2500 * ms}},
		{"drained", 10 * sec, 0, [6]int64{0, 3, 3, -1, 0, 0}},
		{"cost 2 on an empty queue", 10 * sec, 2, [6]int64{0, 3, 1, -1, 2 * sec, 0}},
		{"next caller waits for both units", 10500 * ms, 1, [6]int64{0, 3, 0, -1, 2500 * ms, 1500 * ms}},
	}
	var k key
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			require.Equal(t, s.want, reply(k.take(t, p, base+s.at, s.cost)))
		})
	}
}

func TestLeakyBucketSpacesAdmissions(t *testing.T) {
	// 3 per second: an interval of 333.33...ms.
	p := LeakyBucket{Capacity: 6, Leak: 3, Period: sec}
	cases := []struct {
		name  string
		costs []int64
		want  []int64 // when each caller proceeds, ns after base
	}{
		{"a burst goes out one interval apart", []int64{1, 1, 1, 1, 1, 1}, []int64{0, 333_333_334, 666_666_667, sec, 1_333_333_334, 1_666_666_667}},
		{"a caller of cost 2 takes two intervals", []int64{2, 1, 3}, []int64{0, 666_666_667, sec}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var k key
			var got []int64
			for _, cost := range c.costs {
				d := k.take(t, p, base, cost)
				require.False(t, d.Limited)
				got = append(got, d.Delay)
			}
			require.Equal(t, c.want, got)
		})
	}

	t.Run("callers arriving steadily wait for the ones ahead", func(t *testing.T) {
		// Two arrivals every interval into a queue that drains one: each
		// proceeds one interval after the previous until the queue is full.
		p := LeakyBucket{Capacity: 4, Leak: 1, Period: 100 * ms}
		var k key
		var proceed []int64
		for i := range int64(6) {
			for range 2 {
				d := k.take(t, p, base+i*100*ms, 1)
				if !d.Limited {
					proceed = append(proceed, i*100*ms+d.Delay)
				}
			}
		}
		require.Equal(t, []int64{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms, 600 * ms, 700 * ms, 800 * ms}, proceed)
	})
}

func TestLeakyBucketAdaptsNeverRefills(t *testing.T) {
	old := LeakyBucket{Capacity: 10, Leak: 1, Period: sec}
	// 6 units at base; at 1.5s one has left and the next leaves at 2s.
	prepare := func(t *testing.T) *key {
		var k key
		k.take(t, old, base, 6)
		require.Equal(t, int64(4), k.take(t, old, base+1500*ms, 1).Remaining) // 6 waiting
		return &k
	}
	cases := []struct {
		name string
		p    LeakyBucket
		at   int64 // ns after base
		want int64 // remaining on a probe
	}{
		{"same parameters", old, 1500 * ms, 4},
		{"same parameters, the next unit leaves", old, 2 * sec, 5},
		{"capacity shrinks below the queue", LeakyBucket{4, 1, sec}, 1500 * ms, 0},
		{"capacity grows: the units still wait", LeakyBucket{100, 1, sec}, 1500 * ms, 94},
		{"leak 1000 times faster: nothing for the past", LeakyBucket{10, 1000, sec}, 1500 * ms, 4},
		{"leak 1000 times faster from the last call", LeakyBucket{10, 1000, sec}, 1503 * ms, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := prepare(t)
			require.Equal(t, c.want, k.take(t, c.p, base+c.at, 0).Remaining)
		})
	}

	t.Run("a queue over a shrunk capacity admits once below it", func(t *testing.T) {
		k := prepare(t)
		p := LeakyBucket{Capacity: 4, Leak: 1, Period: sec}
		d := k.take(t, p, base+1500*ms, 1)
		require.Equal(t, [6]int64{1, 4, 0, 2500 * ms, 5500 * ms, 0}, reply(d))
		require.False(t, k.take(t, p, base+4*sec, 1).Limited)
	})
}

func TestLeakyBucketClockStepsBack(t *testing.T) {
	p := LeakyBucket{Capacity: 2, Leak: 1, Period: sec}
	var k key
	k.take(t, p, base+10*sec, 2)
	// The queue drains from the stored time: at 5s it is as full as at 10s.
	require.Equal(t, [6]int64{1, 2, 0, 6 * sec, 7 * sec, 0}, reply(k.take(t, p, base+5*sec, 1)))
	require.Equal(t, [6]int64{0, 2, 0, -1, 2 * sec, sec}, reply(k.take(t, p, base+11*sec, 1)))
}

func TestLeakyBucketValidate(t *testing.T) {
	cases := []struct {
		name string
		p    LeakyBucket
		want error
	}{
		{"zero capacity", LeakyBucket{0, 1, sec}, ErrCapacity},
		{"capacity above 2^51-1", LeakyBucket{1 << 51, 1, 1}, ErrCapacity},
		{"zero leak", LeakyBucket{1, 0, sec}, ErrLeak},
		{"negative period", LeakyBucket{1, 1, -sec}, ErrPeriod},
		{"too slow to drain", LeakyBucket{2, 1, MaxDuration}, ErrLeakCapacity},
		{"slowest", LeakyBucket{1, 1, MaxDuration}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate()
			if c.want == nil {
				require.NoError(t, err)
				return
			}
			requireErr(t, c.want, err)
		})
	}
}
