package keyspace

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsageLocked: a key's usage grows with its key and value wherever they are kept (in
// the entry, in vals, in big), a missing or expired key has none, and the keys' usages
// add up to about what MemoryUsage counts for them.
func TestUsageLocked(t *testing.T) {
	ks := New(1)
	sh := ks.Shard(nil)
	usage := func(key string, now int64) (int64, bool) {
		sh.Lock()
		defer sh.Unlock()
		return sh.UsageLocked([]byte(key), now)
	}
	set := func(key string, v Value) {
		sh.Lock()
		defer sh.Unlock()
		sh.SetLocked([]byte(key), v)
	}

	_, ok := usage("missing", 0)
	require.False(t, ok)

	set("small", Value{Kind: String, Bytes: []byte("v")})
	small, ok := usage("small", 0)
	require.True(t, ok)
	require.Equal(t, int64(sizeOfEntry(t, sh, "small")+keySlots), small)

	set("inline", Value{Kind: String, Bytes: bytes.Repeat([]byte("v"), maxInlineValue)})
	inline, _ := usage("inline", 0)
	require.GreaterOrEqual(t, inline, small+maxInlineValue-1)

	set("out", Value{Kind: String, Bytes: bytes.Repeat([]byte("v"), 4000)})
	out, _ := usage("out", 0)
	require.GreaterOrEqual(t, out, int64(4000+bytesSlot))

	long := string(bytes.Repeat([]byte("k"), 2000))
	set(long, Value{Kind: String, Bytes: []byte("v")})
	longKey, _ := usage(long, 0)
	require.GreaterOrEqual(t, longKey, int64(2000+bytesSlot))

	set("obj", Value{Kind: Hash, Obj: &testObject{b: make([]byte, 0, 10000)}})
	obj, _ := usage("obj", 0)
	require.GreaterOrEqual(t, obj, int64(10000+objSlot))

	set("expiring", Value{Kind: String, Bytes: []byte("v"), Expire: 100})
	_, ok = usage("expiring", 99)
	require.True(t, ok)
	_, ok = usage("expiring", 100)
	require.False(t, ok)
	sh.Lock()
	require.Equal(t, 6, sh.LenLocked()) // UsageLocked leaves an expired key to expiry
	sh.Unlock()

	// Many keys: their usages add up to the shard's figure, less the arena's and the
	// index's slack, within a quarter.
	ks = New(1)
	sh = ks.Shard(nil)
	for i := range 20000 {
		set("key:"+strconv.Itoa(i), Value{Kind: String, Bytes: []byte(strconv.Itoa(i * i))})
	}
	var sum int64
	for i := range 20000 {
		n, ok := usage("key:"+strconv.Itoa(i), 0)
		require.True(t, ok)
		sum += n
	}
	total := ks.MemoryUsage()
	require.InDelta(t, float64(total), float64(sum), float64(total)/4, "sum %d, MemoryUsage %d", sum, total)
}

// sizeOfEntry is the arena bytes of key's entry.
func sizeOfEntry(t *testing.T, sh *Shard, key string) int {
	t.Helper()
	sh.Lock()
	defer sh.Unlock()
	_, off, ok := sh.find([]byte(key), sh.hash([]byte(key)))
	require.True(t, ok)
	return sizeOf(sh.entry(off))
}

// TestIndexMemory: the index grows with the keys and is part of MemoryUsage.
func TestIndexMemory(t *testing.T) {
	ks := New(4)
	empty := ks.IndexMemory()
	for i := range 1000 {
		key := []byte("k" + strconv.Itoa(i))
		sh := ks.Shard(key)
		sh.Lock()
		sh.SetLocked(key, Value{Kind: String, Bytes: []byte("v")})
		sh.Unlock()
	}
	n := ks.IndexMemory()
	require.Greater(t, n, empty+1000*8)
	require.Less(t, n, ks.MemoryUsage())
}
