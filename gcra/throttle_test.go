package gcra

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

const sec = int64(1e9)

func TestThrottleSequence(t *testing.T) {
	// 1 per second, burst 4: interval 1s, limit 5, tolerance 5s.
	q := Quota{MaxBurst: 4, Count: 1, Period: sec}
	steps := []struct {
		name      string
		at        int64 // ns after base
		cost      int64
		want      [5]int64
		wantStore bool
	}{
		{"1st", 0, 1, [5]int64{0, 5, 4, -1, 1000}, true},
		{"2nd", 0, 1, [5]int64{0, 5, 3, -1, 2000}, true},
		{"3rd", 0, 1, [5]int64{0, 5, 2, -1, 3000}, true},
		{"4th", 0, 1, [5]int64{0, 5, 1, -1, 4000}, true},
		{"5th", 0, 1, [5]int64{0, 5, 0, -1, 5000}, true},
		{"6th waits 1s", 0, 1, [5]int64{1, 5, 0, 1000, 5000}, false},
		// TAT 5s ahead of base, 4.75s ahead of now: 0.75s until 4s.
		{"250ms later waits 750ms", 250e6, 1, [5]int64{1, 5, 0, 750, 4750}, false},
		{"1s later one passes", sec, 1, [5]int64{0, 5, 0, -1, 5000}, true},
		{"probe changes nothing", sec, 0, [5]int64{0, 5, 0, -1, 5000}, false},
		// TAT 6s; at 3.5s it is 2.5s ahead: 2 whole units of room.
		{"probe 2.5s later", 3500e6, 0, [5]int64{0, 5, 2, -1, 2500}, false},
		{"cost 3 waits 500ms", 3500e6, 3, [5]int64{1, 5, 2, 500, 2500}, false},
		{"cost 2 passes", 3500e6, 2, [5]int64{0, 5, 0, -1, 4500}, true},
		{"idle probe", 20 * sec, 0, [5]int64{0, 5, 5, -1, 0}, false},
		{"cost above the limit never fits", 20 * sec, 6, [5]int64{1, 5, 5, -1, 0}, false},
		{"cost of the whole limit", 20 * sec, 5, [5]int64{0, 5, 0, -1, 5000}, true},
	}
	var s store
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			res, err := Throttle(base+st.at, s.tat, s.exists, q, st.cost)
			require.NoError(t, err)
			require.Equal(t, st.want, reply(res))
			require.Equal(t, st.wantStore, res.Store)
			if res.Store {
				require.Equal(t, res.TAT-(base+st.at), res.TTL)
			}
			s.apply(t, res)
		})
	}
}

func TestThrottleRetryAfterMs(t *testing.T) {
	// 3 per second, no burst: interval ceil(1e9/3) = 333333334ns.
	q := Quota{MaxBurst: 0, Count: 3, Period: sec}
	first, err := Throttle(base, 0, false, q, 1)
	require.NoError(t, err)
	require.Equal(t, [5]int64{0, 1, 0, -1, 334}, reply(first))
	require.Equal(t, base+333_333_334, first.TAT)
	cases := []struct {
		name string
		at   int64
		want [5]int64
	}{
		{"right away: 333.333334ms rounds up", 0, [5]int64{1, 1, 0, 334, 334}},
		{"1ns before: 1ms", 333_333_333, [5]int64{1, 1, 0, 1, 1}},
		{"1ms+1ns before: 2ms", 332_333_333, [5]int64{1, 1, 0, 2, 2}},
		{"exactly 1ms before: 1ms", 332_333_334, [5]int64{1, 1, 0, 1, 1}},
		{"on time", 333_333_334, [5]int64{0, 1, 0, -1, 334}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Throttle(base+c.at, first.TAT, true, q, 1)
			require.NoError(t, err)
			require.Equal(t, c.want, reply(res))
		})
	}
}

func TestThrottleIntervalRoundsUp(t *testing.T) {
	// 3 per second from idle, sustained: the 4th unit after the burst is
	// never admitted before a full second has passed.
	q := Quota{MaxBurst: 2, Count: 3, Period: sec}
	var s store
	admitted := 0
	for now := base; now < base+sec; now += 1e6 {
		res, err := Throttle(now, s.tat, s.exists, q, 1)
		require.NoError(t, err)
		if !res.Limited {
			admitted++
		}
		s.apply(t, res)
	}
	require.Equal(t, 5, admitted) // 3 at once, then at 333.333334ms and 666.666668ms
}

func TestThrottleClockStepsBack(t *testing.T) {
	// 1 per second, burst 2: limit 3, tolerance 3s.
	q := Quota{MaxBurst: 2, Count: 1, Period: sec}
	steps := []struct {
		name string
		at   int64 // seconds after base
		want [5]int64
	}{
		{"t10 1st", 10, [5]int64{0, 3, 2, -1, 1000}},
		{"t10 2nd", 10, [5]int64{0, 3, 1, -1, 2000}},
		{"t10 3rd", 10, [5]int64{0, 3, 0, -1, 3000}},
		{"back to t5: TAT 8s ahead", 5, [5]int64{1, 3, 0, 6000, 8000}},
		{"back to t0", 0, [5]int64{1, 3, 0, 11000, 13000}},
		{"t12", 12, [5]int64{0, 3, 1, -1, 2000}},
		{"back to t1", 1, [5]int64{1, 3, 0, 11000, 13000}},
		{"t13 1st", 13, [5]int64{0, 3, 1, -1, 2000}},
		{"t13 2nd", 13, [5]int64{0, 3, 0, -1, 3000}},
		{"t13 3rd", 13, [5]int64{1, 3, 0, 1000, 3000}},
	}
	var s store
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			res, err := Throttle(base+st.at*sec, s.tat, s.exists, q, 1)
			require.NoError(t, err)
			require.Equal(t, st.want, reply(res))
			s.apply(t, res)
		})
	}

	t.Run("small steps back never admit", func(t *testing.T) {
		var s store
		now := base
		for range 3 {
			res, err := Throttle(now, s.tat, s.exists, q, 1)
			require.NoError(t, err)
			require.False(t, res.Limited)
			s.apply(t, res)
		}
		for range 1000 {
			now -= 1e6
			res, err := Throttle(now, s.tat, s.exists, q, 1)
			require.NoError(t, err)
			require.True(t, res.Limited)
			require.False(t, res.Store)
		}
	})
}

