package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/notify"
	"github.com/throttledhq/throttled/pubsub"
)

// eventSub is a real client subscribed to every keyspace and keyevent channel.
type eventSub struct {
	ps  *redis.PubSub
	rdb *redis.Client // publishes the marks
	n   int
}

// subscribeEvents subscribes a client of protocol proto to __key*__:* and to the mark
// channel.
func subscribeEvents(t *testing.T, ts *testServer, proto int) *eventSub {
	t.Helper()
	ctx := context.Background()
	sub := ts.client(t, proto)
	ps := sub.PSubscribe(ctx, "__key*__:*")
	t.Cleanup(func() { ps.Close() })
	_, err := ps.Receive(ctx) // the confirmation
	require.NoError(t, err)
	require.NoError(t, ps.Subscribe(ctx, "mark"))
	_, err = ps.Receive(ctx)
	require.NoError(t, err)
	return &eventSub{ps: ps, rdb: ts.client(t, 2)}
}

// until returns the messages received, as "channel message", until a mark published now.
func (e *eventSub) until(t *testing.T) []string {
	t.Helper()
	e.n++
	mark := "mark " + itoa(int64(e.n))
	require.NoError(t, e.rdb.Publish(context.Background(), "mark", mark).Err())
	return e.next(t, mark)
}

// next returns the messages received until one on the mark channel says mark; an empty
// mark waits for the first message and returns it alone.
func (e *eventSub) next(t *testing.T, mark string) []string {
	t.Helper()
	var out []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-e.ps.Channel():
			if m.Channel == "mark" {
				require.Equal(t, mark, m.Payload)
				return out
			}
			out = append(out, m.Channel+" "+m.Payload)
			if mark == "" {
				return out
			}
		case <-timeout:
			t.Fatalf("no mark %q after %q", mark, out)
		}
	}
}

// both is the keyspace and the keyevent message of event on key.
func both(key, event string) []string {
	return []string{"__keyspace@0__:" + key + " " + event, "__keyevent@0__:" + event + " " + key}
}

// events is the messages of each event on key: "key event" pairs.
func events(pairs ...string) []string {
	var out []string
	for _, p := range pairs {
		key, event, _ := strings.Cut(p, " ")
		out = append(out, both(key, event)...)
	}
	return out
}

