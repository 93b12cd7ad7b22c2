package keyspace

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{None: "none", String: "string", GCRA: "gcra", 40: "kind(40)"} {
		require.Equal(t, want, k.String())
	}
}

func TestNewRoundsShards(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{-3, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 4}, {256, 256}, {257, 512}, {1 << 30, 1 << 20}} {
		t.Run(fmt.Sprint(tc.in), func(t *testing.T) {
			require.Equal(t, tc.want, shardCount(tc.in))
			if tc.want <= 512 { // a million shards take 20 s under -race: shardCount is what New makes
				require.Equal(t, tc.want, New(tc.in).Shards())
			}
		})
	}
}

// testKeys are binary keys covering the entry encodings: empty, NUL bytes, a two-byte length
// and a key too long to be kept inline.
var testKeys = []string{
	"", "\x00", "a\x00b", "\x00\x00\x00\x00", "user:000000042", "\xff\xfe",
	strings.Repeat("k", 127), strings.Repeat("k", 128), strings.Repeat("x", maxInlineKey),
	strings.Repeat("y", maxInlineKey+1), strings.Repeat("z\x00", 3000),
}

func TestGetSetDelete(t *testing.T) {
	values := []struct {
		name string
		v    Value
	}{
		{"string", Value{Kind: String, Bytes: []byte("hello\x00world")}},
		{"empty string", Value{Kind: String}},
		{"string with expiry", Value{Kind: String, Expire: 1e18, Bytes: []byte("v")}},
		{"gcra", Value{Kind: GCRA, Expire: 5e17, Num: 4e17}},
		{"gcra without expiry", Value{Kind: GCRA, Num: -7}},
		{"num2", Value{Kind: GCRA, Num: 1, Num2: -1}},
		{"everything", Value{Kind: 63, Expire: 1 << 62, Num: 1 << 62, Num2: 1 << 61, Bytes: bytes.Repeat([]byte{0}, 100)}},
	}
	for _, val := range values {
		t.Run(val.name, func(t *testing.T) {
			ks := New(4)
			for _, k := range testKeys {
				_, ok := get(ks, k, 0)
				require.False(t, ok)
				set(ks, k, val.v)
			}
			checkInvariants(t, ks)
			require.Equal(t, len(testKeys), ks.Len())
			wantExp := 0
			if val.v.Expire != 0 {
				wantExp = len(testKeys)
			}
			require.Equal(t, wantExp, ks.Expires())
			for _, k := range testKeys {
				got, ok := get(ks, k, 1)
				require.True(t, ok, "key %q", k)
				require.Equal(t, val.v, got)
			}
			for i, k := range testKeys {
				require.True(t, del(ks, k))
				require.False(t, del(ks, k))
				_, ok := get(ks, k, 1)
				require.False(t, ok)
				require.Equal(t, len(testKeys)-i-1, ks.Len())
				checkInvariants(t, ks)
			}
			require.Equal(t, 0, ks.Expires())
			require.Zero(t, ks.ExpiredTotal())
		})
	}
}

func TestSetNoneDeletes(t *testing.T) {
	ks := New(1)
	set(ks, "k", Value{Kind: GCRA, Num: 1})
	set(ks, "k", Value{})
	require.False(t, stored(ks, "k"))
	require.Equal(t, 0, ks.Len())
}

