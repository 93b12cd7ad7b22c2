package server

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// expect reads exactly len(want) bytes from c and requires them to be want.
func (r *rawConn) expect(t testing.TB, want string) {
	t.Helper()
	got := make([]byte, len(want))
	_, err := io.ReadFull(r.rd, got)
	require.NoError(t, err, "reading %q", want)
	require.Equal(t, want, string(got))
}

// skipHello reads a HELLO reply up to its last line, the empty list of modules.
func (r *rawConn) skipHello(t testing.TB) {
	t.Helper()
	for r.line(t) != "*0" {
	}
}

const contextError = "-ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"

// TestPubSubRepliesRESP2: every reply as Redis 7 sends it, whichever way the client is served.
func TestPubSubRepliesRESP2(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads))
			c := ts.raw(t)
			c.send(t, "UNSUBSCRIBE\r\nPUNSUBSCRIBE\r\nUNSUBSCRIBE x\r\nSET k v\r\nSUBSCRIBE a b a\r\nGET k\r\nPING\r\nPING hi\r\nPING a b\r\nCLIENT SETNAME x\r\nPSUBSCRIBE p*\r\n")
			c.expect(t, "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n")
			c.expect(t, "*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n")
			c.expect(t, "*3\r\n$11\r\nunsubscribe\r\n$1\r\nx\r\n:0\r\n")
			c.expect(t, "+OK\r\n")
			c.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n")
			c.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n")
			c.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:2\r\n")
			c.expect(t, fmt.Sprintf(contextError, "get"))
			c.expect(t, "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
			c.expect(t, "*2\r\n$4\r\npong\r\n$2\r\nhi\r\n")
			c.expect(t, "-ERR wrong number of arguments for 'ping' command\r\n")
			c.expect(t, fmt.Sprintf(contextError, "client|setname"))
			c.expect(t, "*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:3\r\n")

			rdb := ts.client(t, 2)
			require.Equal(t, int64(1), do(t, rdb, "PUBLISH", "a", "hello"))
			c.expect(t, "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$5\r\nhello\r\n")
			require.Equal(t, int64(1), do(t, rdb, "PUBLISH", "pq", "bin\x00ary"))
			c.expect(t, "*4\r\n$8\r\npmessage\r\n$2\r\np*\r\n$2\r\npq\r\n$7\r\nbin\x00ary\r\n")
			require.Equal(t, int64(0), do(t, rdb, "PUBLISH", "c", "nobody"))

			c.send(t, "UNSUBSCRIBE b nope\r\nUNSUBSCRIBE\r\nUNSUBSCRIBE\r\nPUNSUBSCRIBE\r\nGET k\r\nPING\r\n")
			c.expect(t, "*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:2\r\n")
			c.expect(t, "*3\r\n$11\r\nunsubscribe\r\n$4\r\nnope\r\n:2\r\n")
			c.expect(t, "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n")
			c.expect(t, "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:1\r\n") // the pattern is left
			c.expect(t, "*3\r\n$12\r\npunsubscribe\r\n$2\r\np*\r\n:0\r\n")
			c.expect(t, "$1\r\nv\r\n")
			c.expect(t, "+PONG\r\n")

			// RESET leaves every subscription without a word; QUIT is allowed.
			c.send(t, "SUBSCRIBE a\r\nPSUBSCRIBE *\r\nRESET\r\nGET k\r\nSUBSCRIBE a\r\nQUIT\r\n")
			c.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n")
			c.expect(t, "*3\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n:2\r\n")
			c.expect(t, "+RESET\r\n")
			c.expect(t, "$1\r\nv\r\n")
			c.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n")
			c.expect(t, "+OK\r\n")
			require.True(t, c.closed())
			require.Eventually(t, func() bool { return do(t, rdb, "PUBLISH", "a", "x") == int64(0) }, 5*time.Second, 10*time.Millisecond)
		})
	}
}

