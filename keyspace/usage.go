package keyspace

// MEMORY USAGE's figure: what one key costs the shard that holds it, counted as
// memoryLocked counts the whole shard, so that the keys' usages add up to about
// UsedMemory.

// bytesSlot and objSlot are what a map entry of vals or big, and of objs, cost besides what
// they point at: the id, the slice header or interface and a control byte, at about 7/8
// load (memoryLocked).
const (
	bytesSlot = (4 + 24 + 1) * 8 / 7
	objSlot   = (4 + 16 + 1) * 8 / 7
)

// keySlots is the index and ids' share of one key: an 8-byte index slot at the load
// targetIndex keeps (4/7), and a 4-byte record id.
const keySlots = 8*7/4 + 4

// UsageLocked returns the bytes key and its value take in the shard: its entry in the
// arena, its share of the index and record ids, and what it keeps outside the arena (a key
// longer than maxInlineKey, a byte value longer than maxInlineValue, an object's footprint);
// false when the key does not exist or has expired at now, which it leaves in place.
func (s *Shard) UsageLocked(key []byte, now int64) (int64, bool) {
	_, off, ok := s.find(key, s.hash(key))
	if !ok {
		return 0, false
	}
	e := s.entry(off)
	if exp := expireOf(e); exp != 0 && now >= exp {
		return 0, false
	}
	n := sizeOf(e) + keySlots
	id := getID(e)
	if k, ok := s.big[id]; ok {
		n += cap(k) + bytesSlot
	}
	if inVals(e) {
		if b, ok := s.vals[id]; ok {
			n += cap(b) + bytesSlot
		} else if o := s.objs[id]; o != nil {
			n += o.Footprint() + objSlot
		}
	}
	return int64(n), true
}

// IndexMemory returns the bytes of the shards' indexes and record ids, what finds a key:
// MEMORY STATS's overhead.hashtable.main, as Redis's main dict's table and entries. It
// locks each shard in turn.
func (ks *Keyspace) IndexMemory() int64 {
	n := int64(0)
	for _, s := range ks.shards {
		s.mu.Lock()
		n += int64(8*cap(s.index) + 4*cap(s.ids) + 8*cap(s.freeIDs) + 8*cap(s.freeSum))
		s.Unlock()
	}
	return n
}
