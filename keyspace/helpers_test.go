package keyspace

import (
	"bytes"
	"fmt"
	"math/bits"
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
	_, id, ok := s.find([]byte(key), s.hash([]byte(key)))
	require.True(t, ok, "key %q not stored", key)
	return id
}

// checkInvariants verifies every shard's internal structures against each other.
func checkInvariants(t testing.TB, ks *Keyspace) {
	t.Helper()
	for _, s := range ks.shards {
		s.Lock()
		err := s.check()
		s.Unlock()
		require.NoError(t, err, "shard %d", s.ord)
	}
}

func (s *Shard) check() error {
	// Records in use, chunk by chunk.
	used, withExp, live, flagged, big := 0, 0, 0, 0, 0
	inUse := map[uint32]bool{}
	for c, ch := range s.chunks {
		m := s.meta[c]
		free := 0
		for w, b := range m.free {
			if w == chunkWords-1 && b>>(chunkLen%64) != 0 {
				return fmt.Errorf("chunk %d: free bits past the end", c)
			}
			free += bits.OnesCount64(b)
		}
		if chunkLen-free != m.used {
			return fmt.Errorf("chunk %d: used %d, bitmap says %d", c, m.used, chunkLen-free)
		}
		if (ch == nil) != (m.used == 0) {
			return fmt.Errorf("chunk %d: nil %v with %d used", c, ch == nil, m.used)
		}
		availBit := s.avail[c/64]&(1<<(c%64)) != 0
		if availBit != (m.used < chunkLen) {
			return fmt.Errorf("chunk %d: avail bit %v with %d used", c, availBit, m.used)
		}
		for slot := range chunkLen {
			if s.isFree(c, slot) {
				if ch != nil && ch[slot] != (record{}) {
					return fmt.Errorf("chunk %d slot %d: free record not zero", c, slot)
				}
				continue
			}
			id := uint32(c*chunkLen + slot)
			inUse[id] = true
			used++
			r := &ch[slot]
			if r.expire() != 0 {
				withExp++
			}
			off := int(r.key)
			if off >= len(s.arena) {
				return fmt.Errorf("record %d: entry offset %d past arena %d", id, off, len(s.arena))
			}
			live += s.entrySizeAt(off)
			if s.arena[off]&hdrBytes != 0 {
				flagged++
				if len(s.vals[id]) == 0 {
					return fmt.Errorf("record %d: hdrBytes without a value", id)
				}
			}
			if klen, _ := uvarint(s.arena[off+1:]); klen > maxInlineKey {
				big++
				if len(s.big[id]) != klen {
					return fmt.Errorf("record %d: big key of %d bytes, want %d", id, len(s.big[id]), klen)
				}
			}
			if s.arena[off]&hdrWide != 0 && s.value(id, r).Num2 == 0 {
				return fmt.Errorf("record %d: wide entry with Num2 0", id)
			}
		}
	}
	if n := len(s.chunks); n > 0 && s.chunks[n-1] == nil {
		return fmt.Errorf("trailing nil chunk")
	}
	for w := len(s.chunks); w < len(s.avail)*64; w++ {
		if s.avail[w/64]&(1<<(w%64)) != 0 {
			return fmt.Errorf("avail bit %d past the chunks", w)
		}
	}
	if len(s.vals) != flagged {
		return fmt.Errorf("%d values, %d flagged", len(s.vals), flagged)
	}
	if len(s.big) != big {
		return fmt.Errorf("%d big keys, %d entries say big", len(s.big), big)
	}
	if used != s.count || int64(used) != s.keys.Load() {
		return fmt.Errorf("%d records used, count %d, keys %d", used, s.count, s.keys.Load())
	}
	if int64(withExp) != s.expires.Load() {
		return fmt.Errorf("%d records with expiry, counter %d", withExp, s.expires.Load())
	}
	if live+s.dead != len(s.arena) {
		return fmt.Errorf("arena %d bytes, %d live + %d dead", len(s.arena), live, s.dead)
	}
	// The index: every record exactly once, reachable from its home without a gap.
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
		id := uint32(e) - 1
		if !inUse[id] {
			return fmt.Errorf("slot %d: record %d not in use", i, id)
		}
		delete(inUse, id)
		h := uint32(e >> 32)
		if h != s.hash(s.keyOf(id)) {
			return fmt.Errorf("slot %d: hash does not match key %q", i, s.keyOf(id))
		}
		for j := home(h, n); j != i; j = (j + 1) % n {
			if s.index[j] == 0 {
				return fmt.Errorf("slot %d: gap at %d on the probe from home", i, j)
			}
		}
	}
	if seen != s.count || len(inUse) != 0 {
		return fmt.Errorf("index holds %d keys, count %d, %d records unindexed", seen, s.count, len(inUse))
	}
	return nil
}
