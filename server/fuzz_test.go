package server

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"sort"
	"strings"
	"testing"
)

// fuzzServer is a server with no listener whose handlers the fuzzers call directly.
func fuzzServer(t testing.TB) (*Server, *client) {
	cfg := DefaultConfig()
	cfg.Shards = 4
	cfg.AppendOnly = false // the hot path in memory; and never ./data in the package directory
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return s, s.newClient(a)
}

// FuzzLimitOptions, the rate-limit verbs' options with arbitrary input, is ratelimit's
// (ratelimit/fuzz_test.go); FuzzCommands stays, as it runs every family's commands through s.run.

// FuzzCommands runs every command with arguments taken from the input: no
// handler may panic (the dispatcher would turn it into "internal error").
func FuzzCommands(f *testing.F) {
	s, c := fuzzServer(f)
	var names []string
	for name, cmd := range s.commands {
		switch name {
		case "shutdown", "quit":
			continue // they end the server or connection, by design
		case "subscribe", "psubscribe":
			continue // their replies go to the connection's writer goroutine, not to c.w
		case "psync", "sync":
			continue // the connection becomes a replica's stream: no reply in c.w, by design
		}
		names = append(names, name)
		for sub := range cmd.subcommands {
			if name == "client" && sub == "pause" {
				continue // it holds every command that follows, by design
			}
			names = append(names, name+" "+sub)
		}
	}
	sort.Strings(names)
	seeds := []string{
		"k 15 30 60", "k 4 1 1 6", "k 0 1 1s COST 0 PEEK", "k 1 10 250ms COST 99999999999999999",
		"k 9223372036854775807 9223372036854775807 9223372036854775807", "k -1 -1 -1", "k 1 1 1 TOKENS",
		"k 1 1 1e11 TOKENS 5", "k v EX 10 GET", "k 10 NX", "0 MATCH * COUNT 5 TYPE gcra", "k 1.5s 0.000000001s",
		"maxclients 5", "LIB-NAME x", "3 AUTH default pw SETNAME n",
		"app on >pw ~k* %R~r* &ch +@ratelimit -@dangerous", "app", "ratelimit", "maxmemory-policy allkeys-lru",
		"k tokens 1.5 last_refill 1732512345123", "k tokens 0.1", "k -3 WITHVALUES", "k 0 MATCH t* COUNT 2",
		"k NX GT CH INCR 1.5 m", "k 1732512345000 1732512345000 5 m", "k (1 +inf LIMIT 0 5", "k -inf (5",
		"k 0 -1 WITHSCORES", "k [a (z BYLEX REV LIMIT 1 2", "k 5 BYSCORE REV WITHSCORES", "k 3",
		"k a b c", "k 0 -1", "k a RANK -1 COUNT 0 MAXLEN 10", "k BEFORE a b", "k k2 LEFT RIGHT",
		"k v PXAT 1", "k 5 PERSIST", "k k2 REPLACE", "k 0 DB 1",
		"k 9 10 1m REFUND 3", "k 10 1 1s TIERS payments=1 default=0.8 PRIORITY payments COST 2",
		"k 10 1s APPROX REFUND 9223372036854775807 TIERS a=0.000001 PRIORITY a", "api m7 PRIORITY payments REFUND 1",
		"THROTTLE k 1 1 1s REFUND 1 WINDOW k2 5 1s TIERS x=0.5 PRIORITY x COST 3",
		"k 1 2 3 user:1", "2 k k2 LIMIT 1", "k k2 k3", "k k2 1", "k -5", "k 0 MATCH user:* COUNT 10",
	}
	for i, seed := range seeds {
		f.Add(uint16(i), seed)
	}
	f.Fuzz(func(t *testing.T, pick uint16, input string) {
		name := names[int(pick)%len(names)]
		args := [][]byte{}
		for _, w := range strings.Fields(name) {
			args = append(args, []byte(w))
		}
		for _, w := range strings.Split(input, " ") {
			args = append(args, []byte(w))
		}
		c.W.B = c.W.B[:0]
		c.NoBlock = true // a blocking pop answers as on its timeout, as in MULTI: none waits here
		s.run(c, args)
		if len(c.W.B) == 0 && name != "client kill" && name != "client reply" {
			t.Fatalf("%q: no reply", args)
		}
		if bytes.Contains(c.W.B, []byte("internal error")) {
			t.Fatalf("%q: %s", args, c.W.B)
		}
		c.closing = false
		c.W.Proto = 2
		c.reply, c.silencing = replyOn, false
	})
}
