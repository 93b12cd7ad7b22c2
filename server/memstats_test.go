package server

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/redistest"
)

// TestMemoryUsage: MEMORY USAGE is a key's bytes in the keyspace, which grow with its
// value wherever it is kept; a missing key is null; SAMPLES is checked, not needed.
func TestMemoryUsage(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)

	require.Equal(t, redis.Nil, rdb.Do(context.Background(), "MEMORY", "USAGE", "missing").Err())

	do(t, rdb, "SET", "small", "v")
	small := do(t, rdb, "MEMORY", "USAGE", "small").(int64)
	require.Greater(t, small, int64(len("small")+len("v")))
	require.Less(t, small, int64(100))

	do(t, rdb, "SET", "big", strings.Repeat("v", 10000))
	big := do(t, rdb, "MEMORY", "USAGE", "big").(int64)
	require.GreaterOrEqual(t, big, int64(10000))
	require.Less(t, big, int64(10000*5/4+200))
	require.Equal(t, big, do(t, rdb, "MEMORY", "USAGE", "big", "SAMPLES", "0"))
	require.Equal(t, big, do(t, rdb, "memory", "usage", "big", "samples", "5", "SAMPLES", "1"))

	// From a script and from a transaction, the same figure.
	require.Equal(t, big, do(t, rdb, "EVAL", "return redis.call('MEMORY', 'USAGE', KEYS[1])", 1, "big"))
	pipe := rdb.TxPipeline()
	usage := pipe.MemoryUsage(context.Background(), "big")
	_, err := pipe.Exec(context.Background())
	require.NoError(t, err)
	require.Equal(t, big, usage.Val())

	// A hash past its listpack (an object held by reference) counts its members.
	args := []any{"HSET", "h"}
	for i := range 2000 {
		args = append(args, "field:"+strconv.Itoa(i), strings.Repeat("x", 50))
	}
	do(t, rdb, args...)
	require.Equal(t, "hashtable", do(t, rdb, "OBJECT", "ENCODING", "h"))
	require.Greater(t, do(t, rdb, "MEMORY", "USAGE", "h").(int64), int64(2000*(len("field:1000")+50)))

	do(t, rdb, "THROTTLE", "limit", "10", "100", "60")
	require.Greater(t, do(t, rdb, "MEMORY", "USAGE", "limit").(int64), int64(0))

	// MEMORY STATS counts the keys and the dataset as INFO does.
	stats := toMap(do(t, rdb, "MEMORY", "STATS"))
	require.Equal(t, int64(4), stats["keys.count"])
	require.Greater(t, stats["dataset.bytes"].(int64), big)
	require.Contains(t, stats, "db.0")
	require.Equal(t, "OK", do(t, rdb, "MEMORY", "PURGE"))
	require.Contains(t, do(t, rdb, "MEMORY", "MALLOC-STATS"), "HeapInuse: ")
	require.Contains(t, do(t, rdb, "MEMORY", "DOCTOR"), "Sam")
}

