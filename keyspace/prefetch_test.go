package keyspace

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Prefetch reads and changes nothing: keys present or not, an empty keyspace, a shard
// locked by its caller (passed over: TryLock, so no deadlock), keys of every shard.
func TestPrefetchChangesNothing(t *testing.T) {
	New(4).Prefetch([][]byte{[]byte("a"), nil})

	ks := New(4)
	var keys [][]byte
	for i := range 200 {
		k := fmt.Appendf(nil, "k%d", i)
		keys = append(keys, k)
		if i%2 == 0 {
			s := ks.Shard(k)
			s.Lock()
			s.SetLocked(k, Value{Kind: String, Bytes: k, Expire: int64(i)})
			s.Unlock()
		}
	}
	held := ks.Shard(keys[0])
	held.Lock()
	ks.Prefetch(keys)
	held.Unlock()
	ks.Prefetch(keys)

	require.Equal(t, 100, ks.Len())
	for i, k := range keys {
		s := ks.Shard(k)
		s.Lock()
		v, ok := s.GetLocked(k, 0)
		require.Equal(t, i%2 == 0, ok, "key %s", k)
		if ok {
			require.Equal(t, string(k), string(v.Bytes))
			require.Equal(t, int64(i), v.Expire)
		}
		s.Unlock()
	}
}
