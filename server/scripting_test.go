package server

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// readModifyWrite increments the number at each key it is given, with a GET and a SET:
// without isolation, two concurrent runs lose an increment.
const readModifyWrite = `for i, k in ipairs(KEYS) do
  local v = tonumber(redis.call('GET', k) or '0')
  for j = 1, 300 do end -- long enough for another run to come between
  redis.call('SET', k, v + 1)
end
return #KEYS`

// undeclaredRMW does the same on keys it builds from ARGV, declaring none: it reads them
// all, then writes them all.
const undeclaredRMW = `local v = {}
for i, k in ipairs(ARGV) do
  v[i] = tonumber(redis.call('GET', 'c:' .. k) or '0')
end
for j = 1, 300 do end
for i, k in ipairs(ARGV) do
  redis.call('SET', 'c:' .. k, v[i] + 1)
end
return #ARGV`

// TestScriptIsolation runs read-modify-write scripts from many clients at once, over
// declared keys and over keys the scripts build: not an increment may be lost.
func TestScriptIsolation(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.IOThreads = 4 })
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, PoolSize: 16})
	t.Cleanup(func() { rdb.Close() })
	const workers, each = 8, 300
	keys := []string{"a", "b", "c", "d", "e"}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Two keys per run, in an order that varies: runs over undeclared keys
				// meet stripes held by others, below and above their own.
				k1, k2 := keys[(w+i)%len(keys)], keys[(w+2*i+1)%len(keys)]
				if k1 == k2 {
					k2 = "z"
				}
				require.NoError(t, rdb.Eval(ctx, readModifyWrite, []string{k1, k2}).Err())
				require.NoError(t, rdb.Eval(ctx, undeclaredRMW, nil, k2, k1).Err())
			}
		}()
	}
	wg.Wait()
	var total int
	for _, k := range append(keys, "z") {
		for _, prefix := range []string{"", "c:"} {
			v, err := rdb.Get(ctx, prefix+k).Int()
			if err != redis.Nil {
				require.NoError(t, err)
			}
			total += v
		}
	}
	require.Equal(t, 4*workers*each, total)
}

// TestScriptWritesBeforeUndeclared runs scripts that write a key and then reach another
// they did not declare, in both orders from different clients: a script that has written
// cannot start again, so it must neither deadlock nor lose a write.
func TestScriptWritesBeforeUndeclared(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.IOThreads = 4 })
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, PoolSize: 16})
	t.Cleanup(func() { rdb.Close() })
	const script = `redis.call('INCR', ARGV[1])
redis.call('INCR', ARGV[2])
return 1`
	done := make(chan struct{})
	var wg sync.WaitGroup
	const workers, each = 8, 400
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				a, b := "x"+strconv.Itoa(i%7), "y"+strconv.Itoa((i*3+w)%5)
				if w%2 == 1 {
					a, b = b, a
				}
				require.NoError(t, rdb.Eval(ctx, script, nil, a, b).Err())
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("scripts deadlocked")
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	total := 0
	for _, k := range keys {
		v, err := rdb.Get(ctx, k).Int()
		require.NoError(t, err)
		total += v
	}
	require.Equal(t, 2*workers*each, total)
}

// TestScriptInTransaction runs scripts inside MULTI: their writes count for WATCH, both
// the transaction's own script and another client's.
func TestScriptInTransaction(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	other := ts.raw(t)
	expect := func(c *rawConn, lines ...string) {
		t.Helper()
		for _, want := range lines {
			require.Equal(t, want, c.line(t))
		}
	}
	c.send(t, "SET k 1\r\nWATCH k\r\nMULTI\r\nEVAL \"return redis.call('INCR', KEYS[1])\" 1 k\r\nEVAL \"return redis.call('INCR', 'u')\" 0\r\nEXEC\r\n")
	expect(c, "+OK", "+OK", "+OK", "+QUEUED", "+QUEUED", "*2", ":2", ":1")

	// Another client's script writes a watched key: EXEC runs nothing.
	c.send(t, "WATCH k\r\n")
	expect(c, "+OK")
	other.send(t, "EVAL \"return redis.call('SET', KEYS[1], 'x')\" 1 k\r\n")
	expect(other, "+OK")
	c.send(t, "MULTI\r\nSET k y\r\nEXEC\r\nGET k\r\n")
	expect(c, "+OK", "+QUEUED", "*-1", "$1", "x")

	// A script over a key EXEC does not hold, inside EXEC: it takes the stripe itself.
	c.send(t, "MULTI\r\nEVAL \"redis.call('SET', 'p', '1'); return redis.call('INCR', 'q')\" 0\r\nEXEC\r\n")
	expect(c, "+OK", "+QUEUED", "*1", ":1")
}

