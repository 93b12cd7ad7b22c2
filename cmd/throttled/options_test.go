package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/server"
)

// serve runs a server built from cfg on a free loopback port until the test ends or stop is
// called, and returns a client of it.
func serve(t *testing.T, cfg server.Config, password string) (rdb *redis.Client, stop func()) {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := server.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.Serve(ln)
	rdb = redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Password: password, Protocol: 2})
	stop = func() {
		rdb.Close()
		s.Close()
	}
	t.Cleanup(stop)
	return rdb, stop
}

// configAll is CONFIG GET * as a map.
func configAll(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	m, err := rdb.ConfigGet(context.Background(), "*").Result()
	require.NoError(t, err)
	return m
}

func TestLoadOptions(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "throttled.conf")
	require.NoError(t, os.WriteFile(conf, []byte(`# replication
slaveof 10.0.0.1 6380
masterauth "with \"quotes\" and \\ \x41"
repl-backlog-size 16mb
slave-priority 10
replica-announce-ip 192.168.1.9
replica-announce-port 7001
min-replicas-to-write 1
min-slaves-max-lag 5
replica-read-only yes
`), 0o644))
	cfg, err := loadOptions([]string{conf, "--masteruser", "repl", "--port", "7000"})
	require.NoError(t, err)
	require.Equal(t, conf, cfg.ConfigFile)
	require.Equal(t, "10.0.0.1 6380", cfg.ReplicaOf)
	require.Equal(t, `with "quotes" and \ A`, cfg.MasterAuth)
	require.Equal(t, "repl", cfg.MasterUser)
	require.Equal(t, 16<<20, cfg.ReplBacklogSize)
	require.Equal(t, 10, cfg.ReplicaPriority)
	require.Equal(t, "192.168.1.9", cfg.ReplicaAnnounceIP)
	require.Equal(t, 7001, cfg.ReplicaAnnouncePort)
	require.Equal(t, 1, cfg.MinReplicasToWrite)
	require.Equal(t, 5, cfg.MinReplicasMaxLag)
	require.Equal(t, 7000, cfg.Port)

	// A relative path is made absolute: CONFIG REWRITE finds the file whatever the directory.
	t.Chdir(dir)
	cfg, err = loadOptions([]string{"throttled.conf", "--replicaof", "no", "one"})
	require.NoError(t, err)
	require.Equal(t, conf, cfg.ConfigFile)
	require.Equal(t, "", cfg.ReplicaOf)
	cfg, err = loadOptions([]string{"--replicaof", "127.0.0.1 6379"})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1 6379", cfg.ReplicaOf)
	require.Equal(t, "", cfg.ConfigFile)
}

func TestBadReplicationOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--replicaof", "host"}, "replicaof: takes a host and a port, got 1 values"},
		{[]string{"--slaveof", "host", "0"}, `replicaof: port "0" is not between 1 and 65535`},
		{[]string{"--replica-read-only", "no"}, "replica-read-only: throttled replicas are always read-only"},
		{[]string{"--repl-backlog-size", "0"}, "repl-backlog-size: 0 is not between 1 and"},
		{[]string{"--repl-backlog-size", "lots"}, `repl-backlog-size: "lots" is not a number`},
		{[]string{"--replica-priority", "-1"}, "replica-priority: -1 is not between 0 and 2147483647"},
		{[]string{"--replica-announce-port", "70000"}, "replica-announce-port: 70000 is not between 0 and 65535"},
		{[]string{"--min-replicas-to-write", "-2"}, "min-replicas-to-write: -2 is not between 0"},
		{[]string{"--min-replicas-max-lag", "-1"}, "min-replicas-max-lag: -1 is not between 0"},
		{[]string{"--masterauth"}, "masterauth: takes one value, got 0"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := loadOptions(tc.args)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestRewriteRoundTrip: a file written by CONFIG REWRITE loads back, through the same path as
// the binary's, to the options the server was running with, every option included.
func TestRewriteRoundTrip(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "throttled.conf")
	data := filepath.Join(dir, "da ta")
	require.NoError(t, os.WriteFile(conf, []byte(`# throttled
port 7000
bind 127.0.0.1
dir "`+data+`"
appendonly no
appendfsync always
requirepass first

# limits
maxclients 500
proto-max-bulk-len 2mb
io-threads 0
shards 64
slaveof 10.0.0.1 6380
replicaof 10.0.0.2 6380
replica-read-only yes
`), 0o600))
	cfg, err := loadOptions([]string{conf})
	require.NoError(t, err)
	// A line CONFIG REWRITE leaves as it is, standing for the options of a later feature that
	// the parameter table does not hold.
	raw, err := os.ReadFile(conf)
	require.NoError(t, err)
	const other = "policy-like-line-kept-as-is\n"
	require.NoError(t, os.WriteFile(conf, []byte(strings.Replace(string(raw), "slaveof", other+"slaveof", 1)), 0o600))

	rdb, stop := serve(t, cfg, "first")
	ctx := context.Background()
	password := "p a\"ss\\w\n\x01"
	for _, kv := range [][2]string{
		{"loglevel", "WARNING"},
		{"maxclients", "10000"}, // back to the default: its line stays, with the default
		{"masterauth", "s3cret \"x\""},
		{"masteruser", "replicator"},
		{"repl-backlog-size", "3mb"},
		{"slave-priority", "7"},
		{"replica-announce-ip", "10.1.1.1"},
		{"replica-announce-port", "6390"},
		{"min-slaves-to-write", "2"},
		{"min-replicas-max-lag", "3"},
		{"requirepass", password},
	} {
		require.NoError(t, rdb.ConfigSet(ctx, kv[0], kv[1]).Err(), kv[0])
	}
	rdb = redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, Password: password, Protocol: 2})
	defer rdb.Close()
	require.NoError(t, rdb.ConfigRewrite(ctx).Err())
	want := configAll(t, rdb)
	stop()

	written, err := os.ReadFile(conf)
	require.NoError(t, err)
	st, err := os.Stat(conf)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the rewrite keeps the file's permissions")
	require.Equal(t, `# throttled
port 7000
bind 127.0.0.1
dir "`+data+`"
appendonly no
appendfsync always
requirepass "p a\"ss\\w\n\x01"

# limits
maxclients 10000
proto-max-bulk-len 2mb
io-threads 0
shards 64
policy-like-line-kept-as-is
replicaof 10.0.0.2 6380

replica-read-only yes
# Generated by CONFIG REWRITE
loglevel warning
masterauth "s3cret \"x\""
masteruser "replicator"
repl-backlog-size 3mb
replica-priority 7
replica-announce-ip "10.1.1.1"
replica-announce-port 6390
min-replicas-to-write 2
min-replicas-max-lag 3
`, string(written))

	require.NoError(t, os.WriteFile(conf, []byte(strings.Replace(string(written), other, "", 1)), 0o600))
	again, err := loadOptions([]string{conf})
	require.NoError(t, err)
	rdb, _ = serve(t, again, password)
	require.Equal(t, want, configAll(t, rdb))

	// A rewrite of an unchanged server changes nothing.
	require.NoError(t, rdb.ConfigRewrite(ctx).Err())
	same, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Equal(t, strings.Replace(string(written), other, "", 1), string(same))
}

// TestRewriteCoversEveryOption: every option the config file takes is a CONFIG parameter,
// so that CONFIG REWRITE writes it back.
func TestRewriteCoversEveryOption(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.AppendOnly = false
	rdb, _ := serve(t, cfg, "")
	params := configAll(t, rdb)
	for _, name := range []string{"port", "bind", "dir", "appendonly", "appendfsync", "requirepass", "loglevel",
		"maxclients", "proto-max-bulk-len", "shards", "io-threads", "replicaof", "slaveof", "masterauth",
		"masteruser", "repl-backlog-size", "replica-priority", "slave-priority", "replica-announce-ip",
		"replica-announce-port", "min-replicas-to-write", "min-replicas-max-lag", "replica-read-only"} {
		require.Contains(t, params, name)
		// The option takes what CONFIG GET shows (replicaof's empty value means none).
		v := params[name]
		if v == "" {
			continue
		}
		_, err := loadOptions(append([]string{"--" + name}, strings.Fields(v)...))
		require.NoError(t, err, name)
	}
}

