package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// appUser may call the rate-limit verbs on its own prefix and nothing else.
var appUser = []string{"app", "on", ">apppass", "~tenant:*", "+@ratelimit"}

func TestACLApplicationUser(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Users = [][]string{appUser} })
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "app", Password: "apppass", Protocol: 2})
	t.Cleanup(func() { rdb.Close() })

	require.Equal(t, []any{int64(0), int64(11), int64(10), int64(-1), int64(100)}, do(t, rdb, "throttle", "tenant:a", "10", "10", "1"))
	require.Equal(t, "NOPERM No permissions to access a key", doErr(t, rdb, "throttle", "other:a", "10", "10", "1"))
	require.Equal(t, "NOPERM User app has no permissions to run the 'set' command", doErr(t, rdb, "set", "tenant:a", "1"))
	require.Equal(t, "NOPERM User app has no permissions to run the 'config|get' command", doErr(t, rdb, "config", "get", "*"))
	require.Equal(t, "NOPERM User app has no permissions to run the 'flushall' command", doErr(t, rdb, "flushall"))
	require.Equal(t, "NOPERM No permissions to access a key", doErr(t, rdb, "allof", "throttle", "tenant:b", "1", "1", "1", "throttle", "x", "1", "1", "1"))
	require.Len(t, do(t, rdb, "allof", "throttle", "tenant:b", "1", "1", "1", "window", "tenant:c", "1", "1"), 3)

	admin := ts.client(t, 2)
	list := do(t, admin, "client", "list").(string)
	require.Contains(t, list, "user=app ")
	require.Contains(t, list, "user=default ")
}

func TestACLRawAuth(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.RequirePass = "top"
		c.Users = [][]string{appUser}
	})
	r := ts.raw(t)
	r.send(t, "PING\r\n")
	r.expect(t, "-NOAUTH Authentication required.\r\n")
	r.send(t, "AUTH app wrong\r\n")
	r.expect(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
	r.send(t, "AUTH app apppass\r\n")
	r.expect(t, "+OK\r\n")
	r.send(t, "ACL WHOAMI\r\n")
	r.expect(t, "-NOPERM User app has no permissions to run the 'acl|whoami' command\r\n")
	r.send(t, "GET tenant:x\r\n")
	r.expect(t, "-NOPERM User app has no permissions to run the 'get' command\r\n")
	r.send(t, "AUTH top\r\n") // the default user, with requirepass
	r.expect(t, "+OK\r\n")
	r.send(t, "ACL WHOAMI\r\n")
	r.expect(t, "$7\r\ndefault\r\n")
	r.send(t, "HELLO 3 AUTH app apppass\r\n")
	r.skipHello(t)
	r.send(t, "CLIENT INFO\r\n")
	r.expect(t, "-NOPERM User app has no permissions to run the 'client|info' command\r\n")
	r.send(t, "RESET\r\n")
	r.expect(t, "+RESET\r\n")
	r.send(t, "PING\r\n")
	r.expect(t, "-NOAUTH Authentication required.\r\n")
}

func TestACLCommands(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 3)
	ctx := context.Background()
	do(t, rdb, "acl", "setuser", "app", "on", ">pw", "~tenant:*", "%R~shared:*", "+@ratelimit", "+get")
	info := do(t, rdb, "acl", "getuser", "app").(map[any]any)
	require.Equal(t, []any{"on", "sanitize-payload"}, info["flags"])
	require.Equal(t, "-@all +@ratelimit +get", info["commands"])
	require.Equal(t, "~tenant:* %R~shared:*", info["keys"])
	require.Equal(t, "", info["channels"])
	require.Len(t, info["passwords"], 1)
	require.Equal(t, redis.Nil, rdb.Do(ctx, "acl", "getuser", "nobody").Err())

	require.Equal(t, []any{"app", "default"}, do(t, rdb, "acl", "users"))
	list := do(t, rdb, "acl", "list").([]any)
	require.Equal(t, "user default on nopass sanitize-payload ~* &* +@all", list[1])
	require.True(t, strings.HasPrefix(list[0].(string), "user app on sanitize-payload #"), list[0])
	require.Equal(t, "default", do(t, rdb, "acl", "whoami"))
	require.Contains(t, do(t, rdb, "acl", "cat"), "ratelimit")
	rl := do(t, rdb, "acl", "cat", "ratelimit").([]any)
	require.Contains(t, rl, "throttle")
	require.Contains(t, rl, "cl.throttle")
	require.NotContains(t, rl, "set")
	require.Contains(t, do(t, rdb, "command", "list", "filterby", "aclcat", "dangerous"), "flushall")
	require.Len(t, do(t, rdb, "acl", "genpass"), 64)
	require.Contains(t, doErr(t, rdb, "acl", "setuser", "app", "+nosuch"), "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL")

	app := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "app", Password: "pw", Protocol: 2})
	t.Cleanup(func() { app.Close() })
	require.Equal(t, redis.Nil, app.Get(ctx, "shared:x").Err())
	require.Equal(t, "NOPERM No permissions to access a key", doErr(t, app, "get", "secret"))

	// A change applies to connections at once; a deleted user's connections are closed.
	do(t, rdb, "acl", "setuser", "app", "-get")
	require.Contains(t, doErr(t, app, "get", "shared:x"), "has no permissions to run the 'get' command")
	require.Equal(t, int64(1), do(t, rdb, "acl", "deluser", "app", "ghost"))
	require.Error(t, app.Get(ctx, "shared:x").Err())
	require.Contains(t, doErr(t, rdb, "acl", "deluser", "default"), "cannot be removed")
}

