package keyspace

import (
	"hash/maphash"
	"unsafe"
)

// Prefetch asks the processor for the memory that lookups of keys are about to read, in
// two passes: every key's index slot, then every found key's entry. The cache misses of a
// batch of requests then overlap instead of each request waiting for its own, as Redis 8
// does for its dictionary (prefetch-batch-max-size). It reads under the shards' locks and
// changes nothing; a shard locked by anyone else is passed over.
func (ks *Keyspace) Prefetch(keys [][]byte) {
	var hashes [prefetchMost]uint64 // each key is hashed once, for both passes
	for len(keys) > 0 {
		batch := keys[:min(len(keys), len(hashes))]
		keys = keys[len(batch):]
		for i, k := range batch {
			h := maphash.Bytes(ks.seed, k)
			hashes[i] = h
			s := ks.shards[h&ks.mask]
			if s.mu.TryLock() {
				if n := len(s.index); n > 0 {
					prefetch(unsafe.Pointer(&s.index[home(uint32(h>>32), n)]))
				}
				s.mu.Unlock()
			}
		}
		for _, h := range hashes[:len(batch)] {
			s := ks.shards[h&ks.mask]
			if s.mu.TryLock() {
				if off, ok := s.probe(uint32(h >> 32)); ok {
					e := s.entry(off)
					prefetch(unsafe.Pointer(&e[0]))
					prefetch(unsafe.Pointer(&e[min(len(e)-1, 63)]))
				}
				s.mu.Unlock()
			}
		}
	}
}

// prefetchMost is the most keys Prefetch hashes at a time: prefetch-batch-max-size's most.
const prefetchMost = 128

// probe returns the offset of the first entry whose slot holds hash h, without reading any
// entry: the one find would compare first.
func (s *Shard) probe(h uint32) (uint32, bool) {
	n := len(s.index)
	if n == 0 {
		return 0, false
	}
	for i := home(h, n); ; {
		e := s.index[i]
		if e == 0 {
			return 0, false
		}
		if uint32(e>>32) == h {
			return uint32(e) - 1, true
		}
		if i++; i == n {
			i = 0
		}
	}
}