// The policy directives are the server's: the options' reader skips them, and the server
// reads them from the file it is given.
func TestPolicyDirectivesInConfigFile(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	require.NoError(t, os.WriteFile(conf, []byte("port 7001\npolicy api THROTTLE 9 10 1m SOFT 0.5\npolicy-allow api vip\nPOLICY-DENY api bot*\n"), 0o644))
	cfg, err := loadOptions([]string{conf, "--port", "0", "--appendonly", "no"})
	require.NoError(t, err)
	rdb, _ := serve(t, cfg, "")
	v, err := rdb.Do(context.Background(), "CHECK", "api", "bot-1").Result()
	require.NoError(t, err)
	require.Equal(t, "denylisted", v.([]any)[5])
}

// TestSetOptions: the set thresholds in the config file, on the command line, in CONFIG GET
// and back in the file by CONFIG REWRITE.
func TestSetOptions(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "throttled.conf")
	require.NoError(t, os.WriteFile(conf, []byte("appendonly no\nset-max-intset-entries 7\nset-max-listpack-entries 9\n"), 0o600))
	cfg, err := loadOptions([]string{conf, "--set-max-listpack-value", "5"})
	require.NoError(t, err)
	require.Equal(t, [3]int{7, 9, 5}, [3]int{cfg.SetMaxIntsetEntries, cfg.SetMaxListpackEntries, cfg.SetMaxListpackValue})
	_, err = loadOptions([]string{"--set-max-intset-entries", "-1"})
	require.ErrorContains(t, err, "set-max-intset-entries")

	rdb, _ := serve(t, cfg, "")
	ctx := context.Background()
	require.Equal(t, map[string]string{"set-max-intset-entries": "7", "set-max-listpack-entries": "9", "set-max-listpack-value": "5"},
		rdb.ConfigGet(ctx, "set-max-*").Val())
	require.NoError(t, rdb.ConfigSet(ctx, "set-max-intset-entries", "100").Err())
	require.NoError(t, rdb.ConfigRewrite(ctx).Err())
	written, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Equal(t, "appendonly no\nset-max-intset-entries 100\nset-max-listpack-entries 9\n# Generated by CONFIG REWRITE\nset-max-listpack-value 5\n", string(written))
}

// TestNotifyKeyspaceEventsOption: notify-keyspace-events comes from the config file (quoted
// or not, "" for none, as in a stock redis.conf) or the command line, a bad one fails with
// its name, and CONFIG REWRITE writes it back quoted, as Redis does.
func TestNotifyKeyspaceEventsOption(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	require.NoError(t, os.WriteFile(conf, []byte("appendonly no\nnotify-keyspace-events \"Ex\"\n"), 0o600))
	cfg, err := loadOptions([]string{conf})
	require.NoError(t, err)
	require.Equal(t, "Ex", cfg.NotifyKeyspaceEvents)
	cfg2, err := loadOptions([]string{conf, "--notify-keyspace-events", "KEA"})
	require.NoError(t, err)
	require.Equal(t, "KEA", cfg2.NotifyKeyspaceEvents)
	_, err = loadOptions([]string{"--notify-keyspace-events", "KEQ"})
	require.ErrorContains(t, err, "notify-keyspace-events")

	rdb, _ := serve(t, cfg, "")
	ctx := context.Background()
	require.Equal(t, "xE", configAll(t, rdb)["notify-keyspace-events"])
	require.NoError(t, rdb.ConfigSet(ctx, "notify-keyspace-events", "KEA").Err())
	require.NoError(t, rdb.ConfigRewrite(ctx).Err())
	written, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Contains(t, string(written), "notify-keyspace-events \"AKE\"\n")
	require.NotContains(t, string(written), "\"Ex\"")
}