// TestDifferentialMemoryLatency sends MEMORY's and LATENCY's requests whose replies are
// deterministic to throttled and to redis-server, in RESP2 and RESP3: the same bytes, errors
// included; MEMORY STATS the same fields with the same types.
func TestDifferentialMemoryLatency(t *testing.T) {
	rs := redistest.Start(t)
	ts := startServer(t)
	exact := [][]string{
		{"SET", "k", "v"},
		{"MEMORY", "USAGE", "nosuch"},
		{"MEMORY", "USAGE", "k", "SAMPLES"},
		{"MEMORY", "USAGE", "k", "SAMPLES", "abc"},
		{"MEMORY", "USAGE", "k", "SAMPLES", "-1"},
		{"MEMORY", "USAGE", "k", "FOO"},
		{"MEMORY", "USAGE", "nosuch", "SAMPLES", "0"},
		{"MEMORY", "USAGE"},
		{"MEMORY"},
		{"MEMORY", "NOSUCH"},
		{"MEMORY", "STATS", "x"},
		{"MEMORY", "DOCTOR", "x"},
		{"MEMORY", "PURGE"},
		{"MEMORY", "PURGE", "x"},
		{"MEMORY", "HELP"},
		{"MEMORY", "HELP", "x"},
		{"COMMAND", "GETKEYS", "MEMORY", "USAGE", "k"},
		{"COMMAND", "GETKEYSANDFLAGS", "MEMORY", "USAGE", "k"},
		{"CONFIG", "GET", "latency-monitor-threshold"},
		{"CONFIG", "SET", "latency-monitor-threshold", "abc"},
		{"CONFIG", "SET", "latency-monitor-threshold", "-1"},
		{"LATENCY", "DOCTOR"}, // off, and no events yet
		{"LATENCY", "LATEST"},
		{"LATENCY", "HISTORY", "command"},
		{"LATENCY", "HISTORY"},
		{"LATENCY", "RESET"},
		{"LATENCY", "RESET", "command", "nosuch"},
		{"LATENCY", "GRAPH", "command"},
		{"LATENCY", "GRAPH"},
		{"LATENCY", "LATEST", "x"},
		{"LATENCY", "DOCTOR", "x"},
		{"LATENCY", "NOSUCH"},
		{"LATENCY", "HELP"},
		{"LATENCY", "HELP", "x"},
		{"CONFIG", "SET", "latency-monitor-threshold", "200"},
		{"CONFIG", "GET", "latency-monitor-threshold"},
		{"LATENCY", "DOCTOR"}, // on, and no events yet
		{"CONFIG", "SET", "latency-monitor-threshold", "0"},
	}
	shaped := [][]string{
		{"MEMORY", "USAGE", "k"},
		{"MEMORY", "DOCTOR"},
	}
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			want, got := difftest.Dial(t, rs.Addr, proto), difftest.Dial(t, ts.addr, proto)
			for _, args := range exact {
				c := difftest.Cmd{Args: args}
				require.Equal(t, want.Do(t, c), got.Do(t, c), "%q", args)
			}
			for _, args := range shaped {
				c := difftest.Cmd{Args: args}
				w, g := want.Do(t, c), got.Do(t, c)
				require.Equal(t, w[0] == '=' || w[0] == '$', g[0] == '=' || g[0] == '$', "%q: %q, %q", args, w, g)
				require.Equal(t, w[0] == ':', g[0] == ':', "%q: %q, %q", args, w, g)
			}
			c := difftest.Cmd{Args: []string{"MEMORY", "STATS"}}
			require.Equal(t, statsShape(t, want.Do(t, c)), statsShape(t, got.Do(t, c)))
		})
	}
}

// statsShape is MEMORY STATS's reply with every number replaced by its type.
func statsShape(t *testing.T, reply string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.SplitAfter(reply, "\r\n") {
		switch {
		case line == "":
		case line[0] == ':':
			b.WriteString(":int\r\n")
		case line[0] == ',':
			b.WriteString(",double\r\n")
		case line[0] == '$' && len(line) > 1:
			b.WriteString("$\r\n") // its length: a double's text in RESP2
		default:
			if _, err := strconv.ParseFloat(strings.TrimSpace(line), 64); err == nil {
				b.WriteString("number\r\n")
			} else {
				b.WriteString(line)
			}
		}
	}
	return b.String()
}

// TestDifferentialConfigSave: CONFIG SET save checks its value as redis-server 7.0 does and
// CONFIG GET shows it as Redis does.
func TestDifferentialConfigSave(t *testing.T) {
	rs := redistest.Start(t)
	ts := startServer(t)
	want, got := difftest.Dial(t, rs.Addr, 2), difftest.Dial(t, ts.addr, 2)
	for _, v := range []string{"3000 5", "", "0 5", "10 -1", "abc", "1", "1 2 3", "900 1 300 10", " 60  1 ", "60 ", "60 +5", "1 0"} {
		for _, args := range [][]string{{"CONFIG", "SET", "save", v}, {"CONFIG", "GET", "save"}} {
			c := difftest.Cmd{Args: args}
			require.Equal(t, want.Do(t, c), got.Do(t, c), "%q", args)
		}
	}
}

// TestConfigSetUnchanged: a parameter that cannot change at run time takes the value it
// has, as Redis takes any parameter's own value (its CONFIG sanity test sets them all so),
// and refuses any other.
func TestConfigSetUnchanged(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	cfgPort := do(t, rdb, "CONFIG", "GET", "port").([]any)[1].(string)
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "SET", "port", cfgPort, "shards", "16", "maxmemory", "1000000"))
	require.Equal(t, []any{"maxmemory", "1000000"}, do(t, rdb, "CONFIG", "GET", "maxmemory"))
	require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'shards') - can't set immutable config",
		doErr(t, rdb, "CONFIG", "SET", "shards", "32"))
	require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'shards') - duplicate parameter",
		doErr(t, rdb, "CONFIG", "SET", "shards", "16", "shards", "16"))
}
