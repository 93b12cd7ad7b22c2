package keyspace

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/throttledhq/throttled/notify"
)

// The access clock serves OBJECT IDLETIME, RESTORE's IDLETIME and the LRU eviction
// policies, as Redis's 24-bit LRU clock does: every entry keeps, in 3 bytes after its
// record id, the second (modulo 2^24, about 194 days) of its last read or write. The
// server sets the clock from its ticker (SetClock); an access compares the entry's 3 bytes
// with it and writes them only when the second changed, under the shard lock it holds
// anyway, so that a read of a hot key dirties nothing and costs a load and a compare.
// An idle time is the clock less the entry's, modulo 2^24: a key idle for longer than the
// clock's lap reads as idle for less, as on Redis.
const (
	clockBits = 24
	clockMask = 1<<clockBits - 1
	// clockMax is the longest idle time the clock can tell, in seconds.
	clockMax = clockMask
)

// SetClock sets the access clock to now (Unix ns). The server calls it from its ticker,
// a few times a second; until the first call the clock reads 0.
func (ks *Keyspace) SetClock(now int64) {
	c := uint32(now/1e9) & clockMask
	if ks.clock.Load() != c {
		ks.clock.Store(c)
	}
}

// clockOf returns entry e's access clock: one load of 4 bytes, the fourth being the first
// of the fields or of the key's length, which every entry has.
func clockOf(e []byte) uint32 {
	return binary.LittleEndian.Uint32(e[eClock:]) & clockMask
}

// putClock writes c as entry e's access clock.
func putClock(e []byte, c uint32) {
	e[eClock], e[eClock+1], e[eClock+2] = byte(c), byte(c>>8), byte(c>>16)
}

// touchClock notes an access to entry e at clock c, writing only when it changed.
func touchClock(e []byte, c uint32) {
	if clockOf(e) != c {
		putClock(e, c)
	}
}

// idleOf returns the seconds since entry e's last access.
func (s *Shard) idleOf(e []byte) int64 {
	return int64((s.clock.Load() - clockOf(e)) & clockMask)
}

// PeekLocked is GetLocked without noting an access: what TYPE, EXISTS, TTL and OBJECT read
// (Redis's LOOKUP_NOTOUCH). An expired key is deleted and reported missing all the same.
func (s *Shard) PeekLocked(key []byte, now int64) (Value, bool) {
	pos, off, ok := s.find(key, s.hash(key))
	if !ok {
		return Value{}, false
	}
	e := s.entry(off)
	if exp := expireOf(e); exp != 0 && now >= exp {
		s.fireEntry(notify.Expired, "expired", e)
		s.remove(pos, off)
		s.expired.Add(1)
		return Value{}, false
	}
	if e[0]&hdrBytes != 0 {
		s.loan |= loanBytes
	}
	return s.value(e), true
}

// IdleLocked returns the seconds since the last read or write of key (OBJECT IDLETIME),
// false when there is no live key; it notes no access.
func (s *Shard) IdleLocked(key []byte, now int64) (int64, bool) {
	if _, ok := s.PeekLocked(key, now); !ok {
		return 0, false
	}
	_, off, _ := s.find(key, s.hash(key))
	return s.idleOf(s.entry(off)), true
}

// SetIdleLocked makes key's last access idle seconds ago (RESTORE ... IDLETIME), and reports
// whether the key is there. An idle time that would put the access before the clock's 0
// becomes half a lap, as on Redis, so that the key stays among the longest idle for a while.
func (s *Shard) SetIdleLocked(key []byte, idle int64) bool {
	_, off, ok := s.find(key, s.hash(key))
	if !ok {
		return false
	}
	c := s.clock.Load()
	at := (c + clockMax/2) & clockMask // Redis's answer when the time would fall below 0
	if idle >= 0 && idle <= int64(c) {
		at = c - uint32(idle)
	}
	putClock(s.entry(off), at)
	return true
}

// RandomKey returns a live key chosen at random (RANDOMKEY), false when there is none. Keys
// that expired at now met on the way are removed. The key is a copy.
func (ks *Keyspace) RandomKey(now int64) ([]byte, bool) {
	start := rand.Uint64()
	for k := 0; k < len(ks.shards); k++ {
		s := ks.shards[(start+uint64(k))&ks.mask]
		if s.keys.Load() == 0 {
			continue
		}
		s.mu.Lock()
		key, ok := s.randomKeyLocked(now)
		s.Unlock()
		if ok {
			return key, true
		}
	}
	return nil, false
}

// randomKeyLocked draws random slots of the shard's index until one holds a live key (the
// server's records aside), removing the expired ones it meets; after randomTries draws that
// found none it walks the index from the last one instead, so that a shard of expired keys
// and records ends.
func (s *Shard) randomKeyLocked(now int64) ([]byte, bool) {
	j, walked := 0, 0
	for try := 0; s.count > 0 && walked < len(s.index); try++ {
		if try < randomTries {
			j = home(uint32(rand.Uint64()), len(s.index))
		} else if j++; j >= len(s.index) {
			j = 0
		}
		if try >= randomTries {
			walked++
		}
		slot := s.index[j]
		if slot == 0 {
			continue
		}
		off := uint32(slot) - 1
		e := s.entry(off)
		if exp := expireOf(e); exp != 0 && now >= exp {
			s.fireEntry(notify.Expired, "expired", e)
			s.removeKeepingIndex(j, off)
			s.expired.Add(1)
			j-- // the slot may hold the next key of its run now
			if try >= randomTries {
				walked-- // and is looked at again: the walk still covers every slot
			}
			continue
		}
		if k := Kind(e[0] & hdrKind); k == Policies || k == Functions {
			continue
		}
		key := append([]byte(nil), s.keyIn(e)...)
		s.fitIndex()
		return key, true
	}
	s.fitIndex()
	return nil, false
}

// randomTries is how many random slots randomKeyLocked draws before it walks.
const randomTries = 32
