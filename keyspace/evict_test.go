package keyspace

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParsePolicy(t *testing.T) {
	for _, name := range policyNames {
		p, err := ParsePolicy(name)
		require.NoError(t, err)
		require.Equal(t, name, p.String())
	}
	_, err := ParsePolicy("allkeys-lfu")
	require.Error(t, err)
}

// floodUnder inserts flood keys into ks, evicting with p whenever UsedMemory passes limit as
// the server does, and touches the busy keys between as the access clock ticks; it returns the most UsedMemory seen.
func floodUnder(t *testing.T, ks *Keyspace, p Policy, limit int64, flood int, busy [][]byte, now int64) int64 {
	t.Helper()
	peak := int64(0)
	for i := 0; i < flood; i++ {
		key := []byte("flood:" + strconv.Itoa(i))
		s := ks.Shard(key)
		s.Lock()
		// A flood key: one call of a limit of 10 a second, idle again in 100 ms.
		s.SetLocked(key, Value{Kind: GCRA, Num: now + 100e6, Expire: now + 100e6})
		s.Unlock()
		if i%64 == 0 {
			ks.SetClock(now + int64(i/64)*1e9) // a second passes every 64 keys: the busy keys are the freshest
			for _, b := range busy {
				bs := ks.Shard(b)
				bs.Lock()
				v, ok := bs.GetLocked(b, now)
				require.True(t, ok, "busy key %s was evicted at %d", b, i)
				bs.SetLocked(b, v)
				bs.Unlock()
			}
		}
		if i%256 == 0 {
			used := ks.UsedMemory()
			peak = max(peak, used)
			for used > limit {
				require.Positive(t, ks.Evict(p, 256, 5, now))
				used = ks.UsedMemory()
			}
		}
	}
	return peak
}

func TestEvictionFloodKeepsBusyKeys(t *testing.T) {
	now := time.Unix(1_700_000_000, 0).UnixNano()
	for _, p := range []Policy{VolatileTTL, AllKeysLRU, VolatileLRU} {
		t.Run(p.String(), func(t *testing.T) {
			ks := New(16)
			var busy [][]byte
			for i := 0; i < 100; i++ {
				key := []byte("busy:" + strconv.Itoa(i))
				busy = append(busy, key)
				s := ks.Shard(key)
				s.Lock()
				// A busy key: its limit is used up for the next hour.
				s.SetLocked(key, Value{Kind: GCRA, Num: now + int64(time.Hour), Expire: now + int64(time.Hour)})
				s.Unlock()
			}
			const limit = 4 << 20
			peak := floodUnder(t, ks, p, limit, 300_000, busy, now)
			require.Less(t, peak, int64(limit+limit/4))
			require.Positive(t, ks.EvictedTotal())
			require.Less(t, ks.UsedMemory(), int64(limit+limit/4))
			for _, b := range busy {
				s := ks.Shard(b)
				s.Lock()
				_, ok := s.GetLocked(b, now)
				s.Unlock()
				require.True(t, ok)
			}
		})
	}
}

// TestEvictionFloodWhileTrackedKeepsBusyKeys: with persistence's and replication's trackers on
// and not drained, every eviction grows them by its key; maxmemory does not count them,
// or eviction would chase them until no key is left, the busy ones with the rest.
func TestEvictionFloodWhileTrackedKeepsBusyKeys(t *testing.T) {
	now := time.Unix(1_700_000_000, 0).UnixNano()
	ks := New(16)
	ks.Track(DiskFeed, true)
	ks.Track(ReplicaFeed, true)
	busy := [][]byte{[]byte("busy")}
	s := ks.Shard(busy[0])
	s.Lock()
	s.SetLocked(busy[0], Value{Kind: GCRA, Num: now + int64(time.Hour), Expire: now + int64(time.Hour)})
	s.Unlock()
	const limit = 2 << 20
	floodUnder(t, ks, VolatileTTL, limit, 200_000, busy, now)
	require.Positive(t, ks.TrackingMemory())
	require.Greater(t, ks.Len(), 10_000, "eviction stopped near maxmemory")
	require.Less(t, ks.UsedMemory(), int64(limit+limit/4))
}

func TestEvictRandomAndNone(t *testing.T) {
	ks := New(4)
	for i := 0; i < 1000; i++ {
		key := []byte(strconv.Itoa(i))
		s := ks.Shard(key)
		s.Lock()
		s.SetLocked(key, Value{Kind: String, Bytes: key})
		s.Unlock()
	}
	require.Equal(t, 0, ks.Evict(NoEviction, 10, 5, 0))
	require.Equal(t, 0, ks.Evict(VolatileRandom, 10, 5, 0)) // no key has an expiry
	require.Equal(t, 0, ks.Evict(VolatileTTL, 10, 5, 0))
	require.Equal(t, 10, ks.Evict(AllKeysRandom, 10, 5, 0))
	require.Equal(t, 990, ks.Len())
	require.Equal(t, 990, ks.Evict(AllKeysRandom, 2000, 5, 0))
	require.Equal(t, 0, ks.Len())
	require.Equal(t, int64(1000), ks.EvictedTotal())
}