func TestReplace(t *testing.T) {
	// Each step replaces the previous value of the same key.
	steps := []struct {
		name string
		v    Value
	}{
		{"gcra", Value{Kind: GCRA, Expire: 100, Num: 50}},
		{"gcra again", Value{Kind: GCRA, Expire: 200, Num: 150}},
		{"num2 appears", Value{Kind: GCRA, Expire: 200, Num: 150, Num2: 9}},
		{"num2 changes", Value{Kind: GCRA, Num: 150, Num2: -9}},
		{"string", Value{Kind: String, Bytes: []byte("abc")}},
		{"longer string", Value{Kind: String, Expire: 300, Bytes: bytes.Repeat([]byte("x"), 1000)}},
		{"shorter string", Value{Kind: String, Bytes: []byte("xy")}},
		{"string with num2", Value{Kind: String, Num2: 1, Bytes: []byte("xyz")}},
		{"num2 goes", Value{Kind: String, Bytes: []byte("xyz")}},
		{"empty string", Value{Kind: String}},
		{"back to gcra", Value{Kind: GCRA, Expire: 400, Num: 7}},
		{"log", Value{Kind: SlidingLog, Expire: 500, Num: 1, Bytes: []byte("\x00\x02\x04")}},
		{"log rewritten", Value{Kind: SlidingLog, Expire: 500, Num: 2, Bytes: []byte("\x00\x06\x08")}},
		{"log at the limit", Value{Kind: SlidingLog, Expire: 600, Num: 3, Bytes: bytes.Repeat([]byte("a"), maxInlineValue)}},
		{"log over the limit", Value{Kind: SlidingLog, Expire: 600, Num: 4, Bytes: bytes.Repeat([]byte("b"), maxInlineValue+1)}},
		{"log over the limit rewritten", Value{Kind: SlidingLog, Expire: 600, Num: 5, Bytes: bytes.Repeat([]byte("c"), maxInlineValue+1)}},
		{"log over the limit grows", Value{Kind: SlidingLog, Expire: 600, Num: 5, Bytes: bytes.Repeat([]byte("d"), 3*maxInlineValue)}},
		{"log back under the limit", Value{Kind: SlidingLog, Expire: 600, Num: 6, Bytes: bytes.Repeat([]byte("e"), maxInlineValue-1)}},
		// Num2 takes 8 bytes and the value gives them back: the entry keeps its size, not its layout.
		{"num2 for 8 bytes of value", Value{Kind: SlidingLog, Num: 7, Num2: 1, Bytes: bytes.Repeat([]byte("f"), maxInlineValue-9)}},
		{"8 bytes of value for num2", Value{Kind: SlidingLog, Num: 8, Bytes: bytes.Repeat([]byte("g"), maxInlineValue-1)}},
		{"num2 and a value over the limit", Value{Kind: SlidingLog, Num: 9, Num2: 2, Bytes: bytes.Repeat([]byte("h"), 2*maxInlineValue)}},
		{"gcra at last", Value{Kind: GCRA, Expire: 700, Num: 10}},
	}
	for _, key := range testKeys {
		t.Run(fmt.Sprintf("key of %d bytes", len(key)), func(t *testing.T) {
			ks := New(2)
			// Neighbours, so that moving entries and compaction have something to get wrong.
			for i := range 50 {
				set(ks, fmt.Sprint("n", i), Value{Kind: String, Bytes: []byte(fmt.Sprint("v", i))})
			}
			set(ks, key, steps[0].v)
			id := recordID(t, ks, key)
			for _, st := range steps {
				set(ks, key, st.v)
				got, ok := get(ks, key, 0)
				require.True(t, ok, st.name)
				require.Equal(t, st.v, got, st.name)
				require.Equal(t, id, recordID(t, ks, key), "%s: the record moved", st.name)
				checkInvariants(t, ks)
			}
			require.Equal(t, 51, ks.Len())
			require.Equal(t, 1, ks.Expires())
			for _, s := range ks.shards {
				require.Empty(t, s.vals, "no value over maxInlineValue is left")
			}
			for i := range 50 {
				got, ok := get(ks, fmt.Sprint("n", i), 0)
				require.True(t, ok)
				require.Equal(t, fmt.Sprint("v", i), string(got.Bytes))
			}
		})
	}
}

