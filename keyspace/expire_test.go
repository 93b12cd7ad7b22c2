package keyspace

import (
	"fmt"
	"hash/maphash"
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

	// Nothing has expired yet: a sample per shard, nothing removed.
	removed, done := ks.ExpireStep(99, 1e6)
	require.Zero(t, removed)
	require.True(t, done)
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

	// Once the rest expires, a round removes all of it: the rest of the round in progress
	// and one whole round, whatever the budget spent before.
	removed = 0
	for range 2 {
		r, done := ks.ExpireStep(1000, 1e9)
		require.True(t, done, "a big budget completes the round")
		removed += r
	}
	require.Equal(t, later, removed)
	require.Equal(t, forever, ks.Len())
	require.Equal(t, 0, ks.Expires())
	require.Equal(t, int64(idle+later), ks.ExpiredTotal())
	checkInvariants(t, ks)
}

func TestExpireCycleRespectsMaxWork(t *testing.T) {
	// Two shards of about 1,500 keys: a call of more than lockWork takes a shard's lock
	// more than once.
	const keys = 3000
	for _, maxWork := range []int{-1, 0, 1, 5, 19, 20, 21, 333, lockWork + 1, 2500, keys - 1, keys, 5000} {
		t.Run(fmt.Sprint(maxWork), func(t *testing.T) {
			ks := New(2)
			for i := range keys {
				set(ks, fmt.Sprint(i), Value{Kind: GCRA, Expire: 10})
			}
			removed, done := ks.ExpireStep(10, maxWork)
			// Every key examined has expired, so that the work done is the keys removed.
			require.Equal(t, min(max(0, maxWork), keys), removed)
			require.Equal(t, maxWork >= keys, done)
			require.Equal(t, keys-removed, ks.Len())
			checkInvariants(t, ks)
		})
	}
}

// setExpiries gives the keys of each shard, in the order active expiry walks them from the
// start (index order), the expiry exp(rank). Every key must have an expiry already.
func setExpiries(ks *Keyspace, exp func(rank int) int64) {
	for _, s := range ks.shards {
		s.Lock()
		rank := 0
		for _, e := range s.index {
			if e != 0 {
				putInt(s.entry(uint32(e)-1), eFields, exp(rank)) // Expire comes first
				rank++
			}
		}
		s.Unlock()
	}
}

// expiredAt10 is the expiry of a key that has expired at 10 or not at 10.
func expiredAt10(expired bool) int64 {
	if expired {
		return 10
	}
	return 1000
}

// fillExpiring stores n GCRA keys k0, k1... expiring at 1000.
func fillExpiring(ks *Keyspace, n int) {
	for i := range n {
		set(ks, fmt.Sprint("k", i), Value{Kind: GCRA, Expire: 1000})
	}
}

func TestExpireStepFewExpiredCostsOneSample(t *testing.T) {
	// Every twentieth key in each shard expired: every sample holds one, which is acceptable.
	// A round costs a sample per shard however big the shards are: at 256 shards, the 5,120
	// record ids a cycle examined at most before.
	const shards = 16
	ks := New(shards)
	fillExpiring(ks, 100_000)
	setExpiries(ks, func(rank int) int64 { return expiredAt10(rank%20 == 19) })
	removed, done := ks.ExpireStep(10, shards*sampleSize-1)
	require.False(t, done, "one key short of a sample per shard")
	r, done := ks.ExpireStep(10, 1)
	require.True(t, done)
	require.Equal(t, shards, removed+r, "the twentieth key of each shard")
	for round := range 3 {
		// The walk goes on where it stopped. A removal may move the keys after it a
		// little, so that a sample holds none of the expired keys or two: still one sample.
		removed, done := ks.ExpireStep(10, shards*sampleSize)
		require.True(t, done, "round %d", round)
		require.LessOrEqual(t, removed, 2*shards, "round %d", round)
	}
	checkInvariants(t, ks)
}

func TestExpireStepCleansMostlyExpiredShards(t *testing.T) {
	// 90% expired: every sample goes on, and one round removes every expired key, in steps
	// that each examine maxWork keys, each key once but for a few (see TestExpireLockedSampling).
	tests := []struct {
		shards, keys int
	}{{1, 100_000}, {16, 160_000}, {256, 200_000}}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.shards, " shards"), func(t *testing.T) {
			ks := New(tc.shards)
			for i := range tc.keys {
				exp := int64(10)
				if i%10 == 0 {
					exp = 1000
				}
				set(ks, fmt.Sprint("k", i), Value{Kind: GCRA, Expire: exp})
			}
			const maxWork = 1000
			removed, steps := 0, 0
			for done := false; !done; steps++ {
				var r int
				r, done = ks.ExpireStep(10, maxWork)
				removed += r
				require.LessOrEqual(t, steps, tc.keys*101/100/maxWork, "a round examines each key about once")
			}
			require.Equal(t, tc.keys*9/10, removed)
			require.Equal(t, tc.keys/10, ks.Len())
			require.Equal(t, int64(removed), ks.ExpiredTotal())
			for i := 0; i < tc.keys; i += 10 {
				require.True(t, stored(ks, fmt.Sprint("k", i)))
			}
			checkInvariants(t, ks)
		})
	}
}

