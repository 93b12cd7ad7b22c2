package keyspace

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBlockedKeysReady: a write to a key a client waits on puts it on the ready list,
// once however often it is written, in the order written; other keys and deletes don't.
func TestBlockedKeysReady(t *testing.T) {
	ks := New(4)
	block := func(key string, on bool) {
		s := ks.Shard([]byte(key))
		s.Lock()
		if on {
			s.BlockLocked([]byte(key))
		} else {
			s.UnblockLocked([]byte(key))
		}
		s.Unlock()
	}
	v := Value{Kind: List, Bytes: []byte("x")}
	block("a", true)
	block("b", true)
	block("b", true)
	set(ks, "other", v)
	require.False(t, ks.AnyReady())
	set(ks, "b", v)
	set(ks, "a", v)
	set(ks, "b", v)
	del(ks, "a")
	require.True(t, ks.AnyReady())
	require.Equal(t, [][]byte{[]byte("b"), []byte("a")}, ks.TakeReady())
	require.False(t, ks.AnyReady())

	block("a", false)
	block("b", false)
	set(ks, "a", v)
	set(ks, "b", v)
	require.Equal(t, [][]byte{[]byte("b")}, ks.TakeReady(), "b has a waiter left")
	block("b", false)
	set(ks, "b", v)
	require.False(t, ks.AnyReady())
	ks.MarkReady([]byte("c"))
	require.Equal(t, [][]byte{[]byte("c")}, ks.TakeReady())
}
