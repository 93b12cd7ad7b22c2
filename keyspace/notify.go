package keyspace

import "github.com/throttledhq/throttled/notify"

// SetNotifier makes the keyspace fire, through n, the keyspace events it causes itself, as
// Redis's db.c, expire.c and evict.c do: "expired" for a key removed because it expired
// (lazily, by a lookup, or actively, by ExpireStep), "evicted" for a key Evict removed, and
// "new" for a key SetLocked created. They fire under the shard's lock, so that they reach
// subscribers in the order of the key's writes. The server's records (policies, function
// libraries) fire nothing. Call it before the keyspace is used; with every class off each
// such removal or creation costs one atomic load.
func (ks *Keyspace) SetNotifier(n *notify.Notifier) {
	for _, s := range ks.shards {
		s.events = n
	}
}

// fire fires event, of class c, on key when c is on; the test is inline.
func (s *Shard) fire(c notify.Class, event string, key []byte) {
	if s.events != nil && s.events.On(c) {
		s.events.Send(event, key)
	}
}

// fireEntry is fire for the key of entry e, unless e is one of the server's records.
func (s *Shard) fireEntry(c notify.Class, event string, e []byte) {
	if s.events != nil && s.events.On(c) {
		if k := Kind(e[0] & hdrKind); k != Policies && k != Functions {
			s.events.Send(event, s.keyIn(e))
		}
	}
}
