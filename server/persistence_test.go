package server

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// infoFields returns INFO section's fields.
func infoFields(t testing.TB, rdb *redis.Client, section string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(do(t, rdb, "INFO", section).(string), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// restartable starts servers one after another on the same directory and clock.
type restartable struct {
	dir   string
	clock *clock
}

func newRestartable(t *testing.T) *restartable {
	return &restartable{dir: t.TempDir(), clock: newClock()}
}

func (r *restartable) start(t *testing.T, configure ...func(*Config)) (*testServer, *redis.Client) {
	t.Helper()
	ts := startServer(t, append([]func(*Config){func(c *Config) {
		c.Dir = r.dir
		c.Now = r.clock.Now
	}}, configure...)...)
	return ts, ts.client(t, 2)
}

func TestRestartKeepsStateAndTTLs(t *testing.T) {
	r := newRestartable(t)
	ts, rdb := r.start(t)
	for range 5 {
		do(t, rdb, "THROTTLE", "login", "4", "5", "1m")
	}
	require.Equal(t, []any{int64(1), int64(5), int64(0), int64(12000), int64(60000)},
		do(t, rdb, "THROTTLE", "login", "4", "5", "1m"))
	do(t, rdb, "SET", "session", "abc", "EX", "100")
	do(t, rdb, "SET", "short", "x", "EX", "5")
	do(t, rdb, "SET", "plain", "y")
	do(t, rdb, "INCRBY", "counter", "41")
	require.NoError(t, ts.Close())

	// Down for ten seconds of wall time: TTLs and the GCRA state kept counting.
	r.clock.Advance(10 * time.Second)
	_, rdb = r.start(t)
	require.Equal(t, "y", do(t, rdb, "GET", "plain"))
	require.Equal(t, int64(42), do(t, rdb, "INCR", "counter"))
	require.Equal(t, int64(90), do(t, rdb, "TTL", "session"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "short"), "expired while the server was down")
	require.Equal(t, []any{int64(1), int64(5), int64(0), int64(2000), int64(50000)},
		do(t, rdb, "THROTTLE", "login", "4", "5", "1m"), "no fresh quota after a restart")
	info := infoFields(t, rdb, "persistence")
	require.Equal(t, "4", info["aof_loaded_keys"])
	require.Equal(t, "1", info["aof_loaded_expired_keys"])
	require.Equal(t, "0", info["aof_loaded_redo_records"], "a clean stop leaves nothing to replay")
	require.Equal(t, "0", info["aof_loaded_redo_bytes"])
}

// TestRestartAfterCrashReportsRedoReplay: a start from a directory as kill -9 leaves it
// (with everysec, the changes only in the redo log) replays it, and INFO says how much.
func TestRestartAfterCrashReportsRedoReplay(t *testing.T) {
	r := newRestartable(t)
	ts, rdb := r.start(t)
	for i := range 50 {
		do(t, rdb, "SET", "k"+strconv.Itoa(i), "v")
	}
	// The copy of the live directory is what a crash leaves: no batch came since the start.
	crashed := t.TempDir()
	entries, err := os.ReadDir(r.dir)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(r.dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(crashed, e.Name()), b, 0o644))
	}
	require.NoError(t, ts.Close())

	r.dir = crashed
	ts, rdb = r.start(t)
	require.Equal(t, int64(50), do(t, rdb, "DBSIZE"))
	info := infoFields(t, rdb, "persistence")
	require.Equal(t, "50", info["aof_loaded_redo_records"], "one record a SET")
	bytes, err := strconv.Atoi(info["aof_loaded_redo_bytes"])
	require.NoError(t, err)
	require.Greater(t, bytes, 50*len("k0v"))
	_, err = strconv.Atoi(info["aof_load_time_ms"])
	require.NoError(t, err)
	// /metrics says the same.
	fams := scrape(t, serveMetrics(t, ts))
	require.Equal(t, 50.0, value(t, fams, "throttled_persistence_loaded_redo_records"))
	require.Equal(t, float64(bytes), value(t, fams, "throttled_persistence_loaded_redo_bytes"))
	require.Equal(t, 0.0, value(t, fams, "throttled_persistence_load_dropped_bytes"))
}

func TestFlushAllIsDurable(t *testing.T) {
	r := newRestartable(t)
	ts, rdb := r.start(t)
	do(t, rdb, "SET", "a", "1")
	require.Equal(t, "OK", do(t, rdb, "SAVE"))
	require.Equal(t, "OK", do(t, rdb, "FLUSHALL"))
	do(t, rdb, "SET", "b", "2")
	require.NoError(t, ts.Close())
	_, rdb = r.start(t)
	require.Equal(t, []any{"b"}, do(t, rdb, "KEYS", "*"))
}