// TestScriptRefusals checks the replies to what scripts may not do, as Redis words them.
func TestScriptRefusals(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	expect := func(lines ...string) {
		t.Helper()
		for _, want := range lines {
			require.Equal(t, want, c.line(t))
		}
	}
	sha := func(s string) string { return scriptSHA(s) }
	c.send(t, "EVAL_RO \"return redis.call('SET', 'k', 'v')\" 0\r\n")
	expect("-ERR Write commands are not allowed from read-only scripts. script: " + sha("return redis.call('SET', 'k', 'v')") + ", on @user_script:1.")
	c.send(t, "EVAL \"return redis.call('SUBSCRIBE', 'ch')\" 0\r\n")
	expect("-ERR This Redis command is not allowed from script script: " + sha("return redis.call('SUBSCRIBE', 'ch')") + ", on @user_script:1.")

	// On a replica, writes are refused; reads run.
	ts.isReplica.Store(true)
	c.send(t, "EVAL \"return redis.call('SET', 'k', 'v')\" 0\r\nEVAL \"return redis.call('GET', 'k')\" 0\r\n")
	expect("-READONLY You can't write against a read only replica. script: "+sha("return redis.call('SET', 'k', 'v')")+", on @user_script:1.", "$-1")
	c.send(t, "EVAL \"#!lua\\nreturn 1\" 0\r\n")
	expect("-READONLY You can't write against a read only replica.") // Redis 7.0.15's answer: the flags make EVAL a write
	ts.isReplica.Store(false)

	// ACL: the caller's user must be allowed the script's commands and keys.
	c.send(t, "ACL SETUSER s on nopass ~own:* +@all -flushall\r\nAUTH s x\r\n")
	expect("+OK", "+OK")
	c.send(t, "EVAL \"return redis.call('SET', 'own:1', 'v')\" 0\r\n")
	expect("+OK")
	c.send(t, "EVAL \"return redis.call('SET', 'other', 'v')\" 0\r\n")
	expect("-ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: " + sha("return redis.call('SET', 'other', 'v')") + ", on @user_script:1.")
	c.send(t, "EVAL \"return redis.call('FLUSHALL')\" 0\r\n")
	expect("-ERR The user executing the script can't run this command or subcommand script: " + sha("return redis.call('FLUSHALL')") + ", on @user_script:1.")
	c.send(t, "EVAL \"return 1\" 1 other\r\n")
	expect("-NOPERM No permissions to access a key")
	c.send(t, "EVAL \"return {redis.acl_check_cmd('SET', 'own:2', 'v'), redis.acl_check_cmd('FLUSHALL')}\" 0\r\n")
	expect("*2", ":1", "$-1")
}

// TestScriptCacheAndRestarts covers SCRIPT LOAD, EXISTS, FLUSH and NOSCRIPT, and that a
// flushed script's interpreters no longer run it.
func TestScriptCache(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	expect := func(lines ...string) {
		t.Helper()
		for _, want := range lines {
			require.Equal(t, want, c.line(t))
		}
	}
	sha := scriptSHA("return 'one'")
	c.send(t, "EVALSHA "+sha+" 0\r\nSCRIPT LOAD \"return 'one'\"\r\nEVALSHA "+sha+" 0\r\nSCRIPT EXISTS "+sha+" nope\r\n")
	expect("-NOSCRIPT No matching script. Please use EVAL.", "$40", sha, "$3", "one", "*2", ":1", ":0")
	c.send(t, "SCRIPT FLUSH\r\nEVALSHA "+sha+" 0\r\nSCRIPT KILL\r\n")
	expect("+OK", "-NOSCRIPT No matching script. Please use EVAL.", "-NOTBUSY No scripts in execution right now.")
}

// TestScriptBusy runs a script that never ends: past busy-reply-threshold other clients get
// BUSY, SCRIPT KILL stops it when it has not written, UNKILLABLE when it has, and
// SHUTDOWN NOSAVE still stops the server. With one event loop, the other client is on the
// script's loop, which a new goroutine takes over; with none, each has a goroutine.
func TestScriptBusy(t *testing.T) {
	for _, loops := range []int{1, 2, 0} {
		t.Run("io-threads "+strconv.Itoa(loops), func(t *testing.T) { scriptBusy(t, loops) })
	}
}