// TestPubSubRepliesRESP3: pushes, and any command runs while subscribed, until HELLO 2.
func TestPubSubRepliesRESP3(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads))
			c := ts.raw(t)
			c.send(t, "HELLO 3\r\n")
			c.skipHello(t)
			c.send(t, "UNSUBSCRIBE\r\nSUBSCRIBE a\r\nGET k\r\nPING\r\nPUBSUB NUMSUB a b\r\nPUBSUB CHANNELS\r\nPUBSUB NUMPAT\r\nPUBLISH a hello\r\nPSUBSCRIBE a*\r\nPUBLISH a x\r\nPUBSUB CHANNELS a b\r\nHELLO 2\r\n")
			c.expect(t, ">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n")
			c.expect(t, ">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n")
			c.expect(t, "_\r\n")
			c.expect(t, "+PONG\r\n")
			c.expect(t, "*4\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:0\r\n")
			c.expect(t, "*1\r\n$1\r\na\r\n")
			c.expect(t, ":0\r\n")
			// Its own message comes before PUBLISH's reply, as from Redis.
			c.expect(t, ">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$5\r\nhello\r\n")
			c.expect(t, ":1\r\n")
			c.expect(t, ">3\r\n$10\r\npsubscribe\r\n$2\r\na*\r\n:2\r\n")
			c.expect(t, ">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nx\r\n")
			c.expect(t, ">4\r\n$8\r\npmessage\r\n$2\r\na*\r\n$1\r\na\r\n$1\r\nx\r\n")
			c.expect(t, ":2\r\n")
			c.expect(t, "-ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.\r\n")
			c.expect(t, "*14\r\n")
			c.skipHello(t)
			c.send(t, "PING\r\nPUBLISH a y\r\n")
			c.expect(t, "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
			c.expect(t, fmt.Sprintf(contextError, "publish"))
		})
	}
}

// TestPubSubGoRedis drives go-redis's PubSub in both protocols.
func TestPubSubGoRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		for _, mode := range ioModes {
			t.Run(fmt.Sprintf("RESP%d/%s", proto, mode.name), func(t *testing.T) {
				ts := startServer(t, withIOThreads(mode.threads))
				rdb := ts.client(t, proto)
				ctx := context.Background()
				ps := rdb.Subscribe(ctx, "news", "sport")
				t.Cleanup(func() { ps.Close() })
				for i := 1; i <= 2; i++ {
					msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
					require.NoError(t, err)
					sub := msg.(*redis.Subscription)
					require.Equal(t, "subscribe", sub.Kind)
					require.Equal(t, i, sub.Count)
				}
				require.NoError(t, ps.PSubscribe(ctx, "n*"))
				msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
				require.NoError(t, err)
				require.Equal(t, &redis.Subscription{Kind: "psubscribe", Channel: "n*", Count: 3}, msg)

				require.Equal(t, map[string]int64{"news": 1, "sport": 1, "none": 0}, rdb.PubSubNumSub(ctx, "news", "sport", "none").Val())
				require.Equal(t, int64(1), rdb.PubSubNumPat(ctx).Val())
				require.Equal(t, []string{"news", "sport"}, rdb.PubSubChannels(ctx, "*").Val())
				require.Equal(t, []string{"sport"}, rdb.PubSubChannels(ctx, "s*").Val())

				ch := ps.Channel()
				receive := func() *redis.Message {
					select {
					case m := <-ch:
						return m
					case <-time.After(5 * time.Second):
						t.Fatal("no message")
						return nil
					}
				}
				require.Equal(t, int64(2), rdb.Publish(ctx, "news", "hello").Val())
				got := []redis.Message{*receive(), *receive()}
				require.ElementsMatch(t, []redis.Message{
					{Channel: "news", Payload: "hello"},
					{Channel: "news", Pattern: "n*", Payload: "hello"},
				}, got)
				require.Equal(t, int64(1), rdb.Publish(ctx, "sport", "goal").Val())
				require.Equal(t, redis.Message{Channel: "sport", Payload: "goal"}, *receive())

				require.NoError(t, ps.Unsubscribe(ctx, "sport"))
				require.Eventually(t, func() bool { return rdb.PubSubNumSub(ctx, "sport").Val()["sport"] == 0 },
					5*time.Second, 10*time.Millisecond)
				require.Equal(t, int64(0), rdb.Publish(ctx, "sport", "lost").Val())
				require.NoError(t, ps.Close())
				require.Eventually(t, func() bool {
					return rdb.PubSubNumSub(ctx, "news").Val()["news"] == 0 && rdb.PubSubNumPat(ctx).Val() == 0
				}, 5*time.Second, 10*time.Millisecond)
			})
		}
	}
}

