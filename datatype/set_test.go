package datatype_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// TestSetCommands: an allow list kept in a set, as code that keeps one in Redis uses it.
func TestSetCommands(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, int64(3), do(t, rdb, "SADD", "allow", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1"))
	require.Equal(t, int64(1), do(t, rdb, "SISMEMBER", "allow", "10.0.0.2"))
	require.Equal(t, int64(0), do(t, rdb, "SISMEMBER", "allow", "10.0.0.9"))
	require.Equal(t, []any{int64(1), int64(0)}, do(t, rdb, "SMISMEMBER", "allow", "10.0.0.3", "x"))
	require.Equal(t, []any{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, do(t, rdb, "SMEMBERS", "allow"))
	require.Equal(t, "set", do(t, rdb, "TYPE", "allow"))
	require.Equal(t, "hashtable", do(t, rdb, "OBJECT", "ENCODING", "allow"))

	require.Equal(t, int64(3), do(t, rdb, "SADD", "ids", "30", "-1", "2"))
	require.Equal(t, "intset", do(t, rdb, "OBJECT", "ENCODING", "ids"))
	require.Equal(t, []any{"-1", "2", "30"}, do(t, rdb, "SMEMBERS", "ids"), "an intset in order")
	require.Equal(t, []any{"0", []any{"2", "30"}}, do(t, rdb, "SSCAN", "ids", "0", "MATCH", "[23]*"))

	require.Equal(t, int64(1), do(t, rdb, "SMOVE", "ids", "allow", "2"))
	require.Equal(t, int64(0), do(t, rdb, "SMOVE", "ids", "allow", "2"))
	require.Equal(t, []any{}, do(t, rdb, "SINTER", "allow", "ids"))
	require.Equal(t, []any{"-1", "30"}, do(t, rdb, "SDIFF", "ids", "allow"))
	require.Equal(t, int64(6), do(t, rdb, "SUNIONSTORE", "all", "ids", "allow", "missing"))
	require.Equal(t, int64(2), do(t, rdb, "SINTERCARD", "2", "all", "allow", "LIMIT", "2"))
	require.Equal(t, int64(4), do(t, rdb, "SINTERCARD", "2", "all", "allow"))
	require.Equal(t, int64(2), do(t, rdb, "SINTERSTORE", "ids2", "all", "ids"))
	require.Equal(t, "intset", do(t, rdb, "OBJECT", "ENCODING", "ids2"), "a stored set is made anew")

	do(t, rdb, "EXPIRE", "all", "100")
	require.Equal(t, int64(4), do(t, rdb, "SDIFFSTORE", "all", "allow", "ids"))
	require.Equal(t, int64(-1), do(t, rdb, "TTL", "all"), "a stored set replaces the key")
	require.Equal(t, int64(0), do(t, rdb, "SINTERSTORE", "all", "allow", "missing"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "all"), "an empty result deletes the destination")

	do(t, rdb, "SET", "str", "x")
	require.Equal(t, "WRONGTYPE Operation against a key holding the wrong kind of value", doErr(t, rdb, "SADD", "str", "a"))
	require.Equal(t, "WRONGTYPE Operation against a key holding the wrong kind of value", doErr(t, rdb, "SUNION", "allow", "str"))
	require.Equal(t, "ERR wrong number of arguments for 'sadd' command", doErr(t, rdb, "SADD", "allow"))
	require.Equal(t, "ERR numkeys should be greater than 0", doErr(t, rdb, "SINTERCARD", "0", "allow"))
	require.Equal(t, "ERR LIMIT can't be negative", doErr(t, rdb, "SINTERCARD", "1", "allow", "LIMIT", "-1"))

	require.Equal(t, int64(4), do(t, rdb, "SREM", "allow", "10.0.0.1", "10.0.0.2", "10.0.0.3", "2", "nope"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "allow"), "an emptied set is deleted")
}

// TestSetRESP3: SMEMBERS, SINTER, SUNION, SDIFF and SPOP with a count reply sets; SRANDMEMBER
// with a count an array, as Redis's.
func TestSetRESP3(t *testing.T) {
	ts := testserver.Start(t)
	d := ts.Raw(t)
	d.Do(t, "HELLO", "3")
	d.Do(t, "SADD", "s", "7", "5")
	for _, args := range [][]string{{"SMEMBERS", "s"}, {"SINTER", "s"}, {"SUNION", "s"}, {"SDIFF", "s"}, {"SPOP", "s", "5"}} {
		require.Equal(t, "~2\r\n$1\r\n5\r\n$1\r\n7\r\n", d.Do(t, args...), args[0])
		d.Do(t, "SADD", "s", "7", "5")
	}
	require.Equal(t, "~0\r\n", d.Do(t, "SMEMBERS", "missing"))
	require.Equal(t, "*2\r\n$1\r\n5\r\n$1\r\n7\r\n", d.Do(t, "SRANDMEMBER", "s", "3"))
	require.Equal(t, "*0\r\n", d.Do(t, "SRANDMEMBER", "missing", "3"))
	require.Equal(t, "_\r\n", d.Do(t, "SPOP", "missing"))
}

// TestSetRandom: SPOP and SRANDMEMBER pick members, as many as asked, distinct with a
// positive count, in each encoding; what SPOP takes leaves the set.
func TestSetRandom(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	for _, tc := range []struct {
		name, enc string
		n         int
		member    func(i int) string
	}{
		{"intset", "intset", 20, strconv.Itoa},
		{"small", "hashtable", 20, func(i int) string { return "m" + strconv.Itoa(i) }},
		{"big", "hashtable", 300, func(i int) string { return "m" + strconv.Itoa(i) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]bool{}
			for i := range tc.n {
				want[tc.member(i)] = true
				do(t, rdb, "SADD", "s", tc.member(i))
			}
			require.Equal(t, tc.enc, do(t, rdb, "OBJECT", "ENCODING", "s"))
			require.Contains(t, want, do(t, rdb, "SRANDMEMBER", "s"))
			for _, count := range []int{1, 5, tc.n - 1, tc.n, tc.n + 5} {
				got := do(t, rdb, "SRANDMEMBER", "s", count).([]any)
				require.Len(t, got, min(count, tc.n))
				seen := map[any]bool{}
				for _, m := range got {
					require.Contains(t, want, m)
					require.False(t, seen[m], "count %d: %s twice", count, m)
					seen[m] = true
				}
			}
			got := do(t, rdb, "SRANDMEMBER", "s", "-100").([]any)
			require.Len(t, got, 100)
			for _, m := range got {
				require.Contains(t, want, m)
			}

			m := do(t, rdb, "SPOP", "s").(string)
			require.True(t, want[m])
			delete(want, m)
			// 3 pops one by one, then most of the rest, which Redis rebuilds as a set anew.
			for _, count := range []int{3, len(want) - 3 - 2} {
				popped := do(t, rdb, "SPOP", "s", count).([]any)
				require.Len(t, popped, count)
				for _, m := range popped {
					require.True(t, want[m.(string)], "%s popped once, a member", m)
					delete(want, m.(string))
				}
				require.Equal(t, int64(len(want)), do(t, rdb, "SCARD", "s"))
				for m := range want {
					require.Equal(t, int64(1), do(t, rdb, "SISMEMBER", "s", m))
				}
			}
			require.Len(t, do(t, rdb, "SPOP", "s", "10"), 2)
			require.Equal(t, int64(0), do(t, rdb, "EXISTS", "s"))
		})
	}
}

// TestSetEncoding: past set-max-intset-entries an intset takes the hashtable encoding, and
// past set-max-listpack-entries or -value a set gets its index; neither goes back.
func TestSetEncoding(t *testing.T) {
	ts := testserver.Start(t, func(c *server.Config) {
		c.SetMaxIntsetEntries = 3
		c.SetMaxListpackEntries = 5
		c.SetMaxListpackValue = 8
	})
	rdb := ts.Client(t, 2)
	// When a set gets its index is TestBigCollectionsIndexed's (no reply shows it).
	do(t, rdb, "SADD", "s", "1", "2", "3")
	require.Equal(t, "intset", do(t, rdb, "OBJECT", "ENCODING", "s"))
	do(t, rdb, "SADD", "s", "4")
	require.Equal(t, "hashtable", do(t, rdb, "OBJECT", "ENCODING", "s"))
	do(t, rdb, "SREM", "s", "4", "3")
	require.Equal(t, "hashtable", do(t, rdb, "OBJECT", "ENCODING", "s"), "never back")
	do(t, rdb, "SADD", "s", "a", "b", "c", "d")
	require.Equal(t, "hashtable", do(t, rdb, "OBJECT", "ENCODING", "s"))
	require.Equal(t, []any{"1", "2", "a", "b", "c", "d"}, do(t, rdb, "SMEMBERS", "s"))
	do(t, rdb, "SREM", "s", "a", "b", "c", "d", "1")
	require.Equal(t, "hashtable", do(t, rdb, "OBJECT", "ENCODING", "s"), "never back")
	require.Equal(t, []any{"2"}, do(t, rdb, "SMEMBERS", "s"))

	do(t, rdb, "SADD", "v", "abcdefghi")
	require.Equal(t, "hashtable", do(t, rdb, "OBJECT", "ENCODING", "v"), "a long member")
	require.Equal(t, int64(1), do(t, rdb, "SISMEMBER", "v", "abcdefghi"))
}

// TestSetParams: the set thresholds under Redis's names, in CONFIG and the config file.
func TestSetParams(t *testing.T) {
	ts := testserver.Start(t, func(c *server.Config) { c.SetMaxIntsetEntries = 2 })
	rdb := ts.Client(t, 2)
	require.Equal(t, map[any]any{"set-max-intset-entries": "2", "set-max-listpack-entries": "128", "set-max-listpack-value": "64"},
		toMap(do(t, rdb, "CONFIG", "GET", "set-max-*")))
	do(t, rdb, "SADD", "s", "1", "2", "3")
	require.Equal(t, "hashtable", do(t, rdb, "OBJECT", "ENCODING", "s"))
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "SET", "set-max-intset-entries", "1000"))
	do(t, rdb, "SADD", "t", "1", "2", "3")
	require.Equal(t, "intset", do(t, rdb, "OBJECT", "ENCODING", "t"))
	require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'set-max-listpack-entries') - argument must be a memory value",
		doErr(t, rdb, "CONFIG", "SET", "set-max-listpack-entries", "-1"))
	cfg := server.DefaultConfig()
	cfg.SetMaxListpackValue = -1
	require.EqualError(t, cfg.Validate(), "set-max-listpack-value: -1 is not between 0 and 9223372036854775807")
}