func TestACLRequirePassIsTheDefaultUsersPassword(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	do(t, rdb, "config", "set", "requirepass", "s3cret")
	fresh := ts.raw(t)
	fresh.send(t, "PING\r\n")
	fresh.expect(t, "-NOAUTH Authentication required.\r\n")
	fresh.send(t, "AUTH default s3cret\r\n")
	fresh.expect(t, "+OK\r\n")
	fresh.send(t, "CONFIG SET requirepass \"\"\r\n")
	fresh.expect(t, "+OK\r\n")
	again := ts.raw(t)
	again.send(t, "PING\r\n")
	again.expect(t, "+PONG\r\n")
}

func TestACLChannels(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	do(t, rdb, "acl", "setuser", "sub", "on", "nopass", "&news.*", "+@pubsub")
	r := ts.raw(t)
	r.send(t, "AUTH sub x\r\nPUBLISH other hi\r\nPUBLISH news.a hi\r\n")
	r.expect(t, "+OK\r\n-NOPERM No permissions to access a channel\r\n:0\r\n")
	r.send(t, "PSUBSCRIBE news.b*\r\n")
	r.expect(t, "-NOPERM No permissions to access a channel\r\n")
}

// BenchmarkThrottleACLUser is BenchmarkThrottle from a connection of a user restricted to
// the rate-limit verbs on its own prefix: the ACL check runs at every call.
func BenchmarkThrottleACLUser(b *testing.B) {
	s, _ := fuzzServer(b)
	u, err := s.acl.SetUser("app", []string{"on", "nopass", "~bench:*", "+@ratelimit"})
	require.NoError(b, err)
	keys := benchKeyNames(1000)
	b.ResetTimer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := s.newClient(nc)
		c.user.Store(u)
		req := [][]byte{[]byte("THROTTLE"), nil, []byte("100"), []byte("10"), []byte("1m"), []byte("COST"), []byte("1")}
		for i := 0; pb.Next(); i++ {
			req[1] = keys[i%len(keys)]
			s.run(c, req)
			if c.W.B[0] == '-' {
				b.Fatalf("%q: %s", req, c.W.B)
			}
			c.W.B = c.W.B[:0]
		}
	})
}

func TestACLFileLoadAndSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte("user app on >pw ~app:* +@ratelimit\n\nuser default on nopass ~* &* +@all\n"), 0o600))
	ts := startServer(t, func(c *Config) { c.ACLFile = path })
	rdb := ts.client(t, 2)
	require.Equal(t, []any{"app", "default"}, do(t, rdb, "acl", "users"))

	do(t, rdb, "acl", "setuser", "ops", "on", ">opspw", "+@admin")
	do(t, rdb, "acl", "save")
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(saved), "user ops on sanitize-payload #")

	app := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "app", Password: "pw", Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { app.Close() })
	require.NoError(t, app.Do(context.Background(), "throttle", "app:a", "1", "1", "1").Err())

	// A bad file changes nothing; a good one replaces the users and closes the gone ones'.
	require.NoError(t, os.WriteFile(path, []byte("user ops on +nosuch\n"), 0o600))
	require.Contains(t, doErr(t, rdb, "acl", "load"), "Unknown command or category name in ACL")
	require.Equal(t, []any{"app", "default", "ops"}, do(t, rdb, "acl", "users"))
	require.NoError(t, os.WriteFile(path, []byte("user ops on >opspw +@admin\n"), 0o600))
	do(t, rdb, "acl", "load")
	require.Equal(t, []any{"default", "ops"}, do(t, rdb, "acl", "users"))
	require.Error(t, app.Do(context.Background(), "throttle", "app:a", "1", "1", "1").Err())
}

