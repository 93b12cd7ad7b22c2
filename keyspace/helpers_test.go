package keyspace

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// set stores v at key, locking its shard.
func set(ks *Keyspace, key string, v Value) {
	s := ks.Shard([]byte(key))
	s.Lock()
	s.SetLocked([]byte(key), v)
	s.Unlock()
}

// get reads key at now, locking its shard; Bytes are copied.
func get(ks *Keyspace, key string, now int64) (Value, bool) {
	s := ks.Shard([]byte(key))
	s.Lock()
	defer s.Unlock()
	v, ok := s.GetLocked([]byte(key), now)
	v.Bytes = bytes.Clone(v.Bytes)
	return v, ok
}

// del deletes key, locking its shard.
func del(ks *Keyspace, key string) bool {
	s := ks.Shard([]byte(key))
	s.Lock()
	defer s.Unlock()
	return s.DeleteLocked([]byte(key))
}

// stored reports whether key is in the keyspace, expired or not, without expiring it.
func stored(ks *Keyspace, key string) bool {
	s := ks.Shard([]byte(key))
	s.Lock()
	defer s.Unlock()
	_, _, ok := s.find([]byte(key), s.hash([]byte(key)))
	return ok
}

// recordID returns the record id of key, which must be stored.
func recordID(t testing.TB, ks *Keyspace, key string) uint32 {
	t.Helper()
	s := ks.Shard([]byte(key))
	s.Lock()
	defer s.Unlock()
	_, off, ok := s.find([]byte(key), s.hash([]byte(key)))
	require.True(t, ok, "key %q not stored", key)
	return getID(s.entry(off))
}

// checkInvariants verifies every shard's internal structures against each other.
func checkInvariants(t testing.TB, ks *Keyspace) {
	t.Helper()
	for _, s := range ks.shards {
		s.Lock()
		loan := s.loan
		err := s.check()
		s.Unlock()
		require.NoError(t, err, "shard %d", s.ord)
		require.Zero(t, loan, "shard %d: Unlock forgot the bytes lent under the last lock", s.ord)
	}
}