func TestSetAliasingBytes(t *testing.T) {
	ks := New(1)
	key := []byte("k")
	s := ks.Shard(key)
	s.Lock()
	defer s.Unlock()
	s.SetLocked(key, Value{Kind: String, Bytes: []byte("hello world")})
	v, _ := s.GetLocked(key, 0)
	v.Bytes = v.Bytes[6:] // set the key to a slice of its own value
	s.SetLocked(key, v)
	v, _ = s.GetLocked(key, 0)
	require.Equal(t, "world", string(v.Bytes))
	// And an in-place edit written back.
	v.Bytes[0] = 'W'
	s.SetLocked(key, v)
	v, _ = s.GetLocked(key, 0)
	require.Equal(t, "World", string(v.Bytes))
	// Across maxInlineValue, both ways, from a slice of the stored value.
	long := bytes.Repeat([]byte("0123456789"), maxInlineValue/10+2)
	s.SetLocked(key, Value{Kind: String, Bytes: long})
	for _, n := range []int{maxInlineValue + 1, maxInlineValue, maxInlineValue - 1} {
		v, _ = s.GetLocked(key, 0)
		v.Bytes = v.Bytes[len(v.Bytes)-n:]
		s.SetLocked(key, v)
		v, _ = s.GetLocked(key, 0)
		require.Equal(t, long[len(long)-n:], v.Bytes)
	}
	require.NoError(t, s.check())
}

func TestSmallValuesInline(t *testing.T) {
	ks := New(1)
	s := ks.shards[0]
	for i, n := range []int{1, 12, 127, 128, maxInlineValue} {
		set(ks, fmt.Sprint(i), Value{Kind: SlidingLog, Bytes: bytes.Repeat([]byte{byte(i)}, n)})
	}
	require.Empty(t, s.vals, "values up to maxInlineValue are in their entries")
	set(ks, "big", Value{Kind: SlidingLog, Bytes: bytes.Repeat([]byte{'b'}, maxInlineValue+1)})
	require.Len(t, s.vals, 1)
	checkInvariants(t, ks)
}

// TestBytesOutliveOtherWrites holds the contract of GetLocked: the bytes it returns stay
// valid until the key is written or the lock released, however much is written to the
// other keys of the shard meanwhile, their entries and ours moving and blocks being freed.
func TestBytesOutliveOtherWrites(t *testing.T) {
	ks := New(1)
	s := ks.shards[0]
	key := func(i int) []byte { return fmt.Appendf(nil, "key:%06d", i) }
	val := func(i, n int) []byte { return bytes.Repeat([]byte{byte(i)}, n) }
	const n = 2000
	s.Lock()
	defer s.Unlock()
	for i := range n {
		s.SetLocked(key(i), Value{Kind: SlidingLog, Bytes: val(i, 100)})
	}
	held := make([][]byte, n/100)
	offs := make([]uint32, len(held))
	for j := range held {
		v, ok := s.GetLocked(key(j*100), 0)
		require.True(t, ok)
		held[j] = v.Bytes
		_, offs[j], _ = s.find(key(j*100), s.hash(key(j*100)))
	}
	// The other keys grow, shrink and go, which kills most of every block.
	for round := range 3 {
		for i := range n {
			switch {
			case i%100 == 0:
			case i%3 == 0:
				s.DeleteLocked(key(i))
			default:
				s.SetLocked(key(i), Value{Kind: SlidingLog, Bytes: val(i, 90+round*20)})
			}
		}
	}
	moved := 0
	for j, b := range held {
		require.Equal(t, val(j*100, 100), b, "the bytes of key %d", j*100)
		if _, off, _ := s.find(key(j*100), s.hash(key(j*100))); off != offs[j] {
			moved++
		}
	}
	require.Positive(t, moved, "compaction moved some of the entries whose bytes are held")
	require.NoError(t, s.check())
}

