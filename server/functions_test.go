package server

import (
	"bufio"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/internal/difftest"
)

const testLibrary = "#!lua name=lib\n" +
	"redis.register_function('incr', function(keys, args) return redis.call('INCR', keys[1]) end)\n" +
	"redis.register_function{function_name='peek', callback=function(keys, args) return redis.call('GET', keys[1]) end, flags={'no-writes'}}\n" +
	"redis.register_function('other', function(keys, args) return redis.call('GET', 'b:other') end)\n" +
	"redis.register_function('loop', function() local i = 0 while true do i = i + 1 end end)\n" +
	"redis.register_function('wloop', function() redis.call('SET', 'w', 1) while true do end end)"

// TestFunctionBusy runs a function that never ends: other clients get BUSY naming FUNCTION
// KILL, FUNCTION STATS shows it, SCRIPT KILL refuses it and FUNCTION KILL stops it; a
// function that wrote is UNKILLABLE.
func TestFunctionBusy(t *testing.T) {
	ts := startServer(t)
	runner, other := ts.raw(t), ts.raw(t)
	expect := func(c *rawConn, lines ...string) {
		t.Helper()
		for _, want := range lines {
			require.Equal(t, want, c.line(t))
		}
	}
	rdb := ts.client(t, 2)
	do(t, rdb, "FUNCTION", "LOAD", testLibrary)
	other.send(t, "CONFIG SET busy-reply-threshold 100\r\nFUNCTION KILL\r\n")
	expect(other, "+OK", "-NOTBUSY No scripts in execution right now.")

	runner.send(t, "FCALL loop 1 k arg\r\n")
	time.Sleep(300 * time.Millisecond)
	other.send(t, "PING\r\nSCRIPT KILL\r\nFUNCTION STATS\r\n")
	busy := "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	expect(other, busy, busy, "*4", "$14", "running_script", "*6", "$4", "name", "$4", "loop", "$7", "command",
		"*5", "$5", "FCALL", "$4", "loop", "$1", "1", "$1", "k", "$3", "arg", "$11", "duration_ms")
	require.Regexp(t, `^:\d+$`, other.line(t))
	expect(other, "$7", "engines", "*2", "$3", "LUA", "*4", "$15", "libraries_count", ":1", "$15", "functions_count", ":5")
	other.send(t, "FUNCTION KILL\r\n")
	expect(other, "+OK")
	expect(runner, "-ERR Script killed by user with SCRIPT KILL... script: loop, on @user_function:5.")
	runner.send(t, "FCALL incr 1 k\r\n")
	expect(runner, ":1")

	runner.send(t, "FCALL wloop 0\r\n")
	time.Sleep(300 * time.Millisecond)
	other.send(t, "FUNCTION KILL\r\n")
	expect(other, "-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
	other.send(t, "SHUTDOWN NOSAVE\r\n")
	select {
	case <-ts.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN NOSAVE did not stop the server")
	}
}

// TestFunctionACL: FCALL is in @scripting, its declared keys are checked against the
// user's patterns, and so is every key the function's commands touch.
func TestFunctionACL(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.Users = [][]string{{"app", "on", ">pass", "~a:*", "+@scripting", "+get", "+incr"}, {"noscript", "on", ">pass", "~*", "+@read"}}
	})
	admin := ts.client(t, 2)
	do(t, admin, "FUNCTION", "LOAD", testLibrary)
	app := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "app", Password: "pass", Protocol: 2})
	t.Cleanup(func() { app.Close() })
	require.Equal(t, int64(1), do(t, app, "FCALL", "incr", "1", "a:1"))
	require.Equal(t, "1", do(t, app, "FCALL_RO", "peek", "1", "a:1"))
	require.Equal(t, "NOPERM No permissions to access a key", doErr(t, app, "FCALL", "incr", "1", "b:1"))
	require.Equal(t, "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: other, on @user_function:4.",
		doErr(t, app, "FCALL", "other", "0"))
	require.Equal(t, "NOPERM User app has no permissions to run the 'set' command", doErr(t, app, "SET", "a:1", "x"))

	noscript := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "noscript", Password: "pass", Protocol: 2})
	t.Cleanup(func() { noscript.Close() })
	require.Equal(t, "NOPERM User noscript has no permissions to run the 'fcall_ro' command", doErr(t, noscript, "FCALL_RO", "peek", "1", "a:1"))

	cat := do(t, admin, "ACL", "CAT", "scripting").([]any)
	for _, name := range []string{"fcall", "fcall_ro", "function|load", "function|list", "function|kill"} {
		require.Contains(t, cat, name)
	}
}