func TestExpireLockedSampling(t *testing.T) {
	tests := []struct {
		name        string
		expired     func(rank int) bool
		wantRemoved int
		wantWork    int
		wholeShard  bool
	}{
		{"none expired: one sample", func(int) bool { return false }, 0, sampleSize, false},
		{"the twentieth expired: one sample", func(r int) bool { return r == sampleSize-1 }, 1, sampleSize, false},
		{"half expired: the whole shard", func(r int) bool { return r%2 == 0 }, 2500, 5000, true},
		{"90% expired: the whole shard", func(r int) bool { return r%10 != 0 }, 4500, 5000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ks := New(1)
			fillExpiring(ks, 5000)
			setExpiries(ks, func(rank int) int64 { return expiredAt10(tc.expired(rank)) })
			s := ks.shards[0]
			s.Lock()
			var r expireRound
			removed, work, done := s.expireLocked(10, 1e6, &r)
			s.Unlock()
			require.True(t, done)
			require.Equal(t, tc.wantRemoved, removed)
			if tc.wholeShard {
				// A key examined at the start of the pass, in the first slots of the index
				// because the run of its home reached the end, moves back to the end when a
				// key there is removed: it is examined again.
				require.GreaterOrEqual(t, work, tc.wantWork)
				require.LessOrEqual(t, work, tc.wantWork+10)
			} else {
				require.Equal(t, tc.wantWork, work)
			}
			require.Equal(t, int64(removed), ks.ExpiredTotal())
			checkInvariants(t, ks)
		})
	}
}

func TestExpireLockedResumesAcrossBudgets(t *testing.T) {
	// Calls of a few keys each do what one call does, key by key: the round carries the
	// sample in progress, the sweep the position, and the index keeps its size between
	// them, however many keys go, until the shard is done.
	build := func(seed maphash.Seed) *Shard {
		ks := New(1)
		ks.seed, ks.shards[0].seed = seed, seed // the same index as the other keyspace's
		for i := range 3000 {
			exp := int64(1000)
			if i < 2000 || i%20 == 0 {
				exp = 10
			}
			set(ks, fmt.Sprint(i), Value{Kind: GCRA, Expire: exp})
		}
		return ks.shards[0]
	}
	round := func(s *Shard, budget int) (removed, work int) {
		var r expireRound
		for done := false; !done; {
			s.Lock()
			var rm, w int
			rm, w, done = s.expireLocked(10, budget, &r)
			s.Unlock()
			require.LessOrEqual(t, w, budget)
			require.True(t, done || w == budget, "a call stops early only when the shard is done")
			removed, work = removed+rm, work+w
		}
		return removed, work
	}
	seed := maphash.MakeSeed()
	whole := build(seed)
	wantRemoved, wantWork := round(whole, 1e6)
	for _, budget := range []int{1, 3, 7, sampleSize, 999} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			s := build(seed)
			removed, work := round(s, budget)
			require.Equal(t, wantRemoved, removed)
			require.Equal(t, wantWork, work)
			require.Equal(t, whole.sweep, s.sweep, "the next round goes on from the same place")
			require.Equal(t, whole.index, s.index)
		})
	}
}

func TestExpireLockedBoundsSamplesWithoutExpiry(t *testing.T) {
	// 10 keys with an expiry among 4,000 without: a round examines one sample of
	// sampleWork keys and leaves the shard; the next round goes on from there.
	ks := New(1)
	const plain = 10 * sampleWork
	for i := range plain {
		set(ks, fmt.Sprint("p", i), Value{Kind: String, Bytes: []byte("v")})
	}
	for i := range 10 {
		set(ks, fmt.Sprint("e", i), Value{Kind: GCRA, Expire: 10})
	}
	s := ks.shards[0]
	round := func(now int64) (removed, work int) {
		var r expireRound
		s.Lock()
		defer s.Unlock()
		removed, work, done := s.expireLocked(now, 1e6, &r)
		require.True(t, done)
		return removed, work
	}
	for range 3 {
		removed, work := round(9)
		require.Zero(t, removed)
		require.Equal(t, sampleWork, work)
	}
	// Once they expire, the rounds reach every one of them within a lap of the index.
	removed := 0
	for rounds := 0; removed < 10; rounds++ {
		require.Less(t, rounds, plain/sampleWork+2)
		r, _ := round(10)
		removed += r
	}
	require.Equal(t, plain, ks.Len())
}

func TestExpireCycleSkipsShardsWithoutExpiry(t *testing.T) {
	ks := New(8)
	for i := range 1000 {
		set(ks, fmt.Sprint(i), Value{Kind: String, Bytes: []byte("x")})
	}
	// Without keys that expire, a round costs no work at all.
	removed, done := ks.ExpireStep(5, 0)
	require.True(t, done)
	require.Zero(t, removed)
	set(ks, "e", Value{Kind: GCRA, Expire: 5})
	// One shard holds keys that expire; the round reaches it whatever its budget is spent on.
	removed, done = ks.ExpireStep(5, 1e9)
	require.True(t, done)
	require.Equal(t, 1, removed)
	require.Equal(t, 1000, ks.Len())
}
