package datatype_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/internal/testserver"
)

// FuzzIncrEx drives INCREX beside INCRBY and INCRBYFLOAT on a twin key and checks its
// invariants: a bound is never crossed by a write, new = old + applied, a skipped call
// ([old, 0]) changes nothing, the reply's new value is what GET then reads, and without
// bounds or overflow INCREX adds as INCRBY and INCRBYFLOAT do.
func FuzzIncrEx(f *testing.F) {
	f.Add(int64(10), int64(5), int64(0), int64(12), uint8(0))
	f.Add(int64(50), int64(100), int64(-5), int64(80), uint8(7))
	f.Add(int64(math.MaxInt64-7), int64(math.MaxInt64), int64(math.MinInt64), int64(math.MaxInt64), uint8(5))
	f.Add(int64(-3), int64(-7), int64(-9), int64(-1), uint8(3|8))
	f.Add(int64(1), int64(1), int64(0), int64(0), uint8(16))
	ctx := context.Background()
	ts := testserver.Start(f)
	rdb := ts.Client(f, 2)
	f.Fuzz(func(t *testing.T, start, by, lo, hi int64, flags uint8) {
		float, saturate, bounded, missing := flags&1 != 0, flags&2 != 0, flags&4 != 0, flags&16 != 0
		if lo > hi {
			lo, hi = hi, lo
		}
		do(t, rdb, "DEL", "k", "twin")
		if !missing {
			do(t, rdb, "SET", "k", start)
			do(t, rdb, "SET", "twin", start)
		} else {
			start = 0
		}
		args := []any{"INCREX", "k"}
		if float {
			args = append(args, "BYFLOAT", float64(by)/8)
		} else {
			args = append(args, "BYINT", by)
		}
		if bounded {
			args = append(args, "LBOUND", lo, "UBOUND", hi)
		}
		if saturate {
			args = append(args, "SATURATE")
		}
		if flags&8 != 0 {
			args = append(args, "EX", 100)
		}
		if float {
			fuzzFloat(t, ctx, rdb, args, float64(start), float64(by)/8, float64(lo), float64(hi), bounded, missing)
			return
		}
		reply, err := rdb.Do(ctx, args...).Result()
		if err != nil {
			require.Equal(t, "ERR applied increment would overflow", err.Error(), "%v", args)
			require.True(t, saturate, "%v", args)
			return
		}
		r := reply.([]any)
		next, applied := r[0].(int64), r[1].(int64)
		require.Equal(t, start, next-applied, "%v", args)
		if bounded && (applied != 0 || saturate) {
			require.True(t, lo <= next && next <= hi, "%v: %d outside [%d, %d]", args, next, lo, hi)
		}
		// A call is skipped where it applies nothing that it was asked for, without SATURATE.
		skipped := applied == 0 && !saturate && (by != 0 || bounded && (start < lo || start > hi))
		got, err := rdb.Get(ctx, "k").Result()
		if missing && skipped {
			require.ErrorIs(t, err, redis.Nil, "%v: a skipped INCREX created the key", args)
		} else {
			require.NoError(t, err, "%v", args)
			require.Equal(t, strconv.FormatInt(next, 10), got, "%v", args)
		}
		if !bounded && !saturate {
			want, err := rdb.IncrBy(ctx, "twin", by).Result()
			if err == nil {
				require.Equal(t, want, next, "%v", args)
			} else {
				require.Equal(t, int64(0), applied, "%v: INCRBY overflowed, INCREX applied", args)
			}
		}
	})
}

// fuzzFloat is FuzzIncrEx's BYFLOAT half; INCRBYFLOAT computes in long double, so it is
// compared to the float64 sum within a rounding.
func fuzzFloat(t *testing.T, ctx context.Context, rdb *redis.Client, args []any, start, by, lo, hi float64, bounded, missing bool) {
	reply, err := rdb.Do(ctx, args...).Result()
	require.NoError(t, err, "%v", args)
	r := reply.([]any)
	next, err := strconv.ParseFloat(r[0].(string), 64)
	require.NoError(t, err)
	applied, err := strconv.ParseFloat(r[1].(string), 64)
	require.NoError(t, err)
	if applied != 0 {
		require.InDelta(t, start+applied, next, math.Abs(next)*1e-15+1e-300, "%v", args)
		if bounded {
			require.True(t, lo <= next && next <= hi, "%v: %v outside [%v, %v]", args, next, lo, hi)
		}
	}
	got, err := rdb.Get(ctx, "k").Result()
	if err == nil {
		g, perr := strconv.ParseFloat(got, 64)
		require.NoError(t, perr)
		require.Equal(t, next, g, "%v", args)
	} else {
		require.True(t, missing && applied == 0, "%v: key gone after INCREX", args)
	}
	if !bounded && !missing {
		want, err := rdb.IncrByFloat(ctx, "twin", by).Result()
		require.NoError(t, err)
		require.InDelta(t, want, next, math.Abs(want)*1e-12, "%v", args)
	}
}

// FuzzIncrExOptions sends INCREX arbitrary words after the key: it answers a reply or one
// of its errors, never an internal error, and a key it leaves is a number.
func FuzzIncrExOptions(f *testing.F) {
	for _, seed := range []string{
		"BYINT 5 UBOUND 8 SATURATE EX 10 ENX", "BYFLOAT 0.5 LBOUND -inf UBOUND inf", "BYFLOAT 1e308 SATURATE",
		"NX PXAT 1", "XX PERSIST", "LBOUND 9 UBOUND 1", "ENX", "BYINT -9223372036854775808 SATURATE UBOUND 0",
		"BYFLOAT 0x1p-3 EXAT 99999999999", "EX 9223372036854775807",
	} {
		f.Add("7", seed)
	}
	ctx := context.Background()
	ts := testserver.Start(f)
	rdb := ts.Client(f, 3)
	f.Fuzz(func(t *testing.T, start, input string) {
		do(t, rdb, "SET", "k", start)
		args := []any{"INCREX", "k"}
		for _, w := range strings.Fields(input) {
			args = append(args, w)
		}
		_, err := rdb.Do(ctx, args...).Result()
		if err != nil {
			require.NotContains(t, err.Error(), "internal", "%q", args)
			return
		}
		if got, err := rdb.Get(ctx, "k").Result(); err == nil && got != start {
			_, perr := strconv.ParseFloat(got, 64)
			require.NoError(t, perr, "%q left %q", args, got)
		}
	})
}
