package keyspace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/throttledhq/throttled/notify"
)

// Policy is a maxmemory-policy: which keys Evict removes when the keyspace holds more than
// the server allows.
type Policy int

// The policies, with Redis's names.
const (
	// NoEviction removes nothing: the server refuses commands that add data instead.
	NoEviction Policy = iota
	// VolatileTTL removes the keys with an expiry that expire soonest: for a rate limiter,
	// the keys nearest to idle, whose state would soon be gone anyway.
	VolatileTTL
	// AllKeysLRU removes the keys least recently used, approximated by sampling.
	AllKeysLRU
	// VolatileLRU is AllKeysLRU among the keys with an expiry.
	VolatileLRU
	// AllKeysRandom removes keys at random.
	AllKeysRandom
	// VolatileRandom removes keys with an expiry at random.
	VolatileRandom
)

var policyNames = []string{"noeviction", "volatile-ttl", "allkeys-lru", "volatile-lru", "allkeys-random", "volatile-random"}

// ParsePolicy reads a policy by its Redis name, in any case.
func ParsePolicy(name string) (Policy, error) {
	for i, n := range policyNames {
		if strings.EqualFold(n, name) {
			return Policy(i), nil
		}
	}
	return 0, fmt.Errorf("%q is not one of %s", name, strings.Join(policyNames, ", "))
}

func (p Policy) String() string { return policyNames[p] }

// volatile reports whether p chooses among the keys with an expiry only.
func (p Policy) volatile() bool { return p == VolatileTTL || p == VolatileLRU || p == VolatileRandom }

// LRU reports whether p orders keys by their last access (the access clock, clock.go).
func (p Policy) LRU() bool { return p == AllKeysLRU || p == VolatileLRU }

// Eviction samples, as Redis's: each key evicted is the best of samples keys drawn at random
// from one shard. A draw looks at random slots of the index until one holds a key the policy
// may remove, at most evictTries slots per sample key, so that a shard whose keys mostly have
// no expiry costs little for the volatile policies. Random slots, not a walk from one, keep
// the draw fair: a walk would take the key after a run of empty slots more often than
// others, and the holes its removals leave would grow.
const evictTries = 16

// Evict removes up to n keys chosen by p, each the best of samples keys sampled in a random
// shard: for VolatileTTL the one expiring first, for the LRU policies the one used least
// recently (by the second: then the one expiring first), for the random ones any. Keys that
// have expired at now go first whatever the policy. It returns the keys removed: fewer than n when none is left to choose (no key, or
// none with an expiry for the volatile policies), and none for NoEviction. Removals reach
// persistence and replicas as deletions, as Redis propagates its evictions.
func (ks *Keyspace) Evict(p Policy, n, samples int, now int64) int {
	if p == NoEviction || n <= 0 {
		return 0
	}
	samples = max(samples, 1)
	removed := 0
	for removed < n {
		start := rand.Uint64()
		found := false
		// Try the shards from a random one on until one has a key to give.
		for k := 0; k < len(ks.shards); k++ {
			s := ks.shards[(int(start)+k)&int(ks.mask)]
			if s.keys.Load() == 0 || p.volatile() && s.expires.Load() == 0 {
				continue
			}
			s.mu.Lock()
			ok := s.evictLocked(p, samples, now)
			s.Unlock()
			if ok {
				found = true
				break
			}
		}
		if !found {
			break
		}
		removed++
	}
	return removed
}

// evictLocked removes the best of up to samples keys drawn from the shard's index at random;
// false when it found none that p may remove.
func (s *Shard) evictLocked(p Policy, samples int, now int64) bool {
	n := len(s.index)
	if s.count == 0 || n == 0 {
		return false
	}
	best, bestOff := -1, uint32(0)
	bestScore, bestTie := int64(math.MaxInt64), int64(math.MaxInt64)
	seen := 0
	for try := 0; try < samples*evictTries && seen < samples; try++ {
		j := home(uint32(rand.Uint64()), n)
		slot := s.index[j]
		if slot == 0 {
			continue
		}
		off := uint32(slot) - 1
		e := s.entry(off)
		exp := expireOf(e)
		if p.volatile() && exp == 0 {
			continue
		}
		if k := Kind(e[0] & hdrKind); k == Policies || k == Functions {
			continue // the server's records: evicting one would drop every policy or function
		}
		seen++
		var score, tie int64 // the lowest goes
		switch {
		case exp != 0 && now >= exp:
			score = math.MinInt64
		case p == VolatileTTL:
			score = exp
		case p.LRU():
			// The longest idle has the lowest. The clock counts seconds, as Redis's: among
			// keys used in the same second, the one expiring first goes (a key without an
			// expiry last), so that under a flood of new keys a busy limit stays.
			score, tie = -s.idleOf(e), exp
			if exp == 0 {
				tie = math.MaxInt64
			}
		}
		if best < 0 || score < bestScore || score == bestScore && tie < bestTie {
			best, bestOff, bestScore, bestTie = j, off, score, tie
		}
	}
	if best < 0 {
		return false
	}
	s.fireEntry(notify.Evicted, "evicted", s.entry(bestOff))
	s.remove(best, bestOff)
	s.evicted.Add(1)
	return true
}

// EvictedTotal returns the keys Evict removed since New (INFO stats evicted_keys).
func (ks *Keyspace) EvictedTotal() int64 {
	n := int64(0)
	for _, s := range ks.shards {
		n += s.evicted.Load()
	}
	return n
}

// UsedMemory returns the bytes the keyspace holds for its keys, as maxmemory counts them:
// MemoryUsage less the bytes of removed entries that the arenas have not compacted yet
// (a block is compacted once more than half of it is dead), as Redis's used_memory leaves
// out its allocator's fragmentation, and less the change trackers' (TrackingMemory), as
// Redis leaves its AOF and replica buffers out of maxmemory: every eviction adds its key
// to them until persistence drains them, and counted they would make eviction chase its
// own tail until no key is left. The heap the keyspace takes is at most about twice this,
// plus the Go runtime's overhead and TrackingMemory. It locks each shard in turn.
func (ks *Keyspace) UsedMemory() int64 {
	n := int64(0)
	for _, s := range ks.shards {
		s.mu.Lock()
		n += s.memoryLocked() - int64(s.trackerMemory())
		for _, m := range s.meta {
			n -= int64(m.dead)
		}
		s.Unlock()
	}
	return n
}

// TrackingMemory returns the bytes the change trackers of persistence and replication hold
// (track.go), which maxmemory does not count (INFO mem_not_counted_for_evict). At most
// about 256 KiB a shard and feed of deleted keys, plus the record ids of changed keys.
func (ks *Keyspace) TrackingMemory() int64 {
	n := int64(0)
	for _, s := range ks.shards {
		s.mu.Lock()
		n += int64(s.trackerMemory())
		s.Unlock()
	}
	return n
}
