package keyspace

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// watch registers w on key, locking its shard.
func watch(ks *Keyspace, key string, w *Watch) {
	s := ks.Shard([]byte(key))
	s.Lock()
	s.WatchLocked([]byte(key), w)
	s.Unlock()
}

func unwatch(ks *Keyspace, key string, w *Watch) {
	s := ks.Shard([]byte(key))
	s.Lock()
	s.UnwatchLocked([]byte(key), w)
	s.Unlock()
}

func TestWatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		write   func(ks *Keyspace)
		changed bool
	}{
		{"a new key", func(ks *Keyspace) { set(ks, "k", Value{Kind: String, Bytes: []byte("v")}) }, true},
		{"a replaced key", func(ks *Keyspace) {
			set(ks, "old", Value{Kind: GCRA, Num: 2})
		}, true},
		{"a byte value moved", func(ks *Keyspace) {
			set(ks, "str", Value{Kind: String, Bytes: make([]byte, 600)})
		}, true},
		{"a deletion", func(ks *Keyspace) { del(ks, "old") }, true},
		{"a deletion of a missing key", func(ks *Keyspace) { del(ks, "k") }, false},
		{"lazy expiry", func(ks *Keyspace) { get(ks, "expiring", 200) }, true},
		{"active expiry", func(ks *Keyspace) {
			for _, done := ks.ExpireStep(200, 1000); !done; _, done = ks.ExpireStep(200, 1000) {
			}
		}, true},
		{"a flush", func(ks *Keyspace) { ks.Flush() }, true},
		{"another key", func(ks *Keyspace) { set(ks, "other", Value{Kind: GCRA, Num: 1}) }, false},
		{"a read", func(ks *Keyspace) { get(ks, "old", 0) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := New(1) // one shard: other keys share it
			set(ks, "old", Value{Kind: GCRA, Num: 1})
			set(ks, "str", Value{Kind: String, Bytes: []byte("short")})
			set(ks, "expiring", Value{Kind: GCRA, Num: 1, Expire: 100})
			var w Watch
			for _, k := range []string{"k", "old", "str", "expiring"} {
				watch(ks, k, &w)
			}
			tc.write(ks)
			require.Equal(t, tc.changed, w.Changed())
		})
	}
}

func TestUnwatch(t *testing.T) {
	ks := New(1)
	var a, b Watch
	watch(ks, "k", &a)
	watch(ks, "k", &b)
	unwatch(ks, "k", &a)
	set(ks, "k", Value{Kind: GCRA, Num: 1})
	require.False(t, a.Changed())
	require.True(t, b.Changed())
	b.Reset()
	require.False(t, b.Changed())
	unwatch(ks, "k", &b)
	unwatch(ks, "nothing", &b) // unwatching what was never watched is harmless
	require.Nil(t, ks.shards[0].watchers, "no watchers: writes skip the map")
}