// TestKeyspaceEventsByClass: with notify-keyspace-events set to K, E and one class, a real
// subscriber receives the events of that class that each command fires, as Redis 7.0 sends
// them, and none of the others.
func TestKeyspaceEventsByClass(t *testing.T) {
	for _, tc := range []struct {
		name, class string
		cmds        [][]any
		want        []string
	}{
		{"generic", "g", [][]any{
			{"set", "a", "1"}, {"expire", "a", "100"}, {"persist", "a"}, {"rename", "a", "b"},
			{"copy", "b", "c"}, {"del", "b", "c", "nope"}, {"set", "d", "1", "ex", "10"},
			{"pexpire", "d", "-1"}, {"set", "e", "1"}, {"getdel", "e"},
		}, events("a expire", "a persist", "a rename_from", "b rename_to", "c copy_to",
			"b del", "c del", "d expire", "d del", "e del")},
		{"string", "$", [][]any{
			{"set", "s", "1"}, {"incr", "s"}, {"decrby", "s", "5"}, {"incrbyfloat", "s", "1.5"},
			{"append", "s", "x"}, {"setrange", "s", "0", "y"}, {"setbit", "b", "3", "1"},
			{"setbit", "b", "3", "1"}, {"mset", "m1", "1", "m2", "2"}, {"setex", "x", "10", "v"},
			{"getset", "x", "w"}, {"get", "s"},
		}, events("s set", "s incrby", "s incrby", "s incrbyfloat", "s append", "s setrange",
			"b setbit", "m1 set", "m2 set", "x set", "x set")},
		{"list", "l", [][]any{
			{"rpush", "l", "a", "b", "c", "d"}, {"lpush", "l", "z"}, {"linsert", "l", "before", "b", "x"},
			{"linsert", "l", "before", "nope", "x"}, {"lset", "l", "0", "y"}, {"lrem", "l", "0", "x"},
			{"ltrim", "l", "0", "3"}, {"lpop", "l"}, {"rpop", "l"}, {"lmove", "l", "m", "left", "right"},
			{"rpoplpush", "l", "m"},
		}, events("l rpush", "l lpush", "l linsert", "l lset", "l lrem", "l ltrim", "l lpop", "l rpop",
			"m rpush", "l lpop", "m lpush", "l rpop")},
		{"set", "s", [][]any{
			{"sadd", "s", "a", "b", "c"}, {"sadd", "s", "a"}, {"srem", "s", "a", "nope"},
			{"smove", "s", "t", "b"}, {"sinterstore", "u", "s", "s"}, {"sunionstore", "v", "s", "t"},
			{"sdiffstore", "w", "s", "s"}, {"spop", "s"},
		}, events("s sadd", "s srem", "s srem", "t sadd", "u sinterstore", "v sunionstore", "s spop")},
		{"hash", "h", [][]any{
			{"hset", "h", "a", "1", "b", "2"}, {"hsetnx", "h", "a", "9"}, {"hsetnx", "h", "c", "3"},
			{"hincrby", "h", "a", "2"}, {"hincrbyfloat", "h", "b", "0.5"}, {"hdel", "h", "a", "nope"},
			{"hmset", "h", "d", "4"},
		}, events("h hset", "h hset", "h hincrby", "h hincrbyfloat", "h hdel", "h hset")},
		{"zset", "z", [][]any{
			{"zadd", "z", "1", "a", "2", "b", "3", "c", "4", "d"}, {"zadd", "z", "1", "a"},
			{"zincrby", "z", "1", "a"}, {"zrem", "z", "a"}, {"zremrangebyscore", "z", "0", "2"},
			{"zremrangebyrank", "z", "0", "0"}, {"zadd", "z", "5", "e", "6", "f"}, {"zpopmin", "z"},
			{"zpopmax", "z"}, {"zremrangebylex", "z", "-", "+"},
		}, events("z zadd", "z zincr", "z zrem", "z zremrangebyscore", "z zremrangebyrank",
			"z zadd", "z zpopmin", "z zpopmax", "z zremrangebylex")},
		{"new", "n", [][]any{
			{"set", "a", "1"}, {"set", "a", "2"}, {"rpush", "l", "x"}, {"rename", "a", "b"},
			{"hset", "h", "f", "v"}, {"throttle", "limit", "10", "1", "1s"},
		}, events("a new", "l new", "b new", "h new", "limit new")},
		{"keymiss", "m", [][]any{
			{"get", "nope"}, {"set", "a", "1"}, {"get", "a"}, {"hget", "h", "f"}, {"exists", "x"},
			{"getdel", "y"}, {"set", "z", "1", "get"},
		}, events("nope keymiss", "h keymiss", "x keymiss", "y keymiss", "z keymiss")},
		{"scripts and transactions", "$g", [][]any{
			{"eval", "redis.call('set', KEYS[1], 'v'); return redis.call('incr', KEYS[2])", "2", "s", "n"},
			{"multi"}, {"set", "m", "1"}, {"del", "m"}, {"exec"},
			{"function", "load", "#!lua name=lib\nredis.register_function('f', function(keys) return redis.call('append', keys[1], 'x') end)"},
			{"fcall", "f", "1", "a"},
		}, events("s set", "n incrby", "m set", "m del", "a append")},
		// del and the like are generic: the type classes alone leave them out.
		{"a type alone", "l", [][]any{{"rpush", "l", "a"}, {"lpop", "l"}, {"set", "s", "v"}},
			events("l rpush", "l lpop")},
		{"streams and modules", "td", [][]any{{"set", "a", "1"}, {"del", "a"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t)
			rdb := ts.client(t, 2)
			do(t, rdb, "config", "set", "notify-keyspace-events", "KE"+tc.class)
			sub := subscribeEvents(t, ts, 3)
			conn := rdb.Conn() // one connection: MULTI's commands must come on it
			defer conn.Close()
			for _, c := range tc.cmds {
				cmd := redis.NewCmd(context.Background(), c...)
				if err := conn.Process(context.Background(), cmd); err != redis.Nil {
					require.NoError(t, err, "%v", c)
				}
			}
			require.Equal(t, tc.want, sub.until(t))
		})
	}
}

