package scripting

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// callFunction runs the function name of ls with keys and argv and returns its reply.
func callFunction(t *testing.T, e *Engine, ls *Libraries, h *fakeHost, name string, keys, argv []string) string {
	t.Helper()
	f := ls.Function([]byte(name))
	require.NotNil(t, f, name)
	call := &Call{Host: h, Proto: 2}
	for _, k := range keys {
		call.Keys = append(call.Keys, []byte(k))
	}
	for _, a := range argv {
		call.Args = append(call.Args, []byte(a))
	}
	out, err := e.CallFunction(nil, f, call)
	require.NoError(t, err)
	return string(out)
}

func TestLoadLibrary(t *testing.T) {
	e := New()
	ls, lib, err := e.LoadLibrary([]byte(`#!lua name=lib1
local function helper(k) return redis.call('GET', k) end
redis.register_function('get', function(keys, args) return helper(keys[1]) end)
redis.register_function{function_name='Echo', callback=function(keys, args) return {keys[1], args[1], #keys, #args} end,
  flags={'no-writes', 'ALLOW-STALE'}, description='echoes'}
redis.register_function('fail', function() error('boom') end)
redis.register_function('kv', function() return type(KEYS) end)
local rf = redis.register_function
redis.register_function('late', function() rf('x', function() end) end)
`), nil, false, LoadTimeout)
	require.NoError(t, err)
	require.Equal(t, "lib1", lib.Name)
	require.Equal(t, []string{"Echo", "fail", "get", "kv", "late"}, functionNames(lib))
	echo := ls.Function([]byte("echo"))
	require.NotNil(t, echo, "names are found in any case")
	require.Equal(t, NoWrites|AllowStale, echo.Flags)
	require.True(t, echo.HasDesc)

	h := &fakeHost{reply: "$1\r\nv\r\n"}
	require.Equal(t, "$1\r\nv\r\n", callFunction(t, e, ls, h, "get", []string{"k"}, nil))
	require.Equal(t, [][]string{{"GET", "k"}}, h.calls)
	require.Equal(t, "*4\r\n$1\r\na\r\n$1\r\nb\r\n:1\r\n:1\r\n", callFunction(t, e, ls, h, "echo", []string{"a"}, []string{"b"}))
	require.Equal(t, "-ERR user_function:6: boom script: fail, on @user_function:6.\r\n", callFunction(t, e, ls, h, "fail", nil, nil))
	require.Equal(t, "-ERR user_function:7: Script attempted to access nonexistent global variable 'KEYS' script: kv, on @user_function:7.\r\n",
		callFunction(t, e, ls, h, "kv", nil, nil))
	require.Contains(t, callFunction(t, e, ls, h, "late", nil, nil), "redis.register_function can only be called on FUNCTION LOAD command")

	_, _, err = e.LoadLibrary([]byte("#!lua name=lib1\nredis.register_function('z', function() end)"), ls, false, LoadTimeout)
	require.EqualError(t, err, "Library 'lib1' already exists")
	_, _, err = e.LoadLibrary([]byte("#!lua name=lib2\nredis.register_function('GET', function() end)"), ls, false, LoadTimeout)
	require.EqualError(t, err, "Function GET already exists")
	ls2, _, err := e.LoadLibrary([]byte("#!lua name=lib1\nredis.register_function('get', function() return 7 end)"), ls, true, LoadTimeout)
	require.NoError(t, err)
	e.LibrariesChanged()
	require.Nil(t, ls2.Function([]byte("echo")))
	require.Equal(t, ":7\r\n", callFunction(t, e, ls2, h, "get", nil, nil))
}

func functionNames(l *Library) []string {
	var out []string
	for _, f := range l.Functions {
		out = append(out, f.Name)
	}
	return out
}