// TestWatchSet: a WATCHed set changed by another client makes EXEC run nothing; an SADD of
// a member it has, or an SREM of one it has not, changes nothing, as on Redis.
func TestWatchSet(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	a, b := ts.Client(t, 2), ts.Client(t, 2)
	for _, tc := range []struct {
		name    string
		write   func() error
		changed bool
	}{
		{"SADD of a member it has", func() error { return b.SAdd(ctx, "s", "x").Err() }, false},
		{"SREM of a member it has not", func() error { return b.SRem(ctx, "s", "nope").Err() }, false},
		{"SADD of a new member", func() error { return b.SAdd(ctx, "s", "y").Err() }, true},
		{"SPOP", func() error { return b.SPop(ctx, "s").Err() }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, a.Del(ctx, "s").Err())
			require.NoError(t, a.SAdd(ctx, "s", "x").Err())
			err := a.Watch(ctx, func(tx *redis.Tx) error {
				require.NoError(t, tc.write())
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() })
				return err
			}, "s")
			if tc.changed {
				require.ErrorIs(t, err, redis.TxFailedErr)
			} else {
				require.NoError(t, err)
			}
		})
	}
}

// TestSetScript: scripts reach sets through redis.call, as an allow list's check does.
func TestSetScript(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	script := `redis.call('SADD', KEYS[1], unpack(ARGV))
return {redis.call('SISMEMBER', KEYS[1], ARGV[1]), redis.call('SCARD', KEYS[1]), redis.call('SMEMBERS', KEYS[1])}`
	require.Equal(t, []any{int64(1), int64(2), []any{"7", "9"}}, do(t, rdb, "EVAL", script, "1", "s", "9", "7"))
	do(t, rdb, "SET", "str", "x")
	require.Contains(t, doErr(t, rdb, "EVAL", "return redis.call('SADD', KEYS[1], 'x')", "1", "str"),
		"WRONGTYPE Operation against a key holding the wrong kind of value")
}

