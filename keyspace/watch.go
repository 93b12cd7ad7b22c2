package keyspace

import "sync/atomic"

// Watches serve Redis's WATCH: a client registers a Watch on keys, and any write to one of
// them afterwards (set, delete, expiry, FLUSHALL) marks the Watch changed, so that its EXEC
// fails. A shard keeps the watched keys in a map that is nil while nobody watches: a write
// then costs one nil test.

// A Watch is one client's WATCH over any number of keys.
type Watch struct {
	changed atomic.Bool
}

// Changed reports whether a watched key was written since the Watch was last Reset.
func (w *Watch) Changed() bool { return w.changed.Load() }

// Reset clears Changed, for a Watch used again after its keys are unwatched.
func (w *Watch) Reset() { w.changed.Store(false) }

// WatchLocked registers w on key. To watch a key that may have expired, call GetLocked on it
// first: its removal then happens before the Watch, as it logically did.
func (s *Shard) WatchLocked(key []byte, w *Watch) {
	if s.watchers == nil {
		s.watchers = make(map[string][]*Watch)
	}
	s.watchers[string(key)] = append(s.watchers[string(key)], w)
}

// UnwatchLocked removes w's registration on key, if any.
func (s *Shard) UnwatchLocked(key []byte, w *Watch) {
	ws := s.watchers[string(key)]
	for i, x := range ws {
		if x == w {
			ws[i] = ws[len(ws)-1]
			ws = ws[:len(ws)-1]
			break
		}
	}
	switch {
	case len(ws) > 0:
		s.watchers[string(key)] = ws
	case len(s.watchers) == 1:
		s.watchers = nil
	default:
		delete(s.watchers, string(key))
	}
}

// touch marks the Watches on key changed; the caller checked s.watchers != nil.
func (s *Shard) touch(key []byte) {
	for _, w := range s.watchers[string(key)] {
		w.changed.Store(true)
	}
}

// touchAllLocked marks changed the Watches on every watched key that is stored: the shard is
// about to be emptied.
func (s *Shard) touchAllLocked() {
	for k, ws := range s.watchers {
		if _, _, ok := s.find([]byte(k), s.hash([]byte(k))); ok {
			for _, w := range ws {
				w.changed.Store(true)
			}
		}
	}
}