// TestFunctionRecord: the libraries' record is no key, and FLUSHALL keeps the functions.
func TestFunctionRecord(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	require.Equal(t, "lib", do(t, rdb, "FUNCTION", "LOAD", testLibrary))
	require.Equal(t, int64(0), do(t, rdb, "DBSIZE"))
	require.Empty(t, do(t, rdb, "KEYS", "*"))
	require.Contains(t, doErr(t, rdb, "GET", functionsKey), "holds the function libraries")
	require.Contains(t, doErr(t, rdb, "DEL", functionsKey), "holds the function libraries")
	do(t, rdb, "SET", "x", "1")
	do(t, rdb, "FLUSHALL")
	require.Equal(t, int64(0), do(t, rdb, "DBSIZE"))
	require.Equal(t, int64(1), do(t, rdb, "FCALL", "incr", "1", "k"))
	info := do(t, rdb, "INFO", "memory").(string)
	require.Contains(t, info, "number_of_functions:5\r\n")
	require.Contains(t, info, "number_of_libraries:1\r\n")
	require.Equal(t, "OK", do(t, rdb, "FUNCTION", "DELETE", "lib"))
	require.Equal(t, "ERR Function not found", doErr(t, rdb, "FCALL", "incr", "1", "k"))
	require.Equal(t, int64(1), do(t, rdb, "DBSIZE"))
}

// FuzzFunctionLoad loads arbitrary code with FUNCTION LOAD (half the time after a good
// shebang) and calls what it registered: the server never panics, every reply is one
// well-formed RESP reply, and a function still running after 100 ms is killed.
func FuzzFunctionLoad(f *testing.F) {
	s, c := fuzzServer(f)
	run := func(args ...string) string {
		req := make([][]byte, len(args))
		for i, a := range args {
			req[i] = []byte(a)
		}
		c.W.B = c.W.B[:0]
		s.run(c, req)
		return string(c.W.B)
	}
	s.scripts.busyAfter.Store(20)
	for _, seed := range []string{
		"redis.register_function('f', function(keys, args) return redis.call('SET', keys[1], args[1]) end)",
		"redis.register_function{function_name='f', callback=function(keys) return {keys[1], 1.5, false} end, flags={'no-writes'}}",
		"redis.register_function('f', function() while true do end end)", "while true do end", "x = 1",
		"redis.register_function{function_name='f', callback=function() end, flags={nil}, description=1}",
		"local t = setmetatable({}, {__index = function() error('x') end}) redis.register_function(t)",
		"redis.register_function('f', function() return redis.setresp(3) end)",
		"#!lua name=\"\\x41\"\nredis.register_function('f', function() end)", "#!lua name='a\nx", "#!",
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, code string, shebang bool) {
		if shebang {
			code = "#!lua name=fz\n" + code
		}
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(100 * time.Millisecond):
				for {
					l := &s.scripts
					l.mu.Lock()
					for r := range l.busy {
						r.call.Kill()
					}
					l.mu.Unlock()
					select {
					case <-done:
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		}()
		defer close(done)
		for _, req := range [][]string{{"FUNCTION", "LOAD", "REPLACE", code}, {"FCALL", "f", "1", "fz:k", "v"}, {"FCALL_RO", "f", "0"},
			{"FUNCTION", "LIST", "WITHCODE"}, {"FUNCTION", "RESTORE", code, "FLUSH"}, {"FUNCTION", "STATS"}} {
			reply := run(req...)
			if strings.Contains(reply, "internal error") {
				t.Fatalf("%q: %s", req, reply)
			}
			rd := bufio.NewReader(strings.NewReader(reply))
			if _, err := difftest.ReadReply(rd); err != nil || rd.Buffered() != 0 {
				t.Fatalf("%q: not one RESP reply: %q", req, reply)
			}
		}
	})
}