func (s *Shard) check() error {
	// Record ids and their entries.
	live, withExp, flagged, big := 0, 0, 0, 0
	liveAt := map[uint32]bool{}
	for id, off := range s.ids {
		w := id / 64
		freeBit := s.freeIDs[w]&(1<<(id%64)) != 0
		if freeBit != (off == freeID) {
			return fmt.Errorf("id %d: free bit %v, offset %#x", id, freeBit, off)
		}
		if off == freeID {
			continue
		}
		b, at := int(off>>blockShift), int32(off&blockMask)
		if b >= len(s.blocks) || s.blocks[b] == nil || at >= s.meta[b].used {
			return fmt.Errorf("id %d: offset %#x outside the arena", id, off)
		}
		e := s.entry(off)
		if getID(e) != uint32(id) {
			return fmt.Errorf("id %d: entry at %#x says id %d", id, off, getID(e))
		}
		live++
		liveAt[off] = true
		if expireOf(e) != 0 {
			withExp++
		}
		if e[0]&hdrBytes != 0 {
			at := keyEnd(e)
			switch vlen, n := uvarint(e[at:]); {
			case vlen == 0 && s.objs[uint32(id)] != nil:
				flagged++
				if s.vals[uint32(id)] != nil {
					return fmt.Errorf("id %d: an object and bytes in vals", id)
				}
			case vlen == 0:
				flagged++
				if n := len(s.vals[uint32(id)]); n <= maxInlineValue {
					return fmt.Errorf("id %d: a value of %d bytes in vals", id, n)
				}
				if hasRoom(e) {
					return fmt.Errorf("id %d: room after a value in vals", id)
				}
			case vlen > maxInlineValue:
				return fmt.Errorf("id %d: an inline value of %d bytes", id, vlen)
			case hasRoom(e) && int(e[at+n]) > maxRoom:
				return fmt.Errorf("id %d: %d bytes of room", id, e[at+n])
			}
		} else if hasRoom(e) {
			return fmt.Errorf("id %d: room without a value", id)
		}
		if klen, _ := uvarint(e[fixedLen(e):]); klen > maxInlineKey {
			big++
			if len(s.big[uint32(id)]) != klen {
				return fmt.Errorf("id %d: big key of %d bytes, want %d", id, len(s.big[uint32(id)]), klen)
			}
		}
		if _, _, num2 := fields(e); e[0]&hdrWide != 0 && num2 == 0 {
			return fmt.Errorf("id %d: wide entry with Num2 0", id)
		}
		if Kind(e[0]&hdrKind) == None {
			return fmt.Errorf("id %d: Kind None", id)
		}
	}
	if n := len(s.ids); n > 0 && s.ids[n-1] == freeID {
		return fmt.Errorf("free id at the end of ids")
	}
	if len(s.freeIDs) != (len(s.ids)+63)/64 || len(s.freeSum) != (len(s.freeIDs)+63)/64 {
		return fmt.Errorf("%d ids, %d free words, %d summary words", len(s.ids), len(s.freeIDs), len(s.freeSum))
	}
	for w, b := range s.freeIDs {
		if w == len(s.freeIDs)-1 && len(s.ids)%64 != 0 && b>>(len(s.ids)%64) != 0 {
			return fmt.Errorf("free bits past the end of ids")
		}
		if sum := s.freeSum[w/64]&(1<<(w%64)) != 0; sum != (b != 0) {
			return fmt.Errorf("free word %d: summary bit %v", w, sum)
		}
	}
	if len(s.vals)+len(s.objs) != flagged {
		return fmt.Errorf("%d values in vals and objs, %d entries say so", len(s.vals)+len(s.objs), flagged)
	}
	if len(s.big) != big {
		return fmt.Errorf("%d big keys, %d entries say big", len(s.big), big)
	}
	if live != s.count || int64(live) != s.keys.Load() {
		return fmt.Errorf("%d ids used, count %d, keys %d", live, s.count, s.keys.Load())
	}
	if int64(withExp) != s.expires.Load() {
		return fmt.Errorf("%d keys with expiry, counter %d", withExp, s.expires.Load())
	}

	// Blocks: entries back to back, dead bytes accounted, none more than half dead but the tail.
	free := map[int32]bool{}
	for _, b := range s.freeBlocks {
		if free[b] || int(b) >= len(s.blocks) || s.blocks[b] != nil {
			return fmt.Errorf("free block %d listed twice, or not free", b)
		}
		free[b] = true
	}
	if s.tail >= 0 && (s.tail >= len(s.blocks) || s.blocks[s.tail] == nil) {
		return fmt.Errorf("tail %d is no block", s.tail)
	}
	seenLive := 0
	for b, blk := range s.blocks {
		m := s.meta[b]
		if blk == nil {
			if !free[int32(b)] || m != (blockMeta{}) {
				return fmt.Errorf("nil block %d not free or with bytes", b)
			}
			continue
		}
		liveBytes, at := 0, 0
		for at < int(m.used) {
			size := sizeOf(blk[at:m.used])
			if liveAt[uint32(b<<blockShift|at)] {
				liveBytes += size
				seenLive++
			}
			at += size
		}
		if at != int(m.used) {
			return fmt.Errorf("block %d: entries end at %d, used %d", b, at, m.used)
		}
		if int(m.dead) != int(m.used)-liveBytes {
			return fmt.Errorf("block %d: dead %d, used %d, live %d", b, m.dead, m.used, liveBytes)
		}
		if b != s.tail && m.dead*2 > m.used {
			return fmt.Errorf("block %d: %d of %d bytes dead", b, m.dead, m.used)
		}
	}
	if seenLive != live {
		return fmt.Errorf("%d live entries in the blocks, %d ids", seenLive, live)
	}
	if n := len(s.blocks); n > 0 && s.blocks[n-1] == nil {
		return fmt.Errorf("trailing nil block")
	}

	// The index: every live entry exactly once, reachable from its home without a gap.
	n := len(s.index)
	if s.count > 0 && s.count*maxLoadDen > n*maxLoadNum {
		return fmt.Errorf("index of %d slots over load with %d keys", n, s.count)
	}
	seen := 0
	for i, e := range s.index {
		if e == 0 {
			continue
		}
		seen++
		off := uint32(e) - 1
		if !liveAt[off] {
			return fmt.Errorf("slot %d: entry %#x not live", i, off)
		}
		delete(liveAt, off)
		h := uint32(e >> 32)
		if key := s.keyIn(s.entry(off)); h != s.hash(key) {
			return fmt.Errorf("slot %d: hash does not match key %q", i, key)
		}
		for j := home(h, n); j != i; j = (j + 1) % n {
			if s.index[j] == 0 {
				return fmt.Errorf("slot %d: gap at %d on the probe from home", i, j)
			}
		}
	}
	if seen != s.count || len(liveAt) != 0 {
		return fmt.Errorf("index holds %d keys, count %d, %d entries unindexed", seen, s.count, len(liveAt))
	}
	return nil
}