func TestACLFileNotConfigured(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	require.Contains(t, doErr(t, rdb, "acl", "save"), "not configured to use an ACL file")
	cfg := DefaultConfig()
	cfg.ACLFile, cfg.Users = "x", [][]string{{"a"}}
	require.ErrorContains(t, cfg.Validate(), "aclfile")
}

func TestCommandInfoShowsACLCategories(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	infos, err := rdb.Command(context.Background()).Result()
	require.NoError(t, err)
	require.Equal(t, []string{"@write", "@fast", "@ratelimit"}, infos["throttle"].ACLFlags)
	require.Equal(t, []string{"@read", "@string", "@fast"}, infos["get"].ACLFlags)
	require.Equal(t, []string{"@keyspace", "@write", "@slow", "@dangerous"}, infos["flushall"].ACLFlags)
}

// TestUnauthenticatedRequestLimits: before AUTH, requests are held to Redis's limits for
// unauthenticated clients; after, to the usual ones.
func TestUnauthenticatedRequestLimits(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.RequirePass = "pw" })
	many := ts.raw(t)
	many.send(t, "*11\r\n")
	many.expect(t, "-ERR Protocol error: unauthenticated multibulk length\r\n")
	require.True(t, many.closed())
	big := ts.raw(t)
	big.send(t, "*2\r\n$4\r\nAUTH\r\n$16385\r\n")
	big.expect(t, "-ERR Protocol error: unauthenticated bulk length\r\n")
	require.True(t, big.closed())
	ok := ts.raw(t)
	ok.send(t, "AUTH pw\r\n")
	ok.expect(t, "+OK\r\n")
	value := strings.Repeat("v", 20000)
	ok.send(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$20000\r\n"+value+"\r\n")
	ok.expect(t, "+OK\r\n")
}

// TestACLPolicyVerbs drives the README's application user, and an operator limited to some
// policies, through every policy verb: spending a limit (@ratelimit) is not rewriting it
// (@policy, @admin), and a policy's name and subjects are keys to the patterns.
func TestACLPolicyVerbs(t *testing.T) {
	readmeApp := []string{"app", "on", ">s3cret", "~app:*", "+@ratelimit"}
	ops := []string{"ops", "on", ">opspass", "~policy:api", "~policy:api:*", "+@policy", "+@ratelimit"}
	ts := startServer(t, func(c *Config) { c.Users = [][]string{readmeApp, ops} })
	admin := ts.client(t, 2)
	require.Equal(t, "OK", do(t, admin, "policy.set", "api", "throttle", "1", "1", "1h"))
	require.Equal(t, "OK", do(t, admin, "policy.set", "rls.edge.remote_address", "throttle", "1", "1", "1h"))
	app := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "app", Password: "s3cret", Protocol: 2})
	t.Cleanup(func() { app.Close() })
	op := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "ops", Password: "opspass", Protocol: 2})
	t.Cleanup(func() { op.Close() })

	noRun := func(user, cmd string) string {
		return "NOPERM User " + user + " has no permissions to run the '" + cmd + "' command"
	}
	const noKey = "NOPERM No permissions to access a key"
	for _, tc := range []struct {
		name string
		args []any
	}{
		{"policy.set", []any{"policy.set", "api", "throttle", "999999", "1000000", "1s"}},
		{"policy.del", []any{"policy.del", "api"}},
		{"policy.override", []any{"policy.override", "api", "victim", "throttle", "999", "999", "1s"}},
		{"policy.allow", []any{"policy.allow", "rls.edge.remote_address", "0.0.0.0/0"}},
		{"policy.deny", []any{"policy.deny", "api", "victim"}},
		{"policy.unlist", []any{"policy.unlist", "api", "victim"}},
		{"policy.reload", []any{"policy.reload"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, noRun("app", tc.name), doErr(t, app, tc.args...))
		})
	}
	// What the application may run still keeps to its patterns.
	require.Equal(t, noKey, doErr(t, app, "policy.get", "api"))
	require.Equal(t, noKey, doErr(t, app, "policy.entries", "api"))
	require.Equal(t, noKey, doErr(t, app, "check", "api", "victim"))
	require.Equal(t, []any{}, do(t, app, "policy.list"))

	// The operator may change api and its subjects, and nothing else.
	require.Equal(t, "OK", do(t, op, "policy.set", "api", "throttle", "2", "1", "1h"))
	require.Equal(t, "OK", do(t, op, "policy.deny", "api", "victim"))
	require.Equal(t, "OK", do(t, op, "policy.override", "api", "big", "throttle", "9", "1", "1h"))
	require.Equal(t, int64(1), do(t, op, "policy.unlist", "api", "big"))
	require.Equal(t, []any{"api"}, do(t, op, "policy.list"))
	require.Equal(t, noKey, doErr(t, op, "policy.allow", "rls.edge.remote_address", "0.0.0.0/0"))
	require.Equal(t, noKey, doErr(t, op, "policy.set", "rls.edge.remote_address", "throttle", "999", "999", "1s"))
	require.Equal(t, noKey, doErr(t, op, "policy.del", "rls.edge.remote_address"))
	require.Equal(t, "denylisted", do(t, admin, "check", "api", "victim").([]any)[5])

	// ACL CAT: the policy verbs that change a limit are @policy and @admin, not @ratelimit.
	rl := do(t, admin, "acl", "cat", "ratelimit").([]any)
	require.Contains(t, rl, "policy.get")
	require.NotContains(t, rl, "policy.set")
	require.Contains(t, do(t, admin, "acl", "cat", "admin"), "policy.deny")
	require.Contains(t, do(t, admin, "acl", "cat", "policy"), "policy.allow")
}

