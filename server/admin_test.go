package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/command"
)

func TestInfo(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	for i := 0; i < 3; i++ {
		do(t, rdb, "THROTTLE", "k", 1, 1, "1m")
	}
	do(t, rdb, "CL.THROTTLE", "c", 0, 1, 60)
	do(t, rdb, "SET", "s", "v", "EX", 100)
	all := do(t, rdb, "INFO").(string)
	for _, want := range []string{"# Server\r\n", "redis_version:7.2.0\r\n", "# Clients\r\n", "connected_clients:1\r\n",
		"# Memory\r\n", "used_memory:", "# Stats\r\n", "total_commands_processed:", "# Throttle\r\n",
		"throttle_allowed:3\r\n", "throttle_denied:1\r\n", "verb_throttle:allowed=2,denied=1\r\n",
		"verb_cl_throttle:allowed=1,denied=0\r\n", "verb_gcra:allowed=0,denied=0\r\n",
		"# Keyspace\r\n", "db0:keys=3,expires=3,avg_ttl=0\r\n"} {
		require.Contains(t, all, want)
	}
	only := do(t, rdb, "INFO", "throttle", "KEYSPACE").(string)
	require.True(t, strings.HasPrefix(only, "# Throttle\r\n"), only)
	require.Contains(t, only, "# Keyspace")
	require.NotContains(t, only, "# Server")
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "RESETSTAT"))
	require.Contains(t, do(t, rdb, "INFO", "throttle").(string), "throttle_allowed:0\r\n")
}

func TestCommandIntrospection(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	count := do(t, rdb, "COMMAND", "COUNT").(int64)
	require.Equal(t, int64(len(ts.commands)), count)
	infos, err := rdb.Command(ctx).Result()
	require.NoError(t, err)
	require.Len(t, infos, int(count))
	cl := infos["cl.throttle"]
	require.NotNil(t, cl)
	require.Equal(t, int8(-5), cl.Arity)
	require.Equal(t, int8(1), cl.FirstKeyPos)
	require.Contains(t, cl.Flags, "write")

	one := do(t, rdb, "COMMAND", "INFO", "get", "nosuch").([]any)
	require.Len(t, one, 2)
	require.Equal(t, "get", one[0].([]any)[0])
	require.Nil(t, one[1])

	docs := do(t, rdb, "COMMAND", "DOCS", "throttle").([]any)
	require.Equal(t, "throttle", docs[0])
	doc := docs[1].([]any)
	require.Equal(t, "summary", doc[0])
	require.Equal(t, "arguments", doc[6])
	args := doc[7].([]any)
	require.Len(t, args, 11)
	require.Equal(t, []any{"name", "key", "type", "key"}, args[0])
	require.Equal(t, []any{"name", "global", "type", "pure-token", "token", "GLOBAL", "flags", []any{"optional"}}, args[10])
	require.Equal(t, []any{"name", "duration", "type", "string", "token", "BLOCK", "flags", []any{"optional"}}, args[9])
	require.Equal(t, []any{"name", "n", "type", "integer", "token", "COST", "flags", []any{"optional"}}, args[4])

	require.Equal(t, []any{"k1", "k2"}, do(t, rdb, "COMMAND", "GETKEYS", "MSET", "k1", "v", "k2", "v"))
	list := do(t, rdb, "COMMAND", "LIST", "FILTERBY", "PATTERN", "cl.*").([]any)
	require.Equal(t, []any{"cl.throttle"}, list)
}

func TestConfigGetSet(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	require.Equal(t, []any{"maxclients", "10000"}, do(t, rdb, "CONFIG", "GET", "maxclients"))
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "SET", "maxclients", "50", "loglevel", "warning"))
	require.Equal(t, []any{"maxclients", "50", "loglevel", "warning"}, do(t, rdb, "CONFIG", "GET", "maxclients", "loglevel"))
	require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config", doErr(t, rdb, "CONFIG", "SET", "port", "1"))
	require.Equal(t, "ERR Unknown option or number of arguments for CONFIG SET - 'nope'", doErr(t, rdb, "CONFIG", "SET", "nope", "1"))
	require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive", doErr(t, rdb, "CONFIG", "SET", "maxclients", "0", "loglevel", "debug"))
	require.Equal(t, []any{"loglevel", "warning"}, do(t, rdb, "CONFIG", "GET", "loglevel"), "a failed CONFIG SET changes nothing")
	save := do(t, rdb, "CONFIG", "GET", "save").([]any)
	require.Equal(t, "save", save[0])
}

func TestTimeSaveRole(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	tm := do(t, rdb, "TIME").([]any)
	require.Equal(t, []any{"1700000000", "0"}, tm)
	require.Equal(t, "OK", do(t, rdb, "SAVE"))
	require.InDelta(t, time.Now().Unix(), do(t, rdb, "LASTSAVE").(int64), 2)
	require.Equal(t, "Background saving started", do(t, rdb, "BGSAVE"))
	require.Equal(t, []any{"master", int64(0), []any{}}, do(t, rdb, "ROLE"))
}

func TestShutdown(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send(t, "SHUTDOWN NOSAVE\r\n")
	require.True(t, c.closed())
	select {
	case <-ts.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop")
	}
}

// TestCommandDocsWellFormed checks every documented argument as redis-cli
// reads them for its hints: a known type, a name, and children for oneof and block.
func TestCommandDocsWellFormed(t *testing.T) {
	ts := startServer(t)
	var check func(path string, args []command.Argument)
	check = func(path string, args []command.Argument) {
		for _, a := range args {
			require.NotEmpty(t, a.Name, path)
			require.Contains(t, []string{"key", "string", "integer", "pure-token", "oneof", "block"}, a.Type, path)
			if a.Type == "oneof" || a.Type == "block" {
				require.NotEmpty(t, a.Children, "%s %s", path, a.Name)
				check(path+" "+a.Name, a.Children)
			}
		}
	}
	for _, cmd := range ts.sortedCommands() {
		check(cmd.name, command.ParseSyntax(cmd.syntax))
		for _, sub := range sortedSubcommands(cmd) {
			check(sub.name, command.ParseSyntax(sub.syntax))
		}
	}
}
