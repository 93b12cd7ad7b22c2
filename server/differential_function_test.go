package server

import (
	"math/rand/v2"
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/scripting"
)

// The functions' differential test: FUNCTION LOAD, DELETE, FLUSH, LIST, DUMP, RESTORE and
// STATS with good and bad libraries, and FCALL and FCALL_RO of their functions over the
// keys the other families write. Each library registers one function, so that FUNCTION
// LIST's order (a dict's in Redis) is only the libraries', compared as unordered.

// diffLibraries are the libraries the test loads: each name has variants, so that REPLACE
// changes a library's functions and their flags.
var diffLibraries = []string{
	"#!lua name=la\nredis.register_function('fa', function(keys, args) return redis.call('GET', keys[1]) end)",
	"#!lua name=la\nredis.register_function{function_name='fa', callback=function(keys, args) return redis.call('INCR', keys[1]) end, description='counts'}",
	"#!lua name=la\nredis.register_function{function_name='fa2', callback=function(keys) return {keys[1], #keys} end, flags={'no-writes'}}",
	"#!lua name=lb\nlocal function set(k, v) return redis.call('SET', k, v) end\nredis.register_function('fb', function(keys, args) return set(keys[1], args[1]) end)",
	"#!lua name=lb\nredis.register_function{function_name='fb', callback=function(keys, args) return redis.call('SET', keys[1], 'ro') end, flags={'no-writes', 'allow-stale'}}",
	"#!lua name=lc\nredis.register_function{function_name='fc', callback=function(keys, args) return redis.pcall('HGETALL', keys[1]) end, flags={'no-writes'}, description='reads a hash'}",
	"#!lua name=lc\nredis.register_function('fc', function(keys, args) error('no ' .. tostring(args[1])) end)",
	"#!lua name=ld\nredis.register_function('fa', function() return 1 end)",
	"#!lua name=le\nredis.register_function{function_name='FB', callback=function() return 2 end}",
	"#!lua name=lf\nredis.register_function{function_name='ff', callback=function(keys, args) return redis.call('LPUSH', keys[1], args[1] or 'x') end, flags={'allow-oom', 'no-cluster'}}",
	"#!lua name=lg\nredis.register_function('fg', function(keys, args) return {1, 2.5, 'x', redis.status_reply('OK'), redis.error_reply('MY err'), {false}, true} end)",
	"#!lua name=lh\nredis.register_function('fh', function(keys, args) return KEYS end)",
	"#!lua name=li\nredis.register_function('fi', function(keys, args) x = 1 end)",
	"#!lua name=lj\nredis.register_function('fj', function(keys, args) redis.setresp(3) return redis.call('HGETALL', keys[1]) end)",
}

// diffBadLibraries are codes FUNCTION LOAD refuses.
var diffBadLibraries = []string{
	"return 1", "#!lua name=bad", "#!lua\nx", "#!lua name=a name=b\nx", "#!lua foo=b\nx", "#!lua name=a-b\nx",
	"#!js name=a\nx", "#!lua name=bad\n+", "#!lua name=bad\nreturn 1", "#!lua name=bad\nx = 1",
	"#!lua name=bad\nredis.call('ping')", "#!lua name=bad\nlocal s = string.len('a')",
	"#!lua name=bad\nredis.register_function()", "#!lua name=bad\nredis.register_function('f', 1)",
	"#!lua name=bad\nredis.register_function{function_name='f', callback=function() end, flags={'bogus'}}",
	"#!lua name=bad\nredis.register_function('f', function() end) redis.register_function('f', function() end)",
	"#!lua name=bad\nredis.register_function('f-g', function() end)", "#!lua name=\"quoted\"\nredis.register_function('fq', function() return 'q' end)",
	"#!LUA NAME=upper\nredis.register_function('fu', function() return 'u' end)",
}

