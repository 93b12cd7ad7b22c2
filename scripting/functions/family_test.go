package functions

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/scripting"
)

const (
	libA = "#!lua name=liba\nredis.register_function('fa', function() return 1 end)"
	libB = "#!lua name=LibB\nredis.register_function{function_name='fb', callback=function() return 2 end, flags={'no-writes'}, description='b'}"
)

// fixture is a family on a keyspace of its own, at a fixed clock, with the server's side
// (busy runs, kills) played by fields a test sets.
type fixture struct {
	f       *Family
	ks      *keyspace.Keyspace
	log     *bytes.Buffer // what the family logged
	kill    func(functions bool) error
	running func() (*Run, error)
	killed  []bool // the kinds Kill was asked for
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{ks: keyspace.New(4), log: new(bytes.Buffer)}
	fx.f = fx.familyOn(fx.ks)
	return fx
}

// familyOn returns a family on ks wired to fx's server side.
func (fx *fixture) familyOn(ks *keyspace.Keyspace) *Family {
	return New(Config{Keys: ks, Now: func() int64 { return 1_700_000_000_000_000_000 },
		Log: slog.New(slog.NewTextHandler(fx.log, nil)), Scripts: scripting.New(),
		Kill: func(functions bool) error {
			fx.killed = append(fx.killed, functions)
			if fx.kill != nil {
				return fx.kill(functions)
			}
			return nil
		},
		Running: func() (*Run, error) {
			if fx.running != nil {
				return fx.running()
			}
			return nil, nil
		}})
}

// do runs the family's command args (its container and subcommand first) and returns its
// reply, or its error.
func (fx *fixture) do(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return doOn(t, fx.f, args...)
}

func doOn(t *testing.T, f *Family, args ...string) (string, error) {
	t.Helper()
	var spec *command.Spec
	for _, parent := range f.Commands() {
		if parent.Name != strings.ToLower(args[0]) {
			continue
		}
		for _, sub := range parent.Subcommands {
			if sub.Name == strings.ToLower(args[1]) {
				spec = sub
			}
		}
	}
	require.NotNil(t, spec, "no command %s %s", args[0], args[1])
	if spec.Arity >= 0 {
		require.Equal(t, spec.Arity, len(args), "arity")
	} else {
		require.GreaterOrEqual(t, len(args), -spec.Arity, "arity")
	}
	raw := make([][]byte, len(args))
	for i, a := range args {
		raw[i] = []byte(a)
	}
	c := &command.Ctx{Env: &command.Env{Keys: f.cfg.Keys}}
	c.W.Proto = 3
	err := spec.Handler(c, raw)
	return string(c.W.B), err
}

// record returns the libraries' record as stored, and whether there is one.
func (fx *fixture) record() (keyspace.Value, bool) {
	key := []byte(Key)
	sh := fx.ks.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	v, ok := sh.GetLocked(key, 0)
	return v, ok
}

func libraryNames(ls *scripting.Libraries) []string {
	var names []string
	for _, l := range ls.List() {
		names = append(names, l.Name)
	}
	return names
}

// TestChangesStoreTheRecord: each change is a new version of the one record, whose bytes
// are FUNCTION DUMP's payload; the last library deleted deletes it.
func TestChangesStoreTheRecord(t *testing.T) {
	fx := newFixture(t)
	require.False(t, fx.f.HasRecord())
	_, ok := fx.record()
	require.False(t, ok)

	reply, err := fx.do(t, "FUNCTION", "LOAD", libA)
	require.NoError(t, err)
	require.Equal(t, "$4\r\nliba\r\n", reply)
	v1, ok := fx.record()
	require.True(t, ok)
	require.Equal(t, keyspace.Functions, v1.Kind)
	require.True(t, fx.f.HasRecord())

	_, err = fx.do(t, "FUNCTION", "LOAD", libB)
	require.NoError(t, err)
	v2, _ := fx.record()
	require.Greater(t, v2.Num, v1.Num, "each change is a new version")
	dump, err := fx.do(t, "FUNCTION", "DUMP")
	require.NoError(t, err)
	require.Equal(t, "$"+itoa(int64(len(v2.Bytes)))+"\r\n"+string(v2.Bytes)+"\r\n", dump)

	_, err = fx.do(t, "FUNCTION", "LOAD", libA)
	require.EqualError(t, err, "Library 'liba' already exists")
	v3, _ := fx.record()
	require.Equal(t, v2.Num, v3.Num, "a refused change stores nothing")

	for _, name := range []string{"liba", "LibB"} {
		reply, err = fx.do(t, "FUNCTION", "DELETE", name)
		require.NoError(t, err)
		require.Equal(t, "+OK\r\n", reply)
	}
	_, ok = fx.record()
	require.False(t, ok, "no library, no record")
	require.False(t, fx.f.HasRecord())
	_, err = fx.do(t, "FUNCTION", "DELETE", "liba")
	require.EqualError(t, err, "Library not found")
}