func TestThrottleErrors(t *testing.T) {
	cases := []struct {
		name string
		now  int64
		q    Quota
		cost int64
		want string
	}{
		{"clock before the epoch", -1, Quota{Count: 1, Period: sec}, 1, "ERR clock is before the Unix epoch"},
		{"max_burst negative", base, Quota{MaxBurst: -1, Count: 1, Period: sec}, 1, "ERR max_burst must be a non-negative integer"},
		{"count zero", base, Quota{Count: 0, Period: sec}, 1, "ERR count must be a positive integer"},
		{"count negative", base, Quota{Count: -1, Period: sec}, 1, "ERR count must be a positive integer"},
		{"period zero", base, Quota{Count: 1, Period: 0}, 1, "ERR period must be positive"},
		{"period negative", base, Quota{Count: 1, Period: -sec}, 1, "ERR period must be positive"},
		{"count above period in ns", base, Quota{Count: 2, Period: 1}, 1, "ERR count is too large for this period: at most one unit per nanosecond"},
		{"cost negative", base, Quota{Count: 1, Period: sec}, -1, "ERR cost must be a non-negative integer"},
		{"max_burst int64 max", base, Quota{MaxBurst: math.MaxInt64, Count: 1, Period: 1}, 1, "ERR max_burst is too large for this count and period"},
		{"tolerance overflows", base, Quota{MaxBurst: 1 << 62, Count: 1, Period: 4}, 1, "ERR max_burst is too large for this count and period"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Throttle(c.now, 0, false, c.q, c.cost)
			var e *Error
			require.True(t, errors.As(err, &e), "%v", err)
			require.Equal(t, c.want, e.Text)
		})
	}
}

func TestThrottleHugeCostIsNotAnError(t *testing.T) {
	// 1e9 units of 1s each fit in int64 but not in a 5s tolerance.
	res, err := Throttle(base, 0, false, Quota{MaxBurst: 4, Count: 1, Period: sec}, 1e9)
	require.NoError(t, err)
	require.Equal(t, [5]int64{1, 5, 5, -1, 0}, reply(res))
	require.False(t, res.Store)
}

func TestThrottleImpossibleIsDenied(t *testing.T) {
	// A cost whose time overflows int64, and an admission whose TAT would pass 2262, are
	// denials that no wait lifts (retry -1), never errors a proxy could read as a pass.
	cases := []struct {
		name   string
		tat    int64
		exists bool
		q      Quota
		cost   int64
		want   [5]int64
	}{
		{"cost overflows", 0, false, Quota{MaxBurst: 2, Count: 3, Period: 3600 * sec}, 10_000_000, [5]int64{1, 3, 3, -1, 0}},
		{"cost int64 max", 0, false, Quota{Count: 1, Period: sec}, math.MaxInt64, [5]int64{1, 1, 1, -1, 0}},
		{"cost overflows on a busy key", base + sec, true, Quota{MaxBurst: 1, Count: 1, Period: sec}, math.MaxInt64, [5]int64{1, 2, 1, -1, 1000}},
		{"new TAT overflows", 0, false, Quota{Count: 1, Period: 8e18}, 1, [5]int64{1, 1, 1, -1, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Throttle(base, c.tat, c.exists, c.q, c.cost)
			require.NoError(t, err)
			require.Equal(t, c.want, reply(res))
			require.False(t, res.Store)
		})
	}
}

func TestThrottleSharesStateWithCell(t *testing.T) {
	// The same key driven by CL.THROTTLE and THROTTLE with equivalent
	// limits: each sees the other's admissions.
	var s store
	cell := CellParams{MaxBurst: 1, Count: 1, Period: 1, Quantity: 1}
	q := Quota{MaxBurst: 1, Count: 1, Period: sec}
	res, err := Cell(base, s.tat, s.exists, cell)
	require.NoError(t, err)
	s.apply(t, res)
	res, err = Throttle(base, s.tat, s.exists, q, 1)
	require.NoError(t, err)
	require.Equal(t, [5]int64{0, 2, 0, -1, 2000}, reply(res))
	s.apply(t, res)
	res, err = Cell(base, s.tat, s.exists, cell)
	require.NoError(t, err)
	require.Equal(t, [5]int64{1, 2, 0, 1, 2}, reply(res))
	res, err = Redis(base, s.tat, s.exists, GCRAParams{MaxBurst: 1, Tokens: 1, Period: 1, Quantity: 1})
	require.NoError(t, err)
	require.Equal(t, [5]int64{1, 2, 0, 1, 2}, reply(res))
}