// TestPublishFromGo: the server's own events are published from Go code, not only by PUBLISH.
func TestPublishFromGo(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send(t, "PSUBSCRIBE __throttled__:denied*\r\n")
	c.expect(t, "*3\r\n$10\r\npsubscribe\r\n$21\r\n__throttled__:denied*\r\n:1\r\n")
	require.Equal(t, 1, ts.pubsub.Publish([]byte("__throttled__:denied:throttle"), []byte("throttle user:1 1500")))
	c.expect(t, "*4\r\n$8\r\npmessage\r\n$21\r\n__throttled__:denied*\r\n$29\r\n__throttled__:denied:throttle\r\n$20\r\nthrottle user:1 1500\r\n")
}

// TestPipelineAroundSubscribe: requests sent with SUBSCRIBE in one packet, before and after
// it, are answered in order, also when earlier replies wait for a sync (appendfsync always).
func TestPipelineAroundSubscribe(t *testing.T) {
	stores := []struct {
		name      string
		configure func(*Config)
	}{
		{"appendonly no", func(c *Config) { c.AppendOnly = false }},
		{"appendfsync always", func(c *Config) { c.AppendFsync = "always" }},
	}
	for _, p := range stores {
		for _, mode := range ioModes {
			t.Run(p.name+"/"+mode.name, func(t *testing.T) {
				ts := startServer(t, withIOThreads(mode.threads), p.configure)
				c := ts.raw(t)
				c.send(t, "SET k v\r\nINCR n\r\nSUBSCRIBE a\r\nPING\r\nUNSUBSCRIBE\r\nGET k\r\nINCR n\r\n*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nb\r\n*2\r\n$4\r\nPING\r\n$3\r\nend\r\n")
				c.expect(t, "+OK\r\n:1\r\n")
				c.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n")
				c.expect(t, "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
				c.expect(t, "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:0\r\n")
				c.expect(t, "$1\r\nv\r\n:2\r\n")
				c.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:1\r\n")
				c.expect(t, "*2\r\n$4\r\npong\r\n$3\r\nend\r\n")
				require.Equal(t, []any{"b", int64(1)}, do(t, ts.client(t, 2), "PUBSUB", "NUMSUB", "b"))
			})
		}
	}
}

// TestPubSubCommandInfo: COMMAND and PUBSUB HELP describe the commands as Redis does.
func TestPubSubCommandInfo(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	infos, err := rdb.Command(ctx).Result()
	require.NoError(t, err)
	sub := infos["subscribe"]
	require.Equal(t, int8(-2), sub.Arity)
	require.Equal(t, []string{"pubsub", "noscript", "loading", "stale"}, sub.Flags)
	require.Equal(t, []string{"@pubsub", "@slow"}, sub.ACLFlags)
	require.Equal(t, []string{"pubsub", "loading", "stale", "fast"}, infos["publish"].Flags)
	require.Equal(t, int8(3), infos["publish"].Arity)
	pubsub := do(t, rdb, "COMMAND", "INFO", "pubsub").([]any)[0].([]any)
	require.Len(t, pubsub[9], 4, "subcommands")

	docs := do(t, rdb, "COMMAND", "DOCS", "subscribe").([]any)
	args := docs[1].([]any)[7].([]any)
	require.Equal(t, []any{"name", "channel", "type", "string", "flags", []any{"multiple"}}, args[0])

	help, err := rdb.Do(ctx, "PUBSUB", "HELP").StringSlice()
	require.NoError(t, err)
	require.Equal(t, "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", help[0])
	require.Len(t, help, 10)
	require.Equal(t, "ERR unknown subcommand 'NOPE'. Try PUBSUB HELP.", doErr(t, rdb, "PUBSUB", "NOPE"))
	require.Equal(t, "ERR wrong number of arguments for 'pubsub|numpat' command", doErr(t, rdb, "PUBSUB", "NUMPAT", "x"))
	require.Equal(t, "ERR wrong number of arguments for 'publish' command", doErr(t, rdb, "PUBLISH", "a"))
	require.Equal(t, "ERR wrong number of arguments for 'subscribe' command", doErr(t, rdb, "SUBSCRIBE"))
}