// TestLibrariesFollowTheRecord: a family reads the libraries of a record another writer
// stored (a primary through replication, a load from disk), and drops them when it goes.
func TestLibrariesFollowTheRecord(t *testing.T) {
	fx := newFixture(t)
	other := fx.familyOn(fx.ks)
	require.Empty(t, other.Libraries().List())

	_, err := fx.do(t, "FUNCTION", "LOAD", libA)
	require.NoError(t, err)
	require.Equal(t, []string{"liba"}, libraryNames(other.Libraries()))
	require.NotNil(t, other.Libraries().Function([]byte("FA")), "FCALL finds a function in any case")

	_, err = fx.do(t, "FUNCTION", "FLUSH")
	require.NoError(t, err)
	require.Empty(t, other.Libraries().List())
}

// TestDamagedRecord: a record that does not parse loads no library, and says so.
func TestDamagedRecord(t *testing.T) {
	fx := newFixture(t)
	key := []byte(Key)
	sh := fx.ks.Shard(key)
	sh.Lock()
	sh.SetLocked(key, keyspace.Value{Kind: keyspace.Functions, Num: 1, Bytes: []byte("not a payload")})
	sh.Unlock()
	require.Empty(t, fx.f.Libraries().List())
	require.Contains(t, fx.log.String(), "the stored function libraries are damaged")
}

// TestKeepPutsTheRecordBack: FLUSHALL empties the keyspace but the libraries' record; its
// error is returned.
func TestKeepPutsTheRecordBack(t *testing.T) {
	fx := newFixture(t)
	_, err := fx.do(t, "FUNCTION", "LOAD", libA)
	require.NoError(t, err)
	before, _ := fx.record()
	other := []byte("k")
	sh := fx.ks.Shard(other)
	sh.Lock()
	sh.SetLocked(other, keyspace.Value{Kind: keyspace.String, Bytes: []byte("v")})
	sh.Unlock()

	failed := errors.New("disk gone")
	err = fx.f.Keep(func() error { fx.ks.Flush(); return failed })
	require.Equal(t, failed, err)
	after, ok := fx.record()
	require.True(t, ok)
	require.Equal(t, before.Num, after.Num)
	require.Equal(t, before.Bytes, after.Bytes)
	require.Equal(t, 1, fx.ks.Len(), "the record alone is left")
	require.Equal(t, []string{"liba"}, libraryNames(fx.f.Libraries()))

	require.NoError(t, fx.f.Keep(func() error { fx.ks.Flush(); return nil }))
	_, err = fx.do(t, "FUNCTION", "FLUSH", "SYNC")
	require.NoError(t, err)
	require.NoError(t, fx.f.Keep(func() error { fx.ks.Flush(); return nil }))
	_, ok = fx.record()
	require.False(t, ok, "with no record there is none to put back")
}

// TestRestorePolicies: FUNCTION RESTORE appends (refusing a library that exists), replaces
// or flushes first.
func TestRestorePolicies(t *testing.T) {
	fx := newFixture(t)
	_, err := fx.do(t, "FUNCTION", "LOAD", libA)
	require.NoError(t, err)
	payload := string(scripting.Dump(fx.f.Libraries().List()))
	_, err = fx.do(t, "FUNCTION", "LOAD", libB)
	require.NoError(t, err)

	for _, tc := range []struct {
		name, policy string
		err          string
		libs         []string
	}{
		{"append collides", "", "Library liba already exists", []string{"LibB", "liba"}},
		{"explicit append collides", "APPEND", "Library liba already exists", []string{"LibB", "liba"}},
		{"replace", "replace", "", []string{"LibB", "liba"}},
		{"flush", "FLUSH", "", []string{"liba"}},
		{"bad policy", "merge", "Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.", []string{"liba"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"FUNCTION", "RESTORE", payload}
			if tc.policy != "" {
				args = append(args, tc.policy)
			}
			reply, err := fx.do(t, args...)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
			} else {
				require.NoError(t, err)
				require.Equal(t, "+OK\r\n", reply)
			}
			require.ElementsMatch(t, tc.libs, libraryNames(fx.f.Libraries()))
		})
	}
	_, err = fx.do(t, "FUNCTION", "RESTORE", "junk")
	require.Error(t, err)
	_, err = fx.do(t, "FUNCTION", "RESTORE", payload, "FLUSH", "extra")
	require.EqualError(t, err, "unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP.")
}

