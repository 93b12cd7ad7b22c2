package datatype

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
)

// family runs the family's handlers straight on a keyspace of its own, without a server:
// for what the keyspace holds and no reply shows, such as the index a big collection keeps.
type family struct {
	t    *testing.T
	c    *command.Ctx
	cmds map[string]*command.Spec
}

func newFamily(t *testing.T, limits func(*Limits)) *family {
	l := new(Limits)
	l.HashEntries.Store(512)
	l.HashValue.Store(64)
	l.ZsetEntries.Store(128)
	l.ZsetValue.Store(64)
	l.ListSize.Store(-2)
	l.SetIntset.Store(512)
	l.SetEntries.Store(128)
	l.SetValue.Store(64)
	limits(l)
	dt := New(Config{Limits: l, MaxBulk: 512 << 20, LRU: func() bool { return false }})
	f := &family{t: t, cmds: make(map[string]*command.Spec)}
	for _, spec := range dt.Commands() {
		f.cmds[spec.Name] = spec
	}
	f.c = &command.Ctx{Env: &command.Env{Keys: keyspace.New(4), Clock: func() int64 { return 1_700_000_000e9 }}}
	f.c.W.Proto = 2
	return f
}

// do runs one command and fails the test on an error.
func (f *family) do(args ...string) {
	f.t.Helper()
	req := make([][]byte, len(args))
	for i, a := range args {
		req[i] = []byte(a)
	}
	f.c.W.B = f.c.W.B[:0]
	require.NoError(f.t, f.cmds[strings.ToLower(args[0])].Handler(f.c, req), "%q", args)
	require.NotEqual(f.t, byte('-'), f.c.W.B[0], "%q: %s", args, f.c.W.B)
}

// flags returns the encoding flags of key's value (Num2), and whether it is held in
// chunks (a collection.Big).
func (f *family) flags(key string) int64 {
	f.t.Helper()
	n, _ := f.held(key)
	return n
}

func (f *family) held(key string) (num2 int64, chunked bool) {
	f.t.Helper()
	sh := f.c.Keys.Shard([]byte(key))
	sh.Lock()
	defer sh.Unlock()
	v, ok := sh.GetLocked([]byte(key), f.c.Now())
	require.True(f.t, ok, key)
	switch v.Obj.(type) {
	case *collection.Big, *collection.BigList:
		chunked = true
	}
	return v.Num2, chunked
}

// TestBigCollectionsIndexed: a hash or sorted set past its listpack's limits is big and
// held in chunks (collection.Big) at once; a set that leaves its intset is big and a pack
// until it passes set-max-listpack-entries or -value, then in chunks. None goes back. (Their OBJECT
// ENCODING is TestHashEncoding's, TestZSetBig's and TestSetEncoding's.)
func TestBigCollectionsIndexed(t *testing.T) {
	const indexed = BigEncoding | IndexedPack
	small := func(t *testing.T, f *family, key string) {
		t.Helper()
		num2, chunked := f.held(key)
		require.Equal(t, int64(0), num2, key)
		require.False(t, chunked, key)
	}
	big := func(t *testing.T, f *family, key, why string) {
		t.Helper()
		num2, chunked := f.held(key)
		require.Equal(t, int64(BigEncoding), num2, "%s: %s", key, why)
		require.True(t, chunked, "%s: %s", key, why)
	}
	t.Run("hash", func(t *testing.T) {
		f := newFamily(t, func(l *Limits) { l.HashEntries.Store(3); l.HashValue.Store(8) })
		f.do("HSET", "h", "a", "1", "b", "2", "c", "3")
		small(t, f, "h")
		f.do("HSET", "h", "d", "4", "b", "two")
		big(t, f, "h", "past 3 entries")
		f.do("HDEL", "h", "a", "b", "c")
		big(t, f, "h", "never back")
		f.do("HSET", "v", "a", "12345678")
		small(t, f, "v")
		f.do("HINCRBYFLOAT", "v", "f", "1e10")
		big(t, f, "v", "HINCRBYFLOAT wrote 11 bytes")
	})
	t.Run("zset", func(t *testing.T) {
		f := newFamily(t, func(l *Limits) { l.ZsetEntries.Store(3); l.ZsetValue.Store(8) })
		f.do("ZADD", "z", "1", "a", "2", "b", "3", "c")
		small(t, f, "z")
		f.do("ZADD", "z", "4", "d")
		big(t, f, "z", "past 3 entries")
		f.do("ZREM", "z", "d", "a")
		big(t, f, "z", "never back")
		f.do("ZADD", "long", "1", "123456789")
		big(t, f, "long", "a long member")
	})
	t.Run("list", func(t *testing.T) {
		// A list's Num2 stays 0: OBJECT ENCODING says quicklist either way (7.0's).
		big := func(t *testing.T, f *family, key, why string) {
			t.Helper()
			num2, chunked := f.held(key)
			require.Equal(t, int64(0), num2, "%s: %s", key, why)
			require.True(t, chunked, "%s: %s", key, why)
		}
		f := newFamily(t, func(l *Limits) { l.ListSize.Store(3) })
		f.do("RPUSH", "l", "a", "b", "c")
		small(t, f, "l")
		f.do("LPUSH", "l", "z")
		big(t, f, "l", "past a node of 3")
		f.do("LPOP", "l", "3")
		big(t, f, "l", "never back")
		f.do("LPOP", "l")
		require.Equal(t, "$-1\r\n", f.reply("LPOP", "l"), "emptied: gone")
		f = newFamily(t, func(*Limits) {})
		f.do("RPUSH", "b", strings.Repeat("x", 5000))
		small(t, f, "b")
		f.do("RPUSH", "b", strings.Repeat("y", 5000))
		big(t, f, "b", "past 8 KiB")
		require.Equal(t, "$5000\r\nyyyy", f.reply("LINDEX", "b", "-1")[:11])
	})
	t.Run("set", func(t *testing.T) {
		f := newFamily(t, func(l *Limits) { l.SetIntset.Store(3); l.SetEntries.Store(5); l.SetValue.Store(8) })
		f.do("SADD", "s", "1", "2", "3")
		require.Equal(t, int64(0), f.flags("s"), "an intset")
		f.do("SADD", "s", "4")
		require.Equal(t, int64(BigEncoding), f.flags("s"), "small: no index")
		f.do("SREM", "s", "4", "3")
		require.Equal(t, int64(BigEncoding), f.flags("s"), "never back")
		f.do("SADD", "s", "a", "b", "c", "d")
		num2, chunked := f.held("s")
		require.Equal(t, int64(indexed), num2)
		require.True(t, chunked, "held in chunks")
		f.do("SREM", "s", "a", "b", "c", "d", "1")
		require.Equal(t, int64(indexed), f.flags("s"), "never back")
		f.do("SADD", "v", "abcdefghi")
		require.Equal(t, int64(indexed), f.flags("v"), "a long member")
	})
}

