package keyspace

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// entryOf returns the offset and size of key's entry and whether it has room, and the room.
func entryOf(t *testing.T, s *Shard, key []byte) (off uint32, size int, room int) {
	t.Helper()
	_, off, ok := s.find(key, s.hash(key))
	require.True(t, ok, "key %q not stored", key)
	e := s.entry(off)
	room = -1
	if hasRoom(e) {
		at := keyEnd(e)
		_, n := uvarint(e[at:])
		room = int(e[at+n])
	}
	return off, sizeOf(e), room
}

// TestValueRoom follows a byte value that grows a few bytes at a time, as a sliding log
// does, then shrinks: it moves with growRoom bytes of room when it outgrows its room, and
// is written in place otherwise, while at most maxRoom bytes would be left over.
func TestValueRoom(t *testing.T) {
	ks := New(1)
	s := ks.shards[0]
	key := []byte("sl:000000042")
	exact := func(n int) int { return entrySize(len(key), n, 0, Value{Num: 1}) }
	s.Lock()
	defer s.Unlock()

	val := []byte{7}
	s.SetLocked(key, Value{Kind: SlidingLog, Num: 1, Bytes: val})
	off, size, room := entryOf(t, s, key)
	require.Equal(t, exact(1), size, "a new value has no room: one admission costs what it did")
	require.Equal(t, -1, room)

	steps := []struct {
		name  string
		n     int  // the value's new length
		moves bool // the entry is written anew at the tail
		room  int  // then its room; -1: none
	}{
		{"grows past its end: moves with room", 4, true, growRoom},
		{"grows into its room", 7, false, growRoom - 3},
		{"and on", 16, false, growRoom - 12},
		{"fills it", 4 + growRoom, false, 0},
		{"past it: moves with room again", 4 + growRoom + 3, true, growRoom},
		{"shrinks in place", 10, false, 4 + growRoom + 3 + growRoom - 10},
		{"shrinks so much the room would pass maxRoom: moves, exact", 2, true, -1},
		{"the same length, in place", 2, false, -1},
		{"shrinks by one: in place, the length byte of a room of 0", 1, false, 0},
	}
	for i, st := range steps {
		// Another key after it, so that the entry does not end the tail block (where it
		// would be rewritten in place: TestTailEntryGrowsInPlace).
		s.SetLocked([]byte{'f', byte(i)}, Value{Kind: String, Bytes: []byte("x")})
		// Rebuilt from the stored bytes, as the algorithms do: in a scratch buffer.
		v, ok := s.GetLocked(key, 0)
		require.True(t, ok)
		val = bytes.Repeat([]byte{byte(i)}, st.n)
		v.Bytes = append(append([]byte(nil), v.Bytes[:min(len(v.Bytes), st.n)]...), val[min(len(v.Bytes), st.n):]...)
		val = bytes.Clone(v.Bytes)
		v.Num++
		s.SetLocked(key, v)
		newOff, size, room := entryOf(t, s, key)
		require.Equal(t, st.moves, newOff != off, st.name)
		require.Equal(t, st.room, room, st.name)
		if room < 0 {
			require.Equal(t, exact(st.n), size, st.name)
		} else {
			require.Equal(t, exact(st.n)+1+room, size, st.name)
		}
		off = newOff
		got, _ := s.GetLocked(key, 0)
		require.Equal(t, val, got.Bytes, st.name)
		require.Equal(t, len(got.Bytes), cap(got.Bytes), "%s: appending to the bytes lent must not write into the room", st.name)
		require.NoError(t, s.check(), st.name)
	}
}

// TestTailEntryGrowsInPlace: an entry that ends the tail block and changes size (a hash
// written, then given an expiry) is rewritten where it is, leaving no dead bytes; one that
// does not end it moves.
func TestTailEntryGrowsInPlace(t *testing.T) {
	ks := New(1)
	s := ks.shards[0]
	s.Lock()
	defer s.Unlock()
	key := []byte("tb:000000042")
	s.SetLocked(key, Value{Kind: String, Bytes: []byte("tokens")})
	off, _, _ := entryOf(t, s, key)
	s.SetLocked(key, Value{Kind: String, Bytes: []byte("tokens"), Expire: 5})
	newOff, size, _ := entryOf(t, s, key)
	require.Equal(t, off, newOff)
	require.Equal(t, entrySize(len(key), 6, 0, Value{Expire: 5}), size)
	require.Equal(t, blockMeta{used: int32(size)}, s.meta[s.tail])

	s.SetLocked([]byte("other"), Value{Kind: String, Bytes: []byte("x")})
	s.SetLocked(key, Value{Kind: String, Bytes: []byte("tokens"), Expire: 5, Num: 1})
	newOff, _, _ = entryOf(t, s, key)
	require.NotEqual(t, off, newOff)
	require.Equal(t, int32(size), s.meta[s.tail].dead)
	require.NoError(t, s.check())
}

