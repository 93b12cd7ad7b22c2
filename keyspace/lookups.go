package keyspace

// ReadLocked is GetLocked for a command that reads: it also counts the lookup, a hit when
// the key is there, a miss when not (INFO's keyspace_hits and keyspace_misses). As Redis
// counts only its read lookups, the writes' look at a key goes through GetLocked. The
// counters are plain fields under the shard's lock, which the lookup holds anyway.
func (s *Shard) ReadLocked(key []byte, now int64) (Value, bool) {
	v, ok := s.GetLocked(key, now)
	if ok {
		s.hits++
	} else {
		s.misses++
	}
	return v, ok
}

// Lookups returns the hits and misses ReadLocked counted since New; Flush keeps them, as
// FLUSHALL keeps Redis's. It locks each shard in turn.
func (ks *Keyspace) Lookups() (hits, misses int64) {
	for _, s := range ks.shards {
		s.mu.Lock()
		hits += s.hits
		misses += s.misses
		s.mu.Unlock()
	}
	return hits, misses
}

// ResetLookups sets the counters back to zero (CONFIG RESETSTAT).
func (ks *Keyspace) ResetLookups() {
	for _, s := range ks.shards {
		s.mu.Lock()
		s.hits, s.misses = 0, 0
		s.mu.Unlock()
	}
}
