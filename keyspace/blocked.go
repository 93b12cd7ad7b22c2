package keyspace

import (
	"sync"
	"sync/atomic"
)

// Blocked keys serve Redis's blocking commands (BLPOP, BZPOPMIN...): a client that waits
// on a key registers it on the key's shard (BlockLocked), and a write to such a key
// (SetLocked) puts it on the keyspace's ready list, which the server takes (TakeReady)
// once the writing command, transaction or script is over, to serve the clients waiting
// on it. A shard keeps the blocked keys in a map that is nil while nobody waits: a write
// then costs one nil test.

// readyList is the keys written since the server last took them that clients wait on.
type readyList struct {
	mu   sync.Mutex // guards keys; taken under a shard's lock, and takes no other
	keys [][]byte
	any  atomic.Bool // keys is not empty
}

// BlockLocked registers a client waiting on key.
func (s *Shard) BlockLocked(key []byte) {
	if s.blocked == nil {
		s.blocked = make(map[string]int)
	}
	s.blocked[string(key)]++
}

// UnblockLocked ends a registration of BlockLocked.
func (s *Shard) UnblockLocked(key []byte) {
	switch n := s.blocked[string(key)]; {
	case n > 1:
		s.blocked[string(key)] = n - 1
	case len(s.blocked) <= 1:
		s.blocked = nil
	default:
		delete(s.blocked, string(key))
	}
}

// signal puts key on the ready list when a client waits on it; the caller checked
// s.blocked != nil.
func (s *Shard) signal(key []byte) {
	if s.blocked[string(key)] > 0 {
		s.ready.add(key)
	}
}

func (r *readyList) add(key []byte) {
	r.mu.Lock()
	for _, k := range r.keys {
		if string(k) == string(key) {
			r.mu.Unlock()
			return
		}
	}
	r.keys = append(r.keys, []byte(string(key)))
	r.any.Store(true)
	r.mu.Unlock()
}

// MarkReady puts key on the ready list, as a write to it would: a client that has just
// registered checks the keys it waits on, which may have been written meanwhile.
func (ks *Keyspace) MarkReady(key []byte) { ks.ready.add(key) }

// AnyReady reports whether the ready list has keys: one atomic load.
func (ks *Keyspace) AnyReady() bool { return ks.ready.any.Load() }

// TakeReady returns the keys on the ready list, in the order they were written, and
// empties it.
func (ks *Keyspace) TakeReady() [][]byte {
	ks.ready.mu.Lock()
	defer ks.ready.mu.Unlock()
	keys := ks.ready.keys
	ks.ready.keys = nil
	ks.ready.any.Store(false)
	return keys
}
