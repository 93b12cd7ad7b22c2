package keyspace

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// testObject is an Object whose bytes form is its own bytes.
type testObject struct{ b []byte }

func (o *testObject) EncodedLen() int                 { return len(o.b) }
func (o *testObject) AppendEncoded(dst []byte) []byte { return append(dst, o.b...) }
func (o *testObject) Footprint() int                  { return cap(o.b) }

func TestObjectHeldByReference(t *testing.T) {
	ks := New(1)
	obj := &testObject{b: []byte("state")}
	set(ks, "k", Value{Kind: ZSet, Num: 500, Num2: 1, Obj: obj})
	v, ok := get(ks, "k", 0)
	require.True(t, ok)
	require.Same(t, obj, v.Obj, "the keyspace hands back the object it holds, not a copy")
	require.Nil(t, v.Bytes)
	require.Equal(t, int64(500), v.Num)

	// Changed in place, then set again: still the one object.
	obj.b = append(obj.b, "+more"...)
	set(ks, "k", Value{Kind: ZSet, Num: 501, Num2: 1, Obj: obj})
	v, _ = get(ks, "k", 0)
	require.Same(t, obj, v.Obj)

	// Outside the process it is its bytes form.
	enc := make([]byte, EncodedLen(v))
	Encode(enc, v)
	dec, err := DecodeValue(enc)
	require.NoError(t, err)
	require.Equal(t, Value{Kind: ZSet, Num: 501, Num2: 1, Bytes: []byte("state+more")}, dec)

	// Bytes replace the object, and an object bytes; both go with the key.
	for _, b := range [][]byte{[]byte("short"), bytes.Repeat([]byte("x"), 2*maxInlineValue)} {
		set(ks, "k", Value{Kind: ZSet, Num: 2, Bytes: b})
		v, _ = get(ks, "k", 0)
		require.Nil(t, v.Obj)
		require.Equal(t, b, v.Bytes)
		checkInvariants(t, ks)
		set(ks, "k", Value{Kind: ZSet, Num: 2, Obj: obj})
		v, _ = get(ks, "k", 0)
		require.Same(t, obj, v.Obj)
		checkInvariants(t, ks)
	}
	require.Greater(t, ks.MemoryUsage(), int64(cap(obj.b)))
	require.True(t, del(ks, "k"))
	checkInvariants(t, ks)
	require.Empty(t, ks.shards[0].objs)
}

func TestSwapIsNoWrite(t *testing.T) {
	ks := New(1)
	ks.Track(DiskFeed, true)
	set(ks, "k", Value{Kind: Hash, Num: 3, Num2: 1, Bytes: []byte("state"), Expire: 99})
	r := &countRecorder{}
	ks.DrainAll(DiskFeed, 0, r)
	require.Equal(t, 1, r.puts)

	obj := &testObject{b: []byte("state")}
	sh := ks.Shard([]byte("k"))
	sh.Lock()
	sh.SwapLocked([]byte("k"), Value{Kind: Hash, Num: 3, Num2: 1, Expire: 99, Obj: obj})
	sh.SwapLocked([]byte("missing"), Value{Kind: Hash, Obj: obj})
	sh.Unlock()
	v, _ := get(ks, "k", 0)
	require.Equal(t, Value{Kind: Hash, Num: 3, Num2: 1, Expire: 99, Obj: obj}, v)
	r = &countRecorder{}
	_, ok := ks.Drain(DiskFeed, 0, r)
	require.True(t, ok)
	require.Equal(t, 0, r.puts, "the same state in another form is nothing to persist")
	checkInvariants(t, ks)
}