// TestList: LIBRARYNAME's pattern matches library names in any case; WITHCODE adds the code.
func TestList(t *testing.T) {
	fx := newFixture(t)
	for _, lib := range []string{libA, libB} {
		_, err := fx.do(t, "FUNCTION", "LOAD", lib)
		require.NoError(t, err)
	}
	libB := "%3\r\n$12\r\nlibrary_name\r\n$4\r\nLibB\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*1\r\n" +
		"%3\r\n$4\r\nname\r\n$2\r\nfb\r\n$11\r\ndescription\r\n$1\r\nb\r\n$5\r\nflags\r\n~1\r\n+no-writes\r\n"
	for _, tc := range []struct {
		name string
		args []string
		want string
		err  string
	}{
		{"pattern in any case", []string{"LIBRARYNAME", "*B"}, "*1\r\n" + libB, ""},
		{"no match", []string{"LIBRARYNAME", "x*"}, "*0\r\n", ""},
		{"with code", []string{"libraryname", "liba", "WITHCODE"}, "*1\r\n%4\r\n$12\r\nlibrary_name\r\n$4\r\nliba\r\n$6\r\nengine\r\n$3\r\nLUA\r\n" +
			"$9\r\nfunctions\r\n*1\r\n%3\r\n$4\r\nname\r\n$2\r\nfa\r\n$11\r\ndescription\r\n_\r\n$5\r\nflags\r\n~0\r\n" +
			"$12\r\nlibrary_code\r\n$" + itoa(int64(len(libA))) + "\r\n" + libA + "\r\n", ""},
		{"no pattern given", []string{"LIBRARYNAME"}, "", "library name argument was not given"},
		{"twice", []string{"WITHCODE", "WITHCODE"}, "", "Unknown argument WITHCODE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply, err := fx.do(t, append([]string{"FUNCTION", "LIST"}, tc.args...)...)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, reply)
		})
	}
}

// TestStatsAndKill: FUNCTION STATS shows what the server says runs; the KILLs ask the
// server for their kind and reply OK, or the server's error.
func TestStatsAndKill(t *testing.T) {
	fx := newFixture(t)
	_, err := fx.do(t, "FUNCTION", "LOAD", libA)
	require.NoError(t, err)
	engines := "$7\r\nengines\r\n%1\r\n$3\r\nLUA\r\n%2\r\n$15\r\nlibraries_count\r\n:1\r\n$15\r\nfunctions_count\r\n:1\r\n"

	reply, err := fx.do(t, "FUNCTION", "STATS")
	require.NoError(t, err)
	require.Equal(t, "%2\r\n$14\r\nrunning_script\r\n_\r\n"+engines, reply)

	fx.running = func() (*Run, error) {
		return &Run{Name: "fa", Args: [][]byte{[]byte("FCALL"), []byte("fa"), []byte("0")}, Duration: 1500 * time.Millisecond}, nil
	}
	reply, err = fx.do(t, "FUNCTION", "STATS")
	require.NoError(t, err)
	require.Equal(t, "%2\r\n$14\r\nrunning_script\r\n%3\r\n$4\r\nname\r\n$2\r\nfa\r\n$7\r\ncommand\r\n*3\r\n$5\r\nFCALL\r\n$2\r\nfa\r\n$1\r\n0\r\n"+
		"$11\r\nduration_ms\r\n:1500\r\n"+engines, reply)
	busy := errors.New("BUSY a script")
	fx.running = func() (*Run, error) { return nil, busy }
	_, err = fx.do(t, "FUNCTION", "STATS")
	require.Equal(t, busy, err)

	reply, err = fx.do(t, "FUNCTION", "KILL")
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", reply)
	fx.kill = func(bool) error { return busy }
	reply, err = fx.do(t, "SCRIPT", "KILL")
	require.Equal(t, busy, err)
	require.Empty(t, reply)
	require.Equal(t, []bool{true, false}, fx.killed)
}

