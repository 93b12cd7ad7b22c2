package keyspace

// CountLookup counts a command's read of a key after GetLocked: a hit when the key was
// there, a miss when not (INFO's keyspace_hits and keyspace_misses). As Redis, only the
// lookups of commands that read count, not a write's look at a key. The counters are
// plain fields under the shard's lock, which the lookup holds anyway.
func (s *Shard) CountLookup(hit bool) {
	if hit {
		s.hits++
	} else {
		s.misses++
	}
}

// Lookups returns the hits and misses CountLookup counted since New; Flush keeps them, as
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