// TestACLTopDenied: TOPDENIED shows a user only the keys its patterns let it read.
// TestACLDenyEvents: a subscriber sees the deny events of the keys its patterns let it read
// and no other tenant's, whether it subscribed to the channel or to a pattern; a user that
// may see every key sees every event.
func TestACLDenyEvents(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.Users = [][]string{{"app", "on", ">s3cret", "~app:*", "&__throttled__:*", "+@ratelimit", "+subscribe", "+psubscribe"}}
	})
	admin := ts.client(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	app := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "app", Password: "s3cret", Protocol: 2})
	t.Cleanup(func() { app.Close() })
	subs := map[string]*redis.PubSub{
		"app channel":  app.Subscribe(ctx, "__throttled__:denied"),
		"app pattern":  app.PSubscribe(ctx, "__throttled__:*"), // the user's channel pattern, as Redis wants it
		"default user": admin.Subscribe(ctx, "__throttled__:denied"),
	}
	for _, ps := range subs {
		defer ps.Close()
		_, err := ps.Receive(ctx) // the confirmation
		require.NoError(t, err)
	}
	for _, k := range []string{"other:a", "app:x", "other:b", "app:y"} {
		do(t, admin, "THROTTLE", k, "0", "1", "1h")
		if strings.HasSuffix(k, "b") || strings.HasSuffix(k, "y") {
			do(t, admin, "THROTTLE", k, "0", "1", "1h", "BLOCK", "2h") // denied: "throttle k 7200000 blocked"
			continue
		}
		do(t, admin, "THROTTLE", k, "0", "1", "1h") // denied
	}
	for name, ps := range subs {
		var keys []string
		want := []string{"app:x", "app:y"}
		switch name {
		case "app pattern": // each event on __throttled__:denied and __throttled__:denied:throttle
			want = []string{"app:x", "app:x", "app:y", "app:y"}
		case "default user":
			want = []string{"other:a", "app:x", "other:b", "app:y"}
		}
		for len(keys) < len(want) {
			m, err := ps.ReceiveMessage(ctx)
			require.NoError(t, err, name)
			keys = append(keys, strings.Fields(m.Payload)[1])
			if f := strings.Fields(m.Payload); f[1] == "app:y" || f[1] == "other:b" {
				require.Equal(t, []string{"throttle", f[1], "7200000", "blocked"}, f, name)
			}
		}
		require.Equal(t, want, keys, name)
	}
}

func TestACLTopDenied(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Users = [][]string{{"app", "on", ">s3cret", "~app:*", "+@ratelimit"}} })
	admin := ts.client(t, 2)
	for _, k := range []string{"app:x", "other:secret", "other:secret"} {
		do(t, admin, "throttle", k, "0", "1", "1h")
		do(t, admin, "throttle", k, "0", "1", "1h")
	}
	app := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "app", Password: "s3cret", Protocol: 2})
	t.Cleanup(func() { app.Close() })
	require.Equal(t, []any{"other:secret", int64(3), "app:x", int64(1)}, do(t, admin, "topdenied"))
	require.Equal(t, []any{"app:x", int64(1)}, do(t, app, "topdenied"))
	require.Equal(t, []any{"app:x", int64(1)}, do(t, app, "topdenied", "1"))
}