// TestKeyspaceEventsChannels: K publishes only on __keyspace@0__:<key> with the event,
// E only on __keyevent@0__:<event> with the key; neither, nothing whatever the classes.
func TestKeyspaceEventsChannels(t *testing.T) {
	for _, tc := range []struct {
		flags string
		want  []string
	}{
		{"K$", []string{"__keyspace@0__:key set"}},
		{"E$", []string{"__keyevent@0__:set key"}},
		{"KEA", both("key", "set")},
		{"A", nil},
		{"", nil},
	} {
		t.Run(tc.flags, func(t *testing.T) {
			ts := startServer(t)
			rdb := ts.client(t, 2)
			do(t, rdb, "config", "set", "notify-keyspace-events", tc.flags)
			sub := subscribeEvents(t, ts, 2)
			do(t, rdb, "set", "key", "v")
			require.Equal(t, tc.want, sub.until(t))
		})
	}
}

// TestKeyspaceEventsExpiredAndEvicted: "expired" for a key a lookup finds expired (lazy
// expiry) and for one active expiry removes untouched, "evicted" for one maxmemory
// removes. The clock is the test's: only the expiry loop's ticks wait on real time.
func TestKeyspaceEventsExpiredAndEvicted(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AppendOnly = false })
	rdb := ts.client(t, 2)
	do(t, rdb, "config", "set", "notify-keyspace-events", "KExe")
	sub := subscribeEvents(t, ts, 2)

	do(t, rdb, "set", "lazy", "v", "px", "1000")
	do(t, rdb, "set", "over", "v", "px", "1000")
	do(t, rdb, "hset", "active", "f", "v")
	do(t, rdb, "pexpire", "active", "1500")
	require.Empty(t, sub.until(t))

	ts.clock.Advance(time.Second)
	do(t, rdb, "mset", "over", "w") // as Redis's setKey, MSET looks the key up: it expires
	require.Equal(t, both("over", "expired"), sub.until(t), "MSET over an expired key")
	do(t, rdb, "del", "over") // g, not subscribed: no event
	require.Equal(t, redis.Nil, rdb.Get(context.Background(), "lazy").Err())
	require.Equal(t, both("lazy", "expired"), sub.until(t), "lazy expiry")

	ts.clock.Advance(time.Second) // nothing touches the key: the expiry loop finds it
	require.Equal(t, []string{"__keyspace@0__:active expired"}, sub.next(t, ""), "active expiry")
	require.Equal(t, []string{"__keyevent@0__:expired active"}, sub.next(t, ""))

	do(t, rdb, "set", "victim", "v")
	do(t, rdb, "config", "set", "maxmemory-policy", "allkeys-random")
	do(t, rdb, "config", "set", "maxmemory", "1")
	require.Equal(t, []string{"__keyspace@0__:victim evicted"}, sub.next(t, ""), "the memory loop evicts it")
	require.Equal(t, []string{"__keyevent@0__:evicted victim"}, sub.next(t, ""))
	do(t, rdb, "config", "set", "maxmemory", "0")
}