func TestLazyExpiry(t *testing.T) {
	cases := []struct {
		name    string
		expire  int64
		now     int64
		present bool
	}{
		{"no expiry", 0, 1 << 62, true},
		{"before", 1000, 999, true},
		{"at the boundary", 1000, 1000, false},
		{"after", 1000, 1001, false},
		{"negative expiry", -5, -6, true},
		{"negative expiry reached", -5, -5, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ks := New(1)
			set(ks, "k", Value{Kind: GCRA, Expire: tc.expire, Num: 1})
			_, ok := get(ks, "k", tc.now)
			require.Equal(t, tc.present, ok)
			require.Equal(t, tc.present, stored(ks, "k"), "an expired key is deleted on access")
			want := int64(1)
			if tc.present {
				want = 0
			}
			require.Equal(t, want, ks.ExpiredTotal())
			require.Equal(t, int(1-want), ks.Len())
			checkInvariants(t, ks)
		})
	}
}

func TestDeleteAtLocked(t *testing.T) {
	ks := New(1)
	s := ks.Shard(nil)
	s.Lock()
	defer s.Unlock()
	s.SetLocked([]byte("live"), Value{Kind: GCRA, Expire: 100})
	s.SetLocked([]byte("dead"), Value{Kind: GCRA, Expire: 50})
	require.True(t, s.DeleteAtLocked([]byte("live"), 60))
	require.False(t, s.DeleteAtLocked([]byte("dead"), 60))
	require.False(t, s.DeleteAtLocked([]byte("none"), 60))
	require.Equal(t, 0, s.LenLocked())
	require.Equal(t, int64(1), ks.ExpiredTotal())
}

// arenaBlocks returns the number of blocks the shard holds.
func arenaBlocks(s *Shard) int {
	n := 0
	for _, b := range s.blocks {
		if b != nil {
			n++
		}
	}
	return n
}

func TestArenaCompaction(t *testing.T) {
	ks := New(1)
	s := ks.shards[0]
	const n = 20000
	key := func(i int) string { return fmt.Sprintf("key:%08d:%s", i, strings.Repeat("p", i%40)) }
	for i := range n {
		set(ks, key(i), Value{Kind: GCRA, Expire: int64(i + 1), Num: int64(i), Num2: int64(i % 3)})
	}
	full := arenaBlocks(s)
	// Delete 90% of the keys, and move some of the survivors' entries (Num2 toggles).
	for i := range n {
		switch {
		case i%10 != 0:
			require.True(t, del(ks, key(i)))
		case i%20 == 0:
			set(ks, key(i), Value{Kind: GCRA, Expire: int64(i + 1), Num: int64(i), Num2: int64(i%3) ^ 1})
		}
	}
	checkInvariants(t, ks) // no block but the tail is more than half dead
	require.Less(t, arenaBlocks(s), full/4, "the arena was compacted")
	require.Less(t, cap(s.index), 2*targetIndex(n/10), "the index shrank")
	for i := 0; i < n; i += 10 {
		v, ok := get(ks, key(i), 0)
		require.True(t, ok, key(i))
		num2 := int64(i % 3)
		if i%20 == 0 {
			num2 ^= 1
		}
		require.Equal(t, Value{Kind: GCRA, Expire: int64(i + 1), Num: int64(i), Num2: num2}, v)
	}
}

func TestMemoryFollowsKeys(t *testing.T) {
	ks := New(1)
	s := ks.shards[0]
	const n = 10000
	for i := range n {
		set(ks, fmt.Sprint(i), Value{Kind: GCRA, Num: 1})
	}
	require.Equal(t, uint32(n-1), recordID(t, ks, fmt.Sprint(n-1)))
	// The lowest free ids are reused first.
	for i := 2000; i < 5000; i++ {
		require.True(t, del(ks, fmt.Sprint(i)))
	}
	checkInvariants(t, ks)
	set(ks, "new", Value{Kind: GCRA})
	require.Equal(t, uint32(2000), recordID(t, ks, "new"))
	// Deleting the keys with the highest ids shrinks the ids.
	for i := 5000; i < n; i++ {
		require.True(t, del(ks, fmt.Sprint(i)))
	}
	require.Equal(t, 2001, len(s.ids), "ids 0-1999 and \"new\"")
	checkInvariants(t, ks)
	for i := range 2000 {
		del(ks, fmt.Sprint(i))
	}
	del(ks, "new")
	checkInvariants(t, ks)
	require.Empty(t, s.ids)
	require.Nil(t, s.index)
	require.LessOrEqual(t, arenaBlocks(s), 1, "only the tail block is kept")
	require.LessOrEqual(t, ks.MemoryUsage(), int64(2*blockSize+4096), "the tail, a spare block and small slices")
	set(ks, "again", Value{Kind: GCRA, Num: 5})
	v, ok := get(ks, "again", 0)
	require.True(t, ok)
	require.Equal(t, int64(5), v.Num)
}