// TestScriptCache: SCRIPT LOAD, EXISTS and FLUSH work on the engine EVAL runs.
func TestScriptCache(t *testing.T) {
	fx := newFixture(t)
	const sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" // return 1
	reply, err := fx.do(t, "SCRIPT", "EXISTS", sha, "nothex", strings.ToUpper(sha))
	require.NoError(t, err)
	require.Equal(t, "*3\r\n:0\r\n:0\r\n:0\r\n", reply)
	reply, err = fx.do(t, "SCRIPT", "LOAD", "return 1")
	require.NoError(t, err)
	require.Equal(t, "$40\r\n"+sha+"\r\n", reply)
	require.NotNil(t, fx.f.cfg.Scripts.Lookup(digest(t, sha)))
	reply, err = fx.do(t, "SCRIPT", "EXISTS", sha, "nothex", strings.ToUpper(sha))
	require.NoError(t, err)
	require.Equal(t, "*3\r\n:1\r\n:0\r\n:1\r\n", reply)

	_, err = fx.do(t, "SCRIPT", "FLUSH", "LAZY")
	require.EqualError(t, err, "SCRIPT FLUSH only support SYNC|ASYNC option")
	reply, err = fx.do(t, "SCRIPT", "FLUSH", "async")
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", reply)
	require.Nil(t, fx.f.cfg.Scripts.Lookup(digest(t, sha)))

	_, err = fx.do(t, "SCRIPT", "LOAD", "return (")
	require.Error(t, err)
	reply, err = fx.do(t, "SCRIPT", "DEBUG", "no")
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", reply)
	_, err = fx.do(t, "SCRIPT", "DEBUG", "maybe")
	require.EqualError(t, err, "Use SCRIPT DEBUG YES/SYNC/NO")
}

func digest(t *testing.T, sha string) [20]byte {
	t.Helper()
	d, ok := scripting.Digest([]byte(sha))
	require.True(t, ok)
	return d
}

// TestInfo: INFO's scripting fields, in Redis's order, from the engines' figures and the
// libraries.
func TestInfo(t *testing.T) {
	fx := newFixture(t)
	_, err := fx.do(t, "FUNCTION", "LOAD", libA)
	require.NoError(t, err)
	_, err = fx.do(t, "SCRIPT", "LOAD", "return 1")
	require.NoError(t, err)

	names := func(fields [][2]string) []string {
		var out []string
		for _, f := range fields {
			out = append(out, f[0])
		}
		return out
	}
	value := func(fields [][2]string, name string) string {
		for _, f := range fields {
			if f[0] == name {
				return f[1]
			}
		}
		return ""
	}
	mem := fx.f.InfoMemory()
	require.Equal(t, []string{"used_memory_lua", "used_memory_vm_eval", "used_memory_lua_human", "used_memory_scripts_eval",
		"number_of_cached_scripts", "number_of_functions", "number_of_libraries", "used_memory_vm_functions",
		"used_memory_vm_total", "used_memory_vm_total_human", "used_memory_functions", "used_memory_scripts",
		"used_memory_scripts_human"}, names(mem))
	require.Equal(t, "8", value(mem, "used_memory_scripts_eval"))
	require.Equal(t, itoa(int64(len(libA))), value(mem, "used_memory_functions"))
	require.Equal(t, int64(len(libA)), fx.f.FunctionCode())
	require.Equal(t, itoa(int64(len(libA))+8), value(mem, "used_memory_scripts"))
	require.Equal(t, "1", value(mem, "number_of_libraries"))

	sc := fx.f.InfoScripting(2, 5000)
	require.Equal(t, []string{"script_calls", "script_calls_native", "script_calls_interpreted", "script_native_fallbacks",
		"script_native", "number_of_cached_scripts", "lua_interpreters_idle", "busy_scripts", "busy_reply_threshold"}, names(sc))
	require.Equal(t, "2", value(sc, "busy_scripts"))
	require.Equal(t, "5000", value(sc, "busy_reply_threshold"))
	require.Equal(t, "yes", value(sc, "script_native"))
}

// TestHelp: the HELP replies are Redis's usage lines, HELP's last.
func TestHelp(t *testing.T) {
	fx := newFixture(t)
	for _, parent := range []string{"FUNCTION", "SCRIPT"} {
		reply, err := fx.do(t, parent, "HELP")
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(reply, "*"), reply)
		require.Contains(t, reply, "+"+parent+" <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n")
		require.True(t, strings.HasSuffix(reply, "+HELP\r\n+    Prints this help.\r\n"), reply)
	}
}