func scriptBusy(t *testing.T, loops int) {
	ts := startServer(t, func(c *Config) { c.IOThreads = loops })
	runner, other := ts.raw(t), ts.raw(t)
	expect := func(c *rawConn, lines ...string) {
		t.Helper()
		for _, want := range lines {
			require.Equal(t, want, c.line(t))
		}
	}
	other.send(t, "CONFIG SET lua-time-limit 100\r\nCONFIG GET busy-reply-threshold\r\nSCRIPT KILL\r\n")
	expect(other, "+OK", "*2", "$20", "busy-reply-threshold", "$3", "100", "-NOTBUSY No scripts in execution right now.")

	const loop = "local i = 0 while true do i = i + 1 end"
	runner.send(t, "EVAL \""+loop+"\" 0\r\n")
	time.Sleep(300 * time.Millisecond)
	other.send(t, "PING\r\nGET k\r\nSCRIPT KILL\r\n")
	expect(other, "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
		"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", "+OK")
	expect(runner, "-ERR Script killed by user with SCRIPT KILL... script: "+scriptSHA(loop)+", on @user_script:1.")
	other.send(t, "PING\r\n")
	expect(other, "+PONG")
	runner.send(t, "PING\r\nEVAL \"return 'again'\" 0\r\n") // the runner is served on
	expect(runner, "+PONG", "$5", "again")

	// A script that wrote cannot be killed; pcall cannot catch a kill either.
	const wrote = "redis.call('SET', 'w', '1') while true do end"
	runner.send(t, "EVAL \""+wrote+"\" 0\r\n")
	time.Sleep(300 * time.Millisecond)
	other.send(t, "SCRIPT KILL\r\n")
	expect(other, "-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
	other.send(t, "SHUTDOWN NOSAVE\r\n")
	select {
	case <-ts.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN NOSAVE did not stop the server")
	}
}

// TestScriptBusyInBuiltin: a script inside one builtin call that would run for hours (a
// pattern backtracking over a long subject), or in a loop of builtins over megabytes, is
// busy past busy-reply-threshold: another client of its event loop gets BUSY meanwhile,
// and SCRIPT KILL from it stops the script inside the builtin.
func TestScriptBusyInBuiltin(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.IOThreads = 1 })
	runner, other := ts.raw(t), ts.raw(t)
	expect := func(c *rawConn, lines ...string) {
		t.Helper()
		for _, want := range lines {
			require.Equal(t, want, c.line(t))
		}
	}
	other.send(t, "CONFIG SET busy-reply-threshold 100\r\n")
	expect(other, "+OK")
	for _, body := range []string{
		"return string.find(string.rep('a', 1e5), '.-.-.-b')",
		"return string.gsub(string.rep('a', 1e5), '.-b', '')",
		"local s = string.rep('a', 1e6) for i = 1, 1e9 do local t = string.gsub(s, 'a', 'b') .. table.concat({s, s:rep(2)}) end",
	} {
		runner.send(t, "EVAL \""+body+"\" 0\r\n")
		time.Sleep(300 * time.Millisecond)
		// A PING the loop reads before the EVAL (a loaded machine) is answered: try again.
		for try := 0; ; try++ {
			other.send(t, "PING\r\n")
			if l := other.line(t); l != "+PONG" || try == 50 {
				require.Equal(t, "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", l)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		other.send(t, "SCRIPT KILL\r\n")
		expect(other, "+OK")
		expect(runner, "-ERR Script killed by user with SCRIPT KILL... script: "+scriptSHA(body)+", on @user_script:1.")
		other.send(t, "PING\r\n")
		expect(other, "+PONG")
	}
}

// TestScriptRateLimitVerbs calls the rate-limit verbs from scripts, on a server deciding
// them itself and on one whose limits live in an upstream Redis: the same replies.
func TestScriptRateLimitVerbs(t *testing.T) {
	local, remote, _, _ := upstreamPair(t)
	const body = "return {redis.call('CL.THROTTLE', KEYS[1], 3, 2, 1, ARGV[1]), redis.call('GCRA', KEYS[1] .. ':g', 3, 2, 1)}"
	reqs := [][]string{}
	for _, n := range []string{"1", "2", "0", "5", "1"} {
		reqs = append(reqs, []string{"EVAL", body, "1", "k", n})
	}
	want := dialReplies(t, local.addr).do(t, reqs...)
	got := dialReplies(t, remote.addr).do(t, reqs...)
	require.Equal(t, want, got)
	require.Contains(t, want[0], "*2\r\n*5\r\n:0\r\n")
}

// TestScriptTokenBucketFlood runs the hash token bucket over many keys, as a limiter
// does: HMGET, HMSET and EXPIRE on each, the key growing by its expiry right after it is
// written. It found an entry slid back into the block before the tail one, corrupting
// the shard.
func TestScriptTokenBucketFlood(t *testing.T) {
	s, c := fuzzServer(t)
	sc, err := s.scripts.eng.Load([]byte(limiterScripts[0].body))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	rates := []string{"0.37", "1.3", "0.001", "3"}
	for i := range 300_000 {
		key := []byte("tb:" + strconv.Itoa(rng.IntN(100_000)))
		now := []byte(strconv.FormatFloat(1000+float64(i)*0.013, 'f', 3, 64))
		c.W.B = c.W.B[:0]
		s.run(c, [][]byte{[]byte("EVALSHA"), []byte(sc.SHA), []byte("1"), key, []byte(rates[i%len(rates)]), []byte("10"), now, []byte("1")})
		require.Equal(t, byte('*'), c.W.B[0], "%s", c.W.B)
	}
}