// diffPayloads are FUNCTION RESTORE's payloads, made with the server's own Dump (which
// Redis reads) and broken ones.
func diffPayloads() []string {
	e := scripting.New()
	load := func(codes ...string) string {
		var ls *scripting.Libraries
		for _, c := range codes {
			var err error
			if ls, _, err = e.LoadLibrary([]byte(c), ls, false, 0); err != nil {
				panic(err)
			}
		}
		return string(scripting.Dump(ls.List()))
	}
	good := load(diffLibraries[0], diffLibraries[3])
	return []string{good, load(diffLibraries[5]), load(diffLibraries[7]), load(diffLibraries[2], diffLibraries[4]),
		string(scripting.Dump(nil)), "", "garbage", good[:len(good)-1] + "x", "\xf6" + good[1:]}
}

var diffRestorePayloads = diffPayloads()

func genFunctions(r *rand.Rand) diffCmd {
	switch n := r.IntN(100); {
	case n < 22:
		code := difftest.Pick(r, diffLibraries...)
		if r.IntN(6) == 0 {
			code = difftest.Pick(r, diffBadLibraries...)
		}
		if r.IntN(3) == 0 {
			return cmd("FUNCTION", "LOAD", difftest.Pick(r, "REPLACE", "replace", "REPLACE", "x"), code)
		}
		return cmd("FUNCTION", "LOAD", code)
	case n < 50:
		name := difftest.Pick(r, "fa", "fa2", "fb", "FB", "fc", "ff", "fg", "fh", "fi", "fj", "FA", "nosuch", "fq", "fu")
		numkeys := difftest.Pick(r, "1", "1", "1", "0", "2", "-1", "x", "3")
		c := cmd(difftest.Pick(r, "FCALL", "FCALL", "FCALL_RO"), name, numkeys, difftest.Key(r), difftest.Value(r))
		c.Unordered, c.Pairs = name == "fc" || name == "fj", true // HGETALL: a hash's order
		return c
	case n < 60:
		c := cmd("FUNCTION", "LIST")
		switch r.IntN(5) {
		case 0:
			c.Args = append(c.Args, "WITHCODE")
		case 1:
			c.Args = append(c.Args, "LIBRARYNAME", difftest.Pick(r, "l*", "la", "L?", "[a-l]b", "x*", "*"))
		case 2:
			c.Args = append(c.Args, "libraryname", difftest.Pick(r, "l*", "lb"), "withcode")
		case 3:
			c.Args = append(c.Args, difftest.Pick(r, "LIBRARYNAME", "foo", "WITHCODE"), difftest.Pick(r, "WITHCODE", "libraryname"))
		}
		c.Unordered = true
		return c
	case n < 65:
		return cmd("FUNCTION", "DELETE", difftest.Pick(r, "la", "lb", "lc", "ld", "nosuch", "LA"))
	case n < 67:
		return cmd("FUNCTION", "FLUSH", difftest.Pick(r, "SYNC", "async", "x"))
	case n < 69:
		return cmd("FUNCTION", "STATS")
	case n < 71:
		c := cmd("FUNCTION", "DUMP")
		c.Shape = true
		return c
	case n < 76:
		i := r.IntN(len(diffRestorePayloads))
		c := cmd("FUNCTION", "RESTORE", diffRestorePayloads[i])
		if r.IntN(2) == 0 {
			c.Args = append(c.Args, difftest.Pick(r, "APPEND", "REPLACE", "FLUSH", "flush", "bogus"))
		}
		// Of two libraries that both exist, Redis names the first its dict yields.
		c.Skip = i == 0 || i == 3
		return c
	case n < 79:
		return cmd("FUNCTION", difftest.Pick(r, "KILL", "HELP", "nosuch", "FLUSH", "LOAD", "DELETE", "RESTORE"), difftest.Pick(r, "x", "y"))
	case n < 81:
		return cmd(difftest.Pick(r, "FUNCTION", "FCALL", "FCALL_RO"))
	case n < 83:
		return cmd("DBSIZE")
	}
	return genOther(r) // FLUSHALL among them: it keeps the functions
}

func TestDifferentialFunctions(t *testing.T) { runDifferential(t, genFunctions) }
