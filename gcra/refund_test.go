package gcra

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRefund(t *testing.T) {
	// 1 per second, burst 4: interval 1s, limit 5.
	q := Quota{MaxBurst: 4, Count: 1, Period: sec}
	take := func(s *store, at, cost int64) {
		res, err := Throttle(base+at, s.tat, s.exists, q, cost)
		require.NoError(t, err)
		s.apply(t, res)
	}
	t.Run("moves the TAT back n intervals", func(t *testing.T) {
		var s store
		take(&s, 0, 4) // TAT base+4s
		res, n, err := Refund(base, s.tat, s.exists, q, 2)
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		require.Equal(t, [5]int64{0, 5, 3, -1, 2000}, reply(res))
		require.True(t, res.Store)
		require.Equal(t, base+2*sec, res.TAT)
		require.Equal(t, 2*sec, res.TTL)
	})
	t.Run("never before now", func(t *testing.T) {
		var s store
		take(&s, 0, 2) // TAT base+2s; at 1.5s, 0.5s ahead
		res, n, err := Refund(base+1500e6, s.tat, s.exists, q, 10)
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "half an interval left is one unit given back")
		require.Equal(t, [5]int64{0, 5, 5, -1, 0}, reply(res))
		require.True(t, res.Store)
		require.Equal(t, int64(0), res.TTL, "idle: the key may go")
	})
	t.Run("a key holding nothing stays", func(t *testing.T) {
		res, n, err := Refund(base, 0, false, q, 3)
		require.NoError(t, err)
		require.Equal(t, int64(0), n)
		require.False(t, res.Store)
		require.Equal(t, [5]int64{0, 5, 5, -1, 0}, reply(res))
		res, n, err = Refund(base+10*sec, base+sec, true, q, 3)
		require.NoError(t, err)
		require.Equal(t, int64(0), n)
		require.False(t, res.Store)
	})
	t.Run("a refund after a denial lets the call pass", func(t *testing.T) {
		var s store
		take(&s, 0, 5)
		res, err := Throttle(base, s.tat, s.exists, q, 1)
		require.NoError(t, err)
		require.True(t, res.Limited)
		r, _, err := Refund(base, s.tat, s.exists, q, 1)
		require.NoError(t, err)
		s.apply(t, r)
		res, err = Throttle(base, s.tat, s.exists, q, 1)
		require.NoError(t, err)
		require.False(t, res.Limited)
	})
	t.Run("huge refund saturates", func(t *testing.T) {
		var s store
		take(&s, 0, 3)
		res, n, err := Refund(base, s.tat, s.exists, q, math.MaxInt64)
		require.NoError(t, err)
		require.Equal(t, int64(3), n)
		require.Equal(t, int64(0), res.TTL)
	})
	t.Run("errors", func(t *testing.T) {
		_, _, err := Refund(base, 0, false, q, -1)
		require.EqualError(t, err, "ERR refund must be a non-negative integer")
		_, _, err = Refund(base, 0, false, Quota{Count: 0, Period: sec}, 1)
		require.Error(t, err)
	})
}