func TestFlush(t *testing.T) {
	ks := New(8)
	for i := range 1000 {
		set(ks, fmt.Sprint(i), Value{Kind: String, Expire: 10, Bytes: []byte("v")})
	}
	_, ok := get(ks, "1", 10)
	require.False(t, ok)
	require.Positive(t, ks.MemoryUsage())
	ks.Flush()
	require.Equal(t, 0, ks.Len())
	require.Equal(t, 0, ks.Expires())
	require.Equal(t, int64(1), ks.ExpiredTotal(), "FLUSHALL keeps the expired_keys stat")
	require.Zero(t, ks.MemoryUsage())
	checkInvariants(t, ks)
	set(ks, "1", Value{Kind: GCRA, Num: 3})
	v, ok := get(ks, "1", 0)
	require.True(t, ok)
	require.Equal(t, int64(3), v.Num)
}

func TestGetSetDoNotAllocate(t *testing.T) {
	ks := New(16)
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%09d", i)
		set(ks, string(keys[i]), Value{Kind: GCRA, Expire: 100, Num: 1})
		set(ks, "s"+string(keys[i]), Value{Kind: String, Bytes: []byte("value")})
		set(ks, "w"+string(keys[i]), Value{Kind: GCRA, Num: 1, Num2: 5})
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		k := keys[i%len(keys)]
		i++
		s := ks.Shard(k)
		s.Lock()
		v, _ := s.GetLocked(k, 1)
		v.Num++
		v.Expire++
		s.SetLocked(k, v)
		_, _ = s.GetLocked([]byte("missing"), 1)
		s.Unlock()
	})
	require.Zero(t, allocs)
	// Strings and entries with Num2, through keys built in reused buffers.
	skey, wkey := make([]byte, 15), make([]byte, 15)
	skey[0], wkey[0] = 's', 'w'
	allocs = testing.AllocsPerRun(1000, func() {
		copy(skey[1:], keys[i%len(keys)])
		copy(wkey[1:], keys[i%len(keys)])
		i++
		s := ks.Shard(skey)
		s.Lock()
		v, _ := s.GetLocked(skey, 1)
		v.Bytes = append(v.Bytes[:0], "other"...)
		s.SetLocked(skey, v)
		s.Unlock()
		s = ks.Shard(wkey)
		s.Lock()
		v, _ = s.GetLocked(wkey, 1)
		v.Num2++
		s.SetLocked(wkey, v)
		s.Unlock()
	})
	require.Zero(t, allocs)
	// Sliding logs, their entries moving at every write as their values change size.
	for i := range keys {
		set(ks, "l"+string(keys[i]), Value{Kind: SlidingLog, Expire: 100, Bytes: []byte("log")})
	}
	lkey, scratch := make([]byte, 15), make([]byte, 0, maxInlineValue)
	lkey[0] = 'l'
	allocs = testing.AllocsPerRun(10000, func() {
		copy(lkey[1:], keys[i%len(keys)])
		i++
		s := ks.Shard(lkey)
		s.Lock()
		v, _ := s.GetLocked(lkey, 1)
		old := v.Bytes
		if len(old) > 200 {
			old = old[150:]
		}
		v.Bytes = append(append(scratch[:0], old...), "ab"...)
		s.SetLocked(lkey, v)
		s.Unlock()
	})
	require.Zero(t, allocs)
}