// TestMaxMemorySets: sets count towards maxmemory: SADD and the STORE commands are refused
// past it while SREM and reads go on, and an eviction policy makes room by evicting sets.
func TestMaxMemorySets(t *testing.T) {
	ts := testserver.Start(t, func(c *server.Config) {
		c.AppendOnly = false
		c.MaxMemory = 1 << 20
	})
	rdb := ts.Client(t, 2)
	ctx := context.Background()
	members := make([]any, 20)
	for i := range members {
		members[i] = strings.Repeat(strconv.Itoa(i), 50)
	}
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	sets := 0
	require.Eventually(t, func() bool {
		for range 100 {
			if err := rdb.SAdd(ctx, "s"+strconv.Itoa(sets), members...).Err(); err != nil {
				require.Equal(t, oom, err.Error())
				return true
			}
			sets++
		}
		return false
	}, 20*time.Second, time.Millisecond) // the memory check runs every 10 ms
	require.Greater(t, sets, 100)
	require.Equal(t, oom, doErr(t, rdb, "SUNIONSTORE", "u", "s1", "s2"))
	require.Equal(t, int64(1), do(t, rdb, "SISMEMBER", "s1", members[3]))
	require.Equal(t, int64(1), do(t, rdb, "SREM", "s1", members[3]))

	do(t, rdb, "CONFIG", "SET", "maxmemory-policy", "allkeys-random")
	require.Eventually(t, func() bool { return rdb.SAdd(ctx, "after", members...).Err() == nil }, 5*time.Second, 10*time.Millisecond)
	require.Less(t, rdb.DBSize(ctx).Val(), int64(sets+1), "sets were evicted to make room")
}
