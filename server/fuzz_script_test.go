package server

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/difftest"
)

// FuzzScript runs arbitrary Lua with EVAL: the server never panics (a handler's panic
// would reply "internal error"), every reply is one well-formed RESP reply, and the
// script touches no key but its own. The scripts run as a user whose keys are fz* and
// who may run no dangerous command, so the keys outside are out of a script's reach
// whatever it does; guard keys with names no input can know check that nothing reaches
// them anyway. A script still running after 100 ms is killed, written or not.
func FuzzScript(f *testing.F) {
	s, c := fuzzServer(f)
	var nonce [8]byte
	rand.Read(nonce[:])
	guard := "guard:" + hex.EncodeToString(nonce[:])
	run := func(args ...string) string {
		req := make([][]byte, len(args))
		for i, a := range args {
			req[i] = []byte(a)
		}
		c.W.B = c.W.B[:0]
		s.run(c, req)
		return string(c.W.B)
	}
	guards := [][]string{
		{"SET", guard + ":s", "value"},
		{"HSET", guard + ":h", "f", "1.5", "g", "x"},
		{"ZADD", guard + ":z", "1", "a", "2", "b"},
	}
	states := []string{"GET " + guard + ":s", "HGETALL " + guard + ":h", "ZRANGE " + guard + ":z 0 -1 WITHSCORES"}
	for _, g := range guards {
		run(g...)
	}
	want := make([]string, len(states))
	for i, st := range states {
		want[i] = run(strings.Fields(st)...)
	}
	for _, r := range []string{
		run("ACL", "SETUSER", "fuzz", "on", "nopass", "~fz*", "+@all", "-@dangerous", "-@admin"),
		run("AUTH", "fuzz", "x"),
	} {
		if r != "+OK\r\n" {
			f.Fatal(r)
		}
	}
	s.scripts.busyAfter.Store(20)

	for _, seed := range conversionScripts {
		f.Add(seed)
	}
	for _, l := range limiterScripts {
		f.Add(l.body)
	}
	for _, seed := range append(structScripts, msgpackScripts...) {
		f.Add(seed) // the libraries' byte formats, for the fuzzer to change
	}
	for _, s := range arithStrings { // strings Lua reads as numbers, or not
		f.Add("local x = " + luaQuote(s) + " return {tostring(x + 1), -x, string.sub('hello', x), unpack({1, 2}, x)}")
		f.Add("for i = " + luaQuote(s) + ", 3 do redis.call('INCR', 'fz:n') end return table.concat({1, 2}, ',', " + luaQuote(s) + ")")
	}
	for _, seed := range []string{
		"while true do end", "redis.call('SET', 'fz:a', 1) while true do end", "local t = {} t[1] = t return t",
		"return redis.call('GET', 'other')", "return redis.call('FLUSHALL')", "return redis.call('KEYS', '*')",
		"return string.rep('x', 1e6):len()", "local s = '' for i = 1, 1e5 do s = s .. 'x' end return #s",
		"return redis.call('EVAL', 'return 1', 0)", "return loadstring('return ...')(1, 2)",
		"local co = coroutine.wrap(function() while true do coroutine.yield(1) end end) return co()",
		"return setmetatable({}, {__index = function(t, k) return t[k] end}).x",
		"return string.format('%99.99f', 1)", "return table.concat({}, 'x', 1, 1e9)",
		// The rate-limit verbs, from a script.
		"return redis.call('THROTTLE', 'fz:a', 3, 2, '1s')", "return redis.call('CL.THROTTLE', 'fz:a', 3, 2, 1, 1)",
		"return redis.call('GCRA', 'fz:g', 3, 2, 1.5, 'TOKENS', 2)", "return redis.call('TOKENBUCKET', 'fz:t', 5, 1, '1s', 'COST', 2)",
		"return redis.call('LEAKYBUCKET', 'fz:l', 5, 1, '1s')", "return redis.call('SLIDE', 'fz:s', 5, '1m', 'APPROX')",
		"return redis.call('WINDOW', 'fz:w', 5, '1m')", "return redis.call('CONCURRENCY.ACQUIRE', 'fz:c', 2, '10s', 'id1')",
		"return redis.call('CONCURRENCY.RELEASE', 'fz:c', 'id1')", "return redis.call('ALLOF', 'THROTTLE', 'fz:x', 3, 2, '1s', 'SLIDE', 'fz:y', 5, '1m')",
		"redis.call('POLICY.SET', 'p', 'THROTTLE', 3, 2, '1s') return redis.call('CHECK', 'p', 'fz:user')",
		"return redis.pcall('CHECK', 'nope', 'x')", "return redis.call('POLICY.LIST')",
		// struct and cmsgpack over arbitrary bytes.
		"return {struct.unpack('>!4bBhHlLTi3I5fdxc2c0s', '\\1\\2\\3\\4\\5\\6\\7\\8\\9\\0\\255\\254\\128abc\\0', 2)}",
		"return {pcall(cmsgpack.unpack_limit, '\\223\\0\\0\\0\\1\\147\\1\\192\\3\\220\\0\\1\\217\\1x', 2, 0)}",
		"local t = {} for i = 1, 16 do t[i] = t end return #cmsgpack.pack(t)",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		done := make(chan struct{})
		go func() { // a stand-in for SCRIPT KILL, that kills even a script that wrote
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
		reply := run("EVAL", body, "1", "fz:k", "arg")
		close(done)
		if bytes.Contains([]byte(reply), []byte("internal error")) {
			t.Fatalf("%q: %s", body, reply)
		}
		rd := bufio.NewReader(strings.NewReader(reply))
		if _, err := difftest.ReadReply(rd); err != nil || rd.Buffered() != 0 {
			t.Fatalf("%q: not one RESP reply: %q", body, reply)
		}
		c.W.Proto = 2
		for i, st := range states {
			c.user.Store(s.acl.Default())
			got := run(strings.Fields(st)...)
			c.user.Store(s.acl.Get("fuzz"))
			if got != want[i] {
				t.Fatalf("%q changed %s: %q", body, st, got)
			}
		}
	})
}
