package global

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/algorithms"
	"github.com/throttledhq/throttled/keyspace"
)

// bucket is a Limit over the real token bucket (package ratelimit's globalLimit does the
// same for every verb; its tests drive those).
type bucket struct{ tb algorithms.TokenBucket }

func (b bucket) Units() int64 { return b.tb.Capacity }

func (b bucket) Remaining(v keyspace.Value, now int64) int64 {
	d, _, _, err := b.tb.Take(now, algorithms.State{Num: v.Num, Num2: v.Num2}, v.Kind != keyspace.None, 0, nil)
	if err != nil {
		panic(err)
	}
	return d.Remaining
}

func (b bucket) Take(v keyspace.Value, n, now int64) keyspace.Value {
	d, ns, store, err := b.tb.Take(now, algorithms.State{Num: v.Num, Num2: v.Num2}, v.Kind != keyspace.None, n, nil)
	if err != nil || d.Limited || !store {
		panic("take past remaining")
	}
	return keyspace.Value{Kind: keyspace.TokenBucket, Num: ns.Num, Num2: ns.Num2, Expire: ns.Expire}
}

const sec = int64(time.Second)

func TestFoldAndAvail(t *testing.T) {
	l := bucket{algorithms.TokenBucket{Capacity: 10, Refill: 100, Period: sec}} // 10 at once, 100/s
	t0 := int64(1_700_000_000) * sec
	iv := 100 * int64(time.Millisecond)
	cases := []struct {
		name      string
		admitted  int64
		wantDebt  int64
		wantAvail int64
	}{
		{"idle", 0, 0, 10 + 10},   // the burst, then a tenth of a second's refill
		{"some", 4, 0, 6 + 10},    // what is left of the burst, plus the refill
		{"all", 10, 0, 0 + 10},    // only the refill
		{"past", 15, 5, 10 - 5},   // the debt is paid from the refill first
		{"far past", 40, 30, 0},   // more debt than one interval refills
		{"refill", 0, 0, 10 + 10}, // (checked again below, a second later)
		{"probe", 0, 0, 10 + 10},  // folding nothing changes nothing
		{"one", 1, 0, 9 + 10},     // one unit
		{"burst+1", 11, 1, 0 + 9}, // one past
		{"huge", 1 << 40, 1<<40 - 10, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := fold(l, State{}, tc.admitted, t0)
			require.Equal(t, tc.wantDebt, st.Debt)
			left, next := avail(l, st, t0, iv)
			require.Equal(t, tc.wantAvail, left+next)
		})
	}
	// A second later the bucket is full again, and pays the debt (5) of 15 admitted first.
	st := fold(l, State{}, 15, t0)
	left, next := avail(l, st, t0+sec, iv)
	require.Equal(t, int64(5+10), left+next)
	st = fold(l, st, 0, t0+sec)
	require.Zero(t, st.Debt)
}

func TestShare(t *testing.T) {
	cases := []struct {
		name             string
		avail, mine, all int64
		live             int
		carry            float64
		want             int64
		wantCarry        float64
	}{
		{"alone", 100, 5, 5, 1, 0, 100, 0},
		{"70%", 100, 70, 100, 4, 0, 70, 0},
		{"3%", 10, 3, 100, 4, 0, 0, 0.3},
		{"3% carried", 10, 3, 100, 4, 0.9, 1, 0.2},
		{"no demand: equal parts", 100, 0, 0, 4, 0, 25, 0},
		{"never above avail", 10, 100, 50, 2, 0.99, 10, 0},
		{"nothing left", 0, 5, 10, 2, 0.5, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, carry := share(tc.avail, tc.mine, tc.all, tc.live, tc.carry)
			require.Equal(t, tc.want, got)
			require.InDelta(t, tc.wantCarry, carry, 1e-9)
		})
	}
}

func TestStateCodec(t *testing.T) {
	tag := [tagLen]byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, st := range []State{{}, {Debt: 7}, {V: keyspace.Value{Kind: keyspace.TokenBucket, Num: 3, Num2: 4, Expire: 99e9}, Debt: 2}} {
		got, from, err := decodeState(encodeState(nil, tag, st))
		require.NoError(t, err)
		require.Equal(t, tag[:], from)
		require.Equal(t, st, got)
	}
	got, from, err := decodeState(nil)
	require.NoError(t, err)
	require.Nil(t, from)
	require.Equal(t, State{}, got)
	for _, bad := range [][]byte{{}, []byte("short"), append(make([]byte, 8), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), append(make([]byte, 16), 0xee)} {
		_, _, err := decodeState(bad)
		require.ErrorIs(t, err, errState)
	}
}

// TestTake: the local decision takes from the allowance and never past it, from many
// goroutines at once.
func TestTake(t *testing.T) {
	r := New(Config{})
	e := r.Ensure([]byte("k"), Sig{A: 1}, bucket{algorithms.TokenBucket{Capacity: 1000, Refill: 1, Period: sec}})
	require.Equal(t, int64(1000), e.allowance.Load(), "alone, a new key starts with the whole burst")
	require.Same(t, e, r.Lookup([]byte("k")))
	require.Nil(t, r.Lookup([]byte("other")))
	done := make(chan int64)
	for range 8 {
		go func() {
			n := int64(0)
			for range 500 {
				if !r.Take(e, 1, false, 0).Limited {
					n++
				}
			}
			done <- n
		}()
	}
	total := int64(0)
	for range 8 {
		total += <-done
	}
	require.Equal(t, int64(1000), total)
	require.Equal(t, int64(1000), e.admitted.Load())
	require.Equal(t, int64(4000), e.demand.Load())
	d := r.Take(e, 1, false, 0)
	require.True(t, d.Limited)
	require.Positive(t, d.RetryAfter)
	d = r.Take(e, 1001, false, 0)
	require.True(t, d.Limited)
	require.Equal(t, int64(-1), d.RetryAfter, "more than the limit never passes")
	e.allowance.Store(5)
	d = r.Take(e, 3, true, 0)
	require.False(t, d.Limited)
	require.Equal(t, int64(2), d.Remaining)
	require.Equal(t, int64(5), e.allowance.Load(), "PEEK takes nothing")
}

// BenchmarkTake is the hot path of a GLOBAL call: the lookup and the take.
func BenchmarkTake(b *testing.B) {
	r := New(Config{})
	key := []byte("bench:key")
	r.Ensure(key, Sig{A: 1}, bucket{algorithms.TokenBucket{Capacity: 1 << 60, Refill: 1, Period: sec}})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e := r.Lookup(key)
			r.Take(e, 1, false, 0)
		}
	})
}

// TestAliveFor: a heartbeat lasts until the next sync is due and a quarter of an interval
// more, or twice how late the syncs have ended of late, at most a whole interval more.
func TestAliveFor(t *testing.T) {
	const i = 100 * time.Millisecond
	for _, tc := range []struct{ late, want time.Duration }{
		{0, 125 * time.Millisecond},
		{10 * time.Millisecond, 125 * time.Millisecond},
		{30 * time.Millisecond, 160 * time.Millisecond},
		{time.Second, 200 * time.Millisecond},
	} {
		if got := aliveFor(i, tc.late); got != tc.want {
			t.Errorf("aliveFor(%v, %v) = %v, want %v", i, tc.late, got, tc.want)
		}
	}
}