func TestLoadLibraryErrors(t *testing.T) {
	e := New()
	for _, tc := range []struct{ code, want string }{
		{"return 1", "Missing library metadata"},
		{"#!lua name=a", "Invalid library metadata"},
		{"#!lua name=\"a\nx", "Invalid library metadata"},
		{"#!lua\nx", "Library name was not given"},
		{"#!lua name=a name=b\nx", "Invalid metadata value, name argument was given multiple times"},
		{"#!lua foo=b\nx", "Invalid metadata value given: foo=b"},
		{"#!lua name=a-b\nx", "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"},
		{"#!js name=a\nx", "Engine 'js' not found"},
		{"#!lua name=a\n+", "Error compiling function: user_function:2: unexpected symbol near '+'"},
		{"#!lua name=a\nreturn 1", "No functions registered"},
		{"#!lua name=a\nx = 1", "Error registering functions: ERR user_function:2: Attempt to modify a readonly table"},
		{"#!lua name=a\nredis.call('ping')", "Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"},
		{"#!lua name=a\nlocal s = string.len('a')", "Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'string'"},
		{"#!lua name=a\nlocal t = {} t.x.y = 1", "Error registering functions: ERR user_function:2: attempt to index field 'x' (a nil value)"},
		{"#!lua name=a\nredis.register_function()", "Error registering functions: ERR wrong number of arguments to redis.register_function"},
		{"#!lua name=a\nredis.register_function('f')", "Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."},
		{"#!lua name=a\nredis.register_function('f', 1)", "Error registering functions: ERR second argument to redis.register_function must be a function"},
		{"#!lua name=a\nredis.register_function('f-x', function() end)", "Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"},
		{"#!lua name=a\nredis.register_function('f', function() end) redis.register_function('f', function() end)", "Error registering functions: ERR Function already exists in the library"},
		{"#!lua name=a\nredis.register_function{}", "Error registering functions: ERR redis.register_function must get a function name argument"},
		{"#!lua name=a\nredis.register_function{function_name='f'}", "Error registering functions: ERR redis.register_function must get a callback argument"},
		{"#!lua name=a\nredis.register_function{function_name={}, callback=function() end}", "Error registering functions: ERR function_name argument given to redis.register_function must be a string"},
		{"#!lua name=a\nredis.register_function{function_name='f', callback=1}", "Error registering functions: ERR callback argument given to redis.register_function must be a function"},
		{"#!lua name=a\nredis.register_function{function_name='f', callback=function() end, flags='x'}", "Error registering functions: ERR flags argument to redis.register_function must be a table representing function flags"},
		{"#!lua name=a\nredis.register_function{function_name='f', callback=function() end, flags={'x'}}", "Error registering functions: ERR unknown flag given"},
		{"#!lua name=a\nredis.register_function{function_name='f', callback=function() end, description={}}", "Error registering functions: ERR description argument given to redis.register_function must be a string"},
		{"#!lua name=a\nredis.register_function{function_name='f', callback=function() end, foo=1}", "Error registering functions: ERR unknown argument given to redis.register_function"},
		{"#!lua name=a\nredis.log(1)", "Error registering functions: ERR redis.log() requires two arguments or more."},
		{"#!lua name=a\nwhile true do end", "Error registering functions: ERR FUNCTION LOAD timeout"},
	} {
		t.Run(strings.ReplaceAll(tc.code, "\n", " "), func(t *testing.T) {
			start := time.Now()
			_, _, err := e.LoadLibrary([]byte(tc.code), nil, false, LoadTimeout)
			require.EqualError(t, err, tc.want)
			require.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

// redisDump is what Redis 7.0.15's FUNCTION DUMP gave for one library of two functions:
// its code LZF-compressed.
const redisDump = "\xf5\xc3@\xa9@\xd4\x1f#!lua name=lib1\nredis.register_f\runction('f1', \xe0\x00\x0e\x18keys, args) return 1 end)\xe0\x0f@\x00{\xc0:\x00_`k\x02'f2 N\x08callback=\xc0\x1c\x00(\xe0\x00M\x002@M p\x12lags={'no-writes',' 4\x12ow-stale'}, descrip@\xa5\x06='two'}\n\x00\x8e\xa2\xfd\xcd\x8d\xc9\x05\x92"

func TestDump(t *testing.T) {
	codes, err := ParseDump([]byte(redisDump))
	require.NoError(t, err)
	require.Equal(t, []string{"#!lua name=lib1\nredis.register_function('f1', function(keys, args) return 1 end)\nredis.register_function{function_name='f2', callback=function() return 2 end, flags={'no-writes','allow-stale'}, description='two'}"},
		[]string{string(codes[0])})

	libs := []*Library{{Code: string(codes[0])}, {Code: strings.Repeat("x", 20000)}}
	codes, err = ParseDump(Dump(libs))
	require.NoError(t, err)
	require.Len(t, codes, 2)
	require.Equal(t, libs[1].Code, string(codes[1]))

	for _, bad := range []string{"", "garbage", redisDump[:len(redisDump)-1] + "\x00", redisDump[:9] + "X" + redisDump[10:]} {
		_, err := ParseDump([]byte(bad))
		require.ErrorIs(t, err, errDumpPayload, "%q", bad)
	}
}

// FuzzLoadLibrary: no code makes loading panic, and what loads can be called.
func FuzzLoadLibrary(f *testing.F) {
	f.Add([]byte("#!lua name=a\nredis.register_function('f', function(keys, args) return keys[1] end)"))
	f.Add([]byte("#!lua name=a\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'no-writes'}}"))
	f.Add([]byte("#!lua name=\"a\\x41\" \nredis.register_function('f', function() end)"))
	f.Add([]byte("#!lua name='a'\nlocal t = setmetatable({}, {__index=function() error('x') end}) redis.register_function(t)"))
	f.Add([]byte("#!lua name=a\nredis.register_function{function_name=1, callback=function() end, flags={nil, 'x'}}"))
	e := New()
	f.Fuzz(func(t *testing.T, code []byte) {
		ls, lib, err := e.LoadLibrary(code, nil, false, 50*time.Millisecond)
		if err != nil {
			return
		}
		for _, fn := range lib.Functions {
			if _, err := e.CallFunction(nil, ls.Function([]byte(fn.Name)), &Call{Host: &fakeHost{reply: "+OK\r\n"}, Proto: 2, BusyAfter: time.Millisecond}); err != nil {
				t.Fatal(err)
			}
		}
		codes, err := ParseDump(Dump([]*Library{lib}))
		require.NoError(t, err)
		require.Equal(t, lib.Code, string(codes[0]))
	})
}