// TestValueRoomAliasing writes values that alias the stored bytes (a log dropping its
// oldest admissions is a slice of the old one) in and out of a value's room: the bytes
// move within the entry before its length and room length are written over them.
func TestValueRoomAliasing(t *testing.T) {
	ks := New(1)
	s := ks.shards[0]
	key := []byte("k")
	s.Lock()
	defer s.Unlock()
	s.SetLocked(key, Value{Kind: String, Bytes: []byte("ab")})
	s.SetLocked(key, Value{Kind: String, Bytes: []byte("abcdefghijklmnopqrstuvwxyz")}) // moves with room
	for _, cut := range []int{1, 2, 5, 1} {
		v, _ := s.GetLocked(key, 0)
		want := string(v.Bytes[cut:])
		v.Bytes = v.Bytes[cut:]
		s.SetLocked(key, v)
		v, _ = s.GetLocked(key, 0)
		require.Equal(t, want, string(v.Bytes))
		require.NoError(t, s.check())
	}
	// Back to no room: the value fills its field exactly once its length byte and the
	// room length byte are both its own.
	v, _ := s.GetLocked(key, 0)
	_, size, _ := entryOf(t, s, key)
	n := size - keyEnd(s.entry(s.ids[0])) - 1 // the field without the length byte
	v.Bytes = append(append([]byte(nil), v.Bytes...), bytes.Repeat([]byte{'+'}, n-len(v.Bytes))...)
	want := string(v.Bytes)
	s.SetLocked(key, v)
	got, _ := s.GetLocked(key, 0)
	require.Equal(t, want, string(got.Bytes))
	_, _, room := entryOf(t, s, key)
	require.Equal(t, -1, room)
	require.NoError(t, s.check())
}

// TestValueRoomCompaction keeps values with room through compaction, which moves entries
// as they are.
func TestValueRoomCompaction(t *testing.T) {
	ks := New(1)
	const n = 5000
	key := func(i int) string { return fmt.Sprintf("sl:%d:%s", i, strings.Repeat("x", i%7)) }
	val := func(i, adm int) []byte { return bytes.Repeat([]byte{byte(i)}, 1+3*adm) }
	for adm := range 4 {
		for i := range n {
			set(ks, key(i), Value{Kind: SlidingLog, Expire: int64(1e18), Num: int64(i), Bytes: val(i, adm)})
		}
	}
	for i := 0; i < n; i++ {
		if i%4 != 0 {
			require.True(t, del(ks, key(i)))
		}
	}
	checkInvariants(t, ks)
	for i := 0; i < n; i += 4 {
		set(ks, key(i), Value{Kind: SlidingLog, Expire: int64(1e18), Num: int64(i), Bytes: val(i, 4)})
		v, ok := get(ks, key(i), 0)
		require.True(t, ok)
		require.Equal(t, val(i, 4), v.Bytes)
	}
	checkInvariants(t, ks)
}

// TestValueRoomMemory holds the arena bytes of a sliding log to its budget: its entry with
// one admission is as small as it was without room, and growing a 3-byte admission at a
// time (a one-minute window), it keeps about growRoom/2 bytes of room on average (17 from
// 2 to 100 admissions) and at most growRoom+1 with the room's length, and moves at one
// admission in growRoom/3+1.
func TestValueRoomMemory(t *testing.T) {
	ks := New(1)
	s := ks.shards[0]
	key := []byte("sl:000000042") // 14-byte keys, as the load tests use, hold 12 bytes of name here
	s.Lock()
	defer s.Unlock()
	exact := func(n int) int { return entrySize(len(key), n, 0, Value{Num: 1, Expire: 2}) }
	log := []byte{0}
	s.SetLocked(key, Value{Kind: SlidingLog, Num: 1, Expire: 2, Bytes: log})
	_, size, _ := entryOf(t, s, key)
	require.Equal(t, exact(1), size)
	var over, moves int
	off := s.ids[0]
	for adm := 2; adm <= 100; adm++ {
		log = append(log, 0x80, 0x80, 0x01)
		s.SetLocked(key, Value{Kind: SlidingLog, Num: 1, Expire: 2, Bytes: log})
		_, size, _ := entryOf(t, s, key)
		require.LessOrEqual(t, size-exact(len(log)), 1+growRoom, "%d admissions", adm)
		over += size - exact(len(log))
		if s.ids[0] != off {
			moves++
			off = s.ids[0]
		}
	}
	t.Logf("2 to 100 admissions: %.1f bytes of room on average, the entry moved at %d writes of 99", float64(over)/99, moves)
	require.Less(t, float64(over)/99, float64(growRoom)/2+2)
	require.LessOrEqual(t, moves, 99/(growRoom/3+1)+1)
}

// TestGrowAtBlockEnd: an entry that ends its block exactly and grows moves to the next
// block; it must not slide back over its old place, which is in another block.
func TestGrowAtBlockEnd(t *testing.T) {
	ks := New(1)
	s := ks.shards[0]
	s.Lock()
	defer s.Unlock()
	key, val := []byte("k"), []byte("tokens")
	size := entrySize(len(key), len(val), 0, Value{})
	s.SetLocked([]byte("first"), Value{Kind: String, Bytes: []byte("x")})
	for i := 0; ; i++ {
		left := blockSize - int(s.meta[s.tail].used) - size
		if left < entrySize(3, 500, 0, Value{})+entrySize(3, 1, 0, Value{}) {
			filler := []byte{'f', byte(i), byte(i >> 8)}
			n := 1
			for entrySize(len(filler), n, 0, Value{}) < left {
				n++
			}
			require.Equal(t, left, entrySize(len(filler), n, 0, Value{}))
			s.SetLocked(filler, Value{Kind: String, Bytes: make([]byte, n)})
			break
		}
		s.SetLocked([]byte{'f', byte(i), byte(i >> 8)}, Value{Kind: String, Bytes: make([]byte, 500)})
	}
	s.SetLocked(key, Value{Kind: String, Bytes: val})
	require.Equal(t, int32(blockSize), s.meta[s.tail].used, "the key's entry ends the block")
	s.SetLocked(key, Value{Kind: String, Bytes: val, Expire: 5})
	got, ok := s.GetLocked(key, 0)
	require.True(t, ok)
	require.Equal(t, Value{Kind: String, Bytes: val, Expire: 5}, got)
	require.NoError(t, s.check())
}