// reply runs one command and returns its reply as written.
func (f *family) reply(args ...string) string {
	f.t.Helper()
	f.do(args...)
	return string(f.c.W.B)
}

// TestBigCollectionsOwnTheirChunks: a big collection is changed in place, so that no two
// keys may share one. COPY's copy and RENAME's moved value change apart from the
// original, and a value read back from its bytes form (RESTORE, as from the log or a
// primary) is held in chunks again and answers as the original did.
func TestBigCollectionsOwnTheirChunks(t *testing.T) {
	f := newFamily(t, func(l *Limits) {
		l.HashEntries.Store(3)
		l.ZsetEntries.Store(3)
		l.SetEntries.Store(3)
		l.ListSize.Store(3)
	})
	for _, c := range []struct {
		kind       string
		fill, more []string
		read       []string
	}{
		{"zset", []string{"ZADD", "k", "1", "a", "2", "b", "3", "c", "4", "d"}, []string{"ZADD", "k", "5", "e"}, []string{"ZRANGE", "k", "0", "-1", "WITHSCORES"}},
		{"hash", []string{"HSET", "k", "a", "1", "b", "2", "c", "3", "d", "4"}, []string{"HSET", "k", "e", "5"}, []string{"HGETALL", "k"}},
		{"set", []string{"SADD", "k", "a", "b", "c", "d"}, []string{"SADD", "k", "e"}, []string{"SMEMBERS", "k"}},
		{"list", []string{"RPUSH", "k", "a", "b", "c", "d"}, []string{"RPUSH", "k", "e"}, []string{"LRANGE", "k", "0", "-1"}},
	} {
		t.Run(c.kind, func(t *testing.T) {
			f.do("DEL", "k", "copy", "restored", "moved")
			f.do(c.fill...)
			at := func(key string) []string {
				args := slices.Clone(c.read)
				args[1] = key
				return args
			}
			before := f.reply(c.read...)
			f.do("COPY", "k", "copy")
			more := slices.Clone(c.more)
			more[1] = "copy"
			f.do(more...)
			require.Equal(t, before, f.reply(c.read...), "the original, after a write to its copy")
			after := f.reply(at("copy")...)
			require.NotEqual(t, before, after)
			_, chunked := f.held("copy")
			require.True(t, chunked, "the copy in chunks once read")

			dump := f.reply("DUMP", "k")
			payload := dump[strings.Index(dump, "\r\n")+2 : len(dump)-2]
			f.do("RESTORE", "restored", "0", payload)
			require.Equal(t, before, f.reply(at("restored")...))
			_, chunked = f.held("restored")
			require.True(t, chunked, "restored, then read: in chunks")
			more[1] = "restored"
			f.do(more...)
			require.Equal(t, after, f.reply(at("restored")...))

			f.do("RENAME", "k", "moved")
			more[1] = "moved"
			f.do(more...)
			require.Equal(t, after, f.reply(at("moved")...))
			require.Equal(t, after, f.reply(at("copy")...), "the copy, after a write to the moved original")
		})
	}
}