// TestNotifyKeyspaceEventsConfig: CONFIG GET shows the classes as Redis does (A for all of
// A's, then K, E and m), CONFIG SET refuses a bad character with Redis's error and keeps
// the old value, and the option comes from the config (file or command line).
func TestNotifyKeyspaceEventsConfig(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.NotifyKeyspaceEvents = "Elg" })
	rdb := ts.client(t, 2)
	get := func() any { return do(t, rdb, "config", "get", "notify-keyspace-events").([]any)[1] }
	require.Equal(t, "glE", get())
	for in, want := range map[string]string{
		"KEA": "AKE", "AKEm": "AKEm", "g$lshzxetd": "A", "Kx": "xK", "": "", "mEK": "KEm",
		"n": "n", "KEAn": "AKE", // as Redis: A hides n
	} {
		do(t, rdb, "config", "set", "notify-keyspace-events", in)
		require.Equal(t, want, get(), in)
	}
	do(t, rdb, "config", "set", "notify-keyspace-events", "Kg")
	require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
		doErr(t, rdb, "config", "set", "notify-keyspace-events", "KEQ"))
	require.Equal(t, "gK", get())

	cfg := DefaultConfig()
	cfg.NotifyKeyspaceEvents = "KEB"
	require.ErrorContains(t, cfg.Validate(), `notify-keyspace-events: "KEB": Invalid event class character`)
}

// TestRateLimitVerbsFireNoEvent: the rate-limit verbs fire no event of their own, however
// their keys change; their keys are keys all the same: created (n), expired (x), deleted
// by DEL (g).
func TestRateLimitVerbsFireNoEvent(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AppendOnly = false })
	rdb := ts.client(t, 2)
	do(t, rdb, "config", "set", "notify-keyspace-events", "KEAnm")
	sub := subscribeEvents(t, ts, 2)
	for _, c := range [][]any{
		{"throttle", "t", "10", "1", "1s"}, {"throttle", "t", "10", "1", "1s"},
		{"throttle", "t", "10", "1", "1s", "PEEK"}, {"tokenbucket", "b", "10", "1", "1s", "COST", "3"},
		{"slide", "s", "10", "1s"}, {"window", "w", "10", "1s"}, {"cl.throttle", "c", "15", "30", "60"},
		{"concurrency.acquire", "q", "2", "10s", "id"}, {"concurrency.release", "q", "id"},
	} {
		require.NoError(t, rdb.Do(context.Background(), c...).Err(), "%v", c)
	}
	require.Equal(t, events("t new", "b new", "s new", "w new", "c new", "q new"), sub.until(t))
	ts.clock.Advance(time.Minute)
	do(t, rdb, "del", "t")
	// DEL finds t gone, unless the active expiry cycle found it first, and the other limits
	// too: every event is an expiry, and t's are among them.
	got := sub.until(t)
	require.Subset(t, got, events("t expired"), "an idle limit expires")
	for _, e := range got {
		require.Contains(t, e, "expired", "an idle limit only expires")
	}
}

// TestKeyspaceEventsHotPathAllocatesNothing: with every class on and a subscriber to each
// channel, a write's events allocate nothing once the buffers have grown.
func TestKeyspaceEventsHotPathAllocatesNothing(t *testing.T) {
	s, c := fuzzServer(t)
	s.env.Events.Set(notify.All | notify.Keyspace | notify.Keyevent | notify.KeyMiss | notify.NewKey)
	d := &discard{}
	s.pubsub.NewSubscriber(d).PSubscribe([]byte("__key*__:*"))
	for _, args := range [][]string{{"SET", "k", "v"}, {"INCR", "n"}, {"HSET", "h", "f", "1"}, {"GET", "nope"}} {
		req := make([][]byte, len(args))
		for i, a := range args {
			req[i] = []byte(a)
		}
		s.run(c, req)
		c.W.B = c.W.B[:0]
		require.Zero(t, testing.AllocsPerRun(100, func() {
			s.run(c, req)
			c.W.B = c.W.B[:0]
		}), "%q", args)
	}
	require.Greater(t, d.n, 800)
}

// discard is a pubsub.Receiver that counts its messages.
type discard struct{ n int }

func (d *discard) Message(pattern, channel, message []byte)             { d.n++ }
func (d *discard) Confirm(change pubsub.Change, name []byte, count int) {}