func TestAppendOnlyNo(t *testing.T) {
	r := newRestartable(t)
	ts, rdb := r.start(t, func(c *Config) { c.AppendOnly = false })
	do(t, rdb, "SET", "a", "1")
	require.Equal(t, "ERR appendonly is no: the state is kept in memory only", doErr(t, rdb, "SAVE"))
	require.Equal(t, "ERR appendonly is no: the state is kept in memory only", doErr(t, rdb, "BGSAVE"))
	require.Equal(t, map[any]any{"appendonly": "no"}, configGet(t, rdb, "appendonly"))
	info := infoFields(t, rdb, "persistence")
	require.Equal(t, "0", info["aof_enabled"])
	require.Equal(t, "0", info["loading"])
	require.NoError(t, ts.Close())
	entries, err := os.ReadDir(r.dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing written")
}

func configGet(t testing.TB, rdb *redis.Client, name string) map[any]any {
	t.Helper()
	reply := do(t, rdb, "CONFIG", "GET", name).([]any)
	out := map[any]any{}
	for i := 0; i+1 < len(reply); i += 2 {
		out[reply[i]] = reply[i+1]
	}
	return out
}

func TestPersistenceCommands(t *testing.T) {
	r := newRestartable(t)
	_, rdb := r.start(t)
	require.Equal(t, map[any]any{"appendonly": "yes"}, configGet(t, rdb, "appendonly"))
	require.Equal(t, map[any]any{"appendfsync": "everysec"}, configGet(t, rdb, "appendfsync"))
	do(t, rdb, "SET", "a", "1")
	require.Equal(t, "OK", do(t, rdb, "SAVE"))
	require.InDelta(t, time.Now().Unix(), do(t, rdb, "LASTSAVE").(int64), 2)
	info := infoFields(t, rdb, "persistence")
	for field, want := range map[string]string{
		"loading": "0", "aof_enabled": "1", "aof_fsync": "everysec", "aof_last_write_status": "ok",
		"rdb_last_bgsave_status": "ok", "rdb_changes_since_last_save": "0", "aof_dir": r.dir,
	} {
		require.Equal(t, want, info[field], field)
	}
	require.Equal(t, "Background saving started", do(t, rdb, "BGSAVE"))

	require.Equal(t, "OK", do(t, rdb, "CONFIG", "SET", "appendfsync", "always"))
	require.Equal(t, map[any]any{"appendfsync": "always"}, configGet(t, rdb, "appendfsync"))
	require.Contains(t, doErr(t, rdb, "CONFIG", "SET", "appendfsync", "sometimes"), "always, everysec, no")
	require.Contains(t, doErr(t, rdb, "CONFIG", "SET", "appendonly", "no"), "immutable")
}

// TestAlwaysRepliesAfterSync: with appendfsync always, a write's reply comes once it is
// synced, for every command of a pipeline.
func TestAlwaysRepliesAfterSync(t *testing.T) {
	r := newRestartable(t)
	_, rdb := r.start(t, func(c *Config) { c.AppendFsync = "always" })
	for i := range 20 {
		require.Equal(t, int64(i+1), do(t, rdb, "INCR", "n"))
		require.Equal(t, "0", infoFields(t, rdb, "persistence")["rdb_changes_since_last_save"])
	}
	pipe := rdb.Pipeline()
	for range 100 {
		pipe.Incr(context.Background(), "n")
	}
	cmds, err := pipe.Exec(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(120), cmds[99].(*redis.IntCmd).Val())
	require.Equal(t, "0", infoFields(t, rdb, "persistence")["rdb_changes_since_last_save"])
}

func TestConfigValidatesPersistence(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AppendFsync = "sometimes"
	require.EqualError(t, cfg.Validate(), `appendfsync: "sometimes" is not one of always, everysec, no`)
	cfg = DefaultConfig()
	cfg.Dir = ""
	require.ErrorContains(t, cfg.Validate(), "dir:")
}

func TestForeignDirRefused(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/mine.txt", []byte("not yours"), 0o644))
	cfg := DefaultConfig()
	cfg.Dir = dir
	_, err := New(cfg)
	require.ErrorContains(t, err, "not a throttled data directory")
	b, err := os.ReadFile(dir + "/mine.txt")
	require.NoError(t, err)
	require.Equal(t, "not yours", string(b))
}

// TestInfoMemoryCountsPersistence checks that INFO memory's used_memory counts what Pebble
// holds outside the Go heap (its memtables and block cache) besides the heap.
func TestInfoMemoryCountsPersistence(t *testing.T) {
	r := newRestartable(t)
	ts, rdb := r.start(t)
	for i := range 2000 {
		do(t, rdb, "SET", "key:"+strconv.Itoa(i), strings.Repeat("v", 100))
	}
	do(t, rdb, "SAVE")
	m := infoFields(t, rdb, "memory")
	num := func(name string) int64 {
		n, err := strconv.ParseInt(m[name], 10, 64)
		require.NoError(t, err, name)
		return n
	}
	require.Positive(t, num("persistence_memtables"))
	require.Equal(t, num("persistence_memtables")+num("persistence_block_cache"), num("used_memory_persistence"))
	want := num("used_memory_heap")
	if ts.store.Info().OffHeap {
		want += num("used_memory_persistence")
	}
	require.Equal(t, want, num("used_memory"))
	require.Positive(t, num("used_memory_rss"))
}

// TestBlockSurvivesRestart: a key in its penalty box (BLOCK) is still there after a restart,
// for the rest of its block, although its algorithm would admit again by then.
func TestBlockSurvivesRestart(t *testing.T) {
	r := newRestartable(t)
	ts, rdb := r.start(t)
	do(t, rdb, "SLIDE", "login", "3", "1m", "COST", "3")
	require.Equal(t, []any{int64(1), int64(3), int64(0), int64(900000), int64(900000)},
		do(t, rdb, "SLIDE", "login", "3", "1m", "BLOCK", "15m"))
	require.NoError(t, ts.Close())

	r.clock.Advance(5 * time.Minute)
	_, rdb = r.start(t)
	require.Equal(t, []any{int64(1), int64(3), int64(0), int64(600000), int64(600000)},
		do(t, rdb, "SLIDE", "login", "3", "1m"), "still blocked after the restart")
	require.Equal(t, int64(600000), do(t, rdb, "PTTL", "login"))
}
