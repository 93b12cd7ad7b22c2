package keyspace

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExpireCycleFreesIdleKeys(t *testing.T) {
	ks := New(16)
	const idle, forever, later = 10000, 1000, 1000
	for i := range idle {
		set(ks, fmt.Sprint("idle", i), Value{Kind: GCRA, Expire: 100, Num: 1})
	}
	for i := range forever {
		set(ks, fmt.Sprint("forever", i), Value{Kind: String, Bytes: []byte("v")})
	}
	for i := range later {
		set(ks, fmt.Sprint("later", i), Value{Kind: GCRA, Expire: 1000})
	}
	require.Equal(t, idle+later, ks.Expires())

	// Nothing has expired yet: one sample per shard, nothing removed.
	require.Zero(t, ks.ExpireCycle(99, 1e6))
	require.Equal(t, idle+forever+later, ks.Len())

	const maxWork = 100
	calls := 0
	for ks.Len() > forever+later {
		removed := ks.ExpireCycle(100, maxWork)
		require.LessOrEqual(t, removed, maxWork)
		calls++
		require.Less(t, calls, 1000, "ExpireCycle makes progress")
	}
	require.Equal(t, int64(idle), ks.ExpiredTotal())
	require.Equal(t, later, ks.Expires())
	for i := range forever {
		require.True(t, stored(ks, fmt.Sprint("forever", i)))
	}
	for i := range later {
		require.True(t, stored(ks, fmt.Sprint("later", i)))
	}
	checkInvariants(t, ks)

	// Once the rest expires, a big enough budget removes all of it in one call.
	require.Equal(t, later, ks.ExpireCycle(1000, 1e9))
	require.Equal(t, forever, ks.Len())
	require.Equal(t, 0, ks.Expires())
	require.Equal(t, int64(idle+later), ks.ExpiredTotal())
	checkInvariants(t, ks)
}

func TestExpireCycleRespectsMaxWork(t *testing.T) {
	for _, maxWork := range []int{-1, 0, 1, 5, 19, 20, 21, 333} {
		t.Run(fmt.Sprint(maxWork), func(t *testing.T) {
			ks := New(4)
			for i := range 2000 {
				set(ks, fmt.Sprint(i), Value{Kind: GCRA, Expire: 10})
			}
			removed := ks.ExpireCycle(10, maxWork)
			require.Equal(t, max(0, maxWork), removed, "every slot examined holds an expired key")
			require.Equal(t, 2000-removed, ks.Len())
		})
	}
}

func TestExpireCycleSampling(t *testing.T) {
	tests := []struct {
		name     string
		expired  func(i int) bool
		wantWork int
	}{
		{"none expired: one sample", func(int) bool { return false }, sampleSize},
		{"20% expired: one sample", func(i int) bool { return i%5 == 0 }, sampleSize},
		{"90% expired: the whole shard", func(i int) bool { return i%10 != 0 }, 5000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ks := New(1)
			for i := range 5000 {
				exp := int64(1000)
				if tc.expired(i) {
					exp = 10
				}
				set(ks, fmt.Sprint(i), Value{Kind: GCRA, Expire: exp})
			}
			s := ks.shards[0]
			s.Lock()
			removed, work := s.expireLocked(10, 1e6)
			s.Unlock()
			if tc.wantWork > sampleSize {
				require.GreaterOrEqual(t, work, tc.wantWork) // and the free slots after the keys
				require.LessOrEqual(t, work, 5000, "one pass at most")
			} else {
				require.Equal(t, tc.wantWork, work)
			}
			require.Equal(t, int64(removed), ks.ExpiredTotal())
			if tc.wantWork > sampleSize {
				require.Equal(t, 4500, removed)
			}
		})
	}
}

func TestExpireCycleSkipsShardsWithoutExpiry(t *testing.T) {
	ks := New(8)
	for i := range 1000 {
		set(ks, fmt.Sprint(i), Value{Kind: String, Bytes: []byte("x")})
	}
	set(ks, "e", Value{Kind: GCRA, Expire: 5})
	// One shard holds keys that expire; the cycle reaches it whatever its budget is spent on.
	require.Equal(t, 1, ks.ExpireCycle(5, 1e9))
	require.Equal(t, 1000, ks.Len())
}
