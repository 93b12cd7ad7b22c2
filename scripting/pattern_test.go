package scripting

import (
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGsub: string.gsub as Lua 5.1 answers, each reply redis-server 7.0.15's for the
// same script: replacement strings with %0 to %9 and %%, tables and functions, the count
// argument, anchors, empty matches, the character classes, and Lua 5.1's error texts.
func TestGsub(t *testing.T) {
	e := New()
	for _, tc := range []struct{ body, want string }{
		{"return {string.gsub('hello world', 'o', '0')}", "*2\r\n$11\r\nhell0 w0rld\r\n:2\r\n"},
		{"return {string.gsub('hello world', '(o)', '[%1]')}", "*2\r\n$15\r\nhell[o] w[o]rld\r\n:2\r\n"},
		{"return {string.gsub('hello world', 'o', '%0%0')}", "*2\r\n$13\r\nhelloo woorld\r\n:2\r\n"},
		{"return {string.gsub('hello world', '%w+', '<%0>')}", "*2\r\n$15\r\n<hello> <world>\r\n:2\r\n"},
		{"return {string.gsub('hello world', '(%w+) (%w+)', '%2 %1')}", "*2\r\n$11\r\nworld hello\r\n:1\r\n"},
		{"return {string.gsub('abc', '', '-')}", "*2\r\n$7\r\n-a-b-c-\r\n:4\r\n"},
		{"return {string.gsub('abc', '.-', '-')}", "*2\r\n$7\r\n-a-b-c-\r\n:4\r\n"},
		{"return {string.gsub('abc', 'x*', '-')}", "*2\r\n$7\r\n-a-b-c-\r\n:4\r\n"},
		{"return {string.gsub('abc', '^', '>')}", "*2\r\n$4\r\n>abc\r\n:1\r\n"},
		{"return {string.gsub('abc', '$', '<')}", "*2\r\n$4\r\nabc<\r\n:1\r\n"},
		{"return {string.gsub('abc', '^a', 'A')}", "*2\r\n$3\r\nAbc\r\n:1\r\n"},
		{"return {string.gsub('aaa', '^a', 'A')}", "*2\r\n$3\r\nAaa\r\n:1\r\n"},
		{"return {string.gsub('abcabc', 'b', 'B', 1)}", "*2\r\n$6\r\naBcabc\r\n:1\r\n"},
		{"return {string.gsub('abcabc', 'b', 'B', 0)}", "*2\r\n$6\r\nabcabc\r\n:0\r\n"},
		{"return {string.gsub('abcabc', 'b', 'B', -1)}", "*2\r\n$6\r\nabcabc\r\n:0\r\n"},
		{"return {string.gsub('abcabc', 'b', 'B', '1')}", "*2\r\n$6\r\naBcabc\r\n:1\r\n"},
		{"return {string.gsub('abc', 'b', '%%')}", "*2\r\n$3\r\na%c\r\n:1\r\n"},
		{"return {string.gsub('abc', 'b', '%x')}", "*2\r\n$3\r\naxc\r\n:1\r\n"},
		{"return {string.gsub('abc', 'b', '%')}", "*2\r\n$3\r\na\x00c\r\n:1\r\n"},
		{"return {pcall(string.gsub, 'abc', 'b', '%1')}", "*3\r\n:1\r\n$3\r\nabc\r\n:1\r\n"},
		{"return {pcall(string.gsub, 'abc', 'b', '%2')}", "*2\r\n$-1\r\n$21\r\ninvalid capture index\r\n"},
		{"return {pcall(string.gsub, 'abc', '(b)', '%2')}", "*2\r\n$-1\r\n$21\r\ninvalid capture index\r\n"},
		{"return {string.gsub('abc', '()b', '%1')}", "*2\r\n$3\r\na2c\r\n:1\r\n"},
		{"return {string.gsub('abc', '(b)', {b = 'B'})}", "*2\r\n$3\r\naBc\r\n:1\r\n"},
		{"return {string.gsub('abc', '%w', {a = 1, b = true and 'X', c = false})}", "*2\r\n$3\r\n1Xc\r\n:3\r\n"},
		{"return {pcall(string.gsub, 'abc', 'b', {b = {}})}", "*2\r\n$-1\r\n$35\r\ninvalid replacement value (a table)\r\n"},
		{"return {pcall(string.gsub, 'abc', 'b', {b = true})}", "*2\r\n$-1\r\n$37\r\ninvalid replacement value (a boolean)\r\n"},
		{"return {pcall(string.gsub, 'abc', 'b', function() return {} end)}", "*2\r\n$-1\r\n$35\r\ninvalid replacement value (a table)\r\n"},
		{"return {string.gsub('abc', '%w', function(c) return c:upper() .. '.' end)}", "*2\r\n$6\r\nA.B.C.\r\n:3\r\n"},
		{"return {string.gsub('abc', '%w', function(c) if c == 'b' then return nil end return 1.5 end)}", "*2\r\n$7\r\n1.5b1.5\r\n:3\r\n"},
		{"return {string.gsub('a=1, b=2', '(%w+)=(%w+)', function(k, v) return v .. '=' .. k end)}", "*2\r\n$8\r\n1=a, 2=b\r\n:2\r\n"},
		{"return {string.gsub('abc', '()', function(p) return p end)}", "*2\r\n$7\r\n1a2b3c4\r\n:4\r\n"},
		{"return {string.gsub('abc', 'b', 12)}", "*2\r\n$4\r\na12c\r\n:1\r\n"},
		{"return {string.gsub(12345, 3, 'x')}", "*2\r\n$5\r\n12x45\r\n:1\r\n"},
		{"return {pcall(string.gsub, 'abc', 'b', true)}", "*2\r\n$-1\r\n$55\r\nbad argument #3 to '?' (string/function/table expected)\r\n"},
		{"return {pcall(string.gsub, 'abc', 'b')}", "*2\r\n$-1\r\n$55\r\nbad argument #3 to '?' (string/function/table expected)\r\n"},
		{"return {pcall(string.gsub, 'abc', '(b', '%1')}", "*2\r\n$-1\r\n$18\r\nunfinished capture\r\n"},
		{"return {pcall(string.gsub, 'abc', '(b', 'x')}", "*3\r\n:1\r\n$3\r\naxc\r\n:1\r\n"},
		{"return {pcall(string.gsub, 'abc', 'b)', 'x')}", "*2\r\n$-1\r\n$23\r\ninvalid pattern capture\r\n"},
		{"return {pcall(string.gsub, 'abc', '[b', 'x')}", "*2\r\n$-1\r\n$31\r\nmalformed pattern (missing ']')\r\n"},
		{"return {pcall(string.gsub, 'abc', '%', 'x')}", "*2\r\n$-1\r\n$33\r\nmalformed pattern (ends with '%')\r\n"},
		{"return {pcall(string.gsub, 'abc', '%b', 'x')}", "*2\r\n$-1\r\n$18\r\nunbalanced pattern\r\n"},
		{"return {pcall(string.gsub, 'abc', '%f', 'x')}", "*2\r\n$-1\r\n$33\r\nmissing '[' after '%f' in pattern\r\n"},
		{"return {string.gsub('THE (quick) fox', '%f[%a]%a+', 'W')}", "*2\r\n$7\r\nW (W) W\r\n:3\r\n"},
		{"return {string.gsub('x(a(b)c)y', '%b()', '#')}", "*2\r\n$3\r\nx#y\r\n:1\r\n"},
		{"return {string.gsub('hello  world', '%s+', ' ')}", "*2\r\n$11\r\nhello world\r\n:1\r\n"},
		{"return {string.gsub('a.b.c', '%.', '/')}", "*2\r\n$5\r\na/b/c\r\n:2\r\n"},
		{"return {string.gsub('a1b22c333', '%d+', '#')}", "*2\r\n$6\r\na#b#c#\r\n:3\r\n"},
		{"return {string.gsub('a1b22c333', '[%d]+', '#')}", "*2\r\n$6\r\na#b#c#\r\n:3\r\n"},
		{"return {string.gsub('a1b22c333', '[^%d]', '#')}", "*2\r\n$9\r\n#1#22#333\r\n:3\r\n"},
		{"return {string.gsub('a-b]c', '[]-]', '#')}", "*2\r\n$5\r\na#b#c\r\n:2\r\n"},
		{"return {string.gsub('a-b]c^', '[^]]', '#')}", "*2\r\n$6\r\n###]##\r\n:5\r\n"},
		{"return {string.gsub('abcXYZ', '[a-cX-Y]', '#')}", "*2\r\n$6\r\n#####Z\r\n:5\r\n"},
		{"return {string.gsub('a,b;c', '%p', '')}", "*2\r\n$3\r\nabc\r\n:2\r\n"},
		{"return {string.gsub('aXbYc', '%u', '_')}", "*2\r\n$5\r\na_b_c\r\n:2\r\n"},
		{"return {string.gsub('aXbYc', '%U', '_')}", "*2\r\n$5\r\n_X_Y_\r\n:3\r\n"},
		{"return {string.gsub('aaa bbb', '(a)%1', 'D')}", "*2\r\n$6\r\nDa bbb\r\n:1\r\n"},
		{"return {string.gsub('abab', '(ab)%1', 'D')}", "*2\r\n$1\r\nD\r\n:1\r\n"},
		{"return {pcall(string.gsub, 'abab', '(ab)%2', 'D')}", "*2\r\n$-1\r\n$21\r\ninvalid capture index\r\n"},
		{"return {pcall(string.gsub, 'abab', '%0', 'D')}", "*2\r\n$-1\r\n$21\r\ninvalid capture index\r\n"},
		{"return {string.gsub('a\\0b\\0c', '%z', '0')}", "*2\r\n$5\r\na0b0c\r\n:2\r\n"},
		{"return {string.gsub('a\\0b\\0c', 'b\\0', 'X')}", "*2\r\n$5\r\na\x00X\x00c\r\n:1\r\n"},
		{"return {string.gsub('hello', 'l+', 'L')}", "*2\r\n$4\r\nheLo\r\n:1\r\n"},
		{"return {string.gsub('hello', 'l-o', 'L')}", "*2\r\n$3\r\nheL\r\n:1\r\n"},
		{"return {string.gsub('hello', 'l?o', 'L')}", "*2\r\n$4\r\nhelL\r\n:1\r\n"},
		{"return {string.gsub('hello', 'x?', '.')}", "*2\r\n$11\r\n.h.e.l.l.o.\r\n:6\r\n"},
		{"return {('abc'):gsub('b', 'B')}", "*2\r\n$3\r\naBc\r\n:1\r\n"},
		{"return {string.gsub('abc', '%a', '%%%0')}", "*2\r\n$6\r\n%a%b%c\r\n:3\r\n"},
		{"return {string.gsub('hello', '', '')}", "*2\r\n$5\r\nhello\r\n:6\r\n"},
		{"return {string.gsub('', '', 'x')}", "*2\r\n$1\r\nx\r\n:1\r\n"},
		{"return {string.gsub('', 'a*', 'x')}", "*2\r\n$1\r\nx\r\n:1\r\n"},
		{"return {string.gsub('abc', 'b*', '-')}", "*2\r\n$6\r\n-a--c-\r\n:4\r\n"},
		{"return {string.gsub('Hello', '%f[%l]', '|')}", "*2\r\n$6\r\nH|ello\r\n:1\r\n"},
		{"return {string.gsub('Hello', '%f[%z]', '|')}", "*2\r\n$6\r\nHello|\r\n:1\r\n"},
		{"return {string.gsub('Hello', '%f[^%z]', '|')}", "*2\r\n$6\r\n|Hello\r\n:1\r\n"},
		{"return {string.gsub('abc', '.', {a = 1, b = 2.5})}", "*2\r\n$5\r\n12.5c\r\n:3\r\n"},
		{"return {pcall(string.gsub, ('x'):rep(40), ('(x)'):rep(33), '')}", "*2\r\n$-1\r\n$17\r\ntoo many captures\r\n"},
		{"return {string.gsub('abc', '(a)(b)(c)', '%3%2%1')}", "*2\r\n$3\r\ncba\r\n:1\r\n"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			require.Equal(t, tc.want, runScript(t, e, &fakeHost{}, 2, tc.body, nil, nil))
		})
	}
}

// TestFind: string.find, match and gmatch as Lua 5.1 answers, each reply redis-server
// 7.0.15's for the same script: init positions, plain searches, anchors (which gmatch takes
// as a plain '^'), position captures, patterns with a NUL, and the error texts.
func TestFind(t *testing.T) {
	e := New()
	for _, tc := range []struct{ body, want string }{
		{"return {string.find('hello', 'l')}", "*2\r\n:3\r\n:3\r\n"},
		{"return {string.find('hello', 'l', 4)}", "*2\r\n:4\r\n:4\r\n"},
		{"return {string.find('hello', 'l', -2)}", "*2\r\n:4\r\n:4\r\n"},
		{"return {string.find('hello', 'l', 10)}", "*0\r\n"},
		{"return {string.find('hello', '', 10)}", "*2\r\n:6\r\n:5\r\n"},
		{"return {string.find('hello', '', 6)}", "*2\r\n:6\r\n:5\r\n"},
		{"return {string.find('hello', 'l+')}", "*2\r\n:3\r\n:4\r\n"},
		{"return {string.find('hello', '(l)(l)')}", "*4\r\n:3\r\n:4\r\n$1\r\nl\r\n$1\r\nl\r\n"},
		{"return {string.find('hello', '()ll()')}", "*4\r\n:3\r\n:4\r\n:3\r\n:5\r\n"},
		{"return {string.find('a.b', '.', 1, true)}", "*2\r\n:2\r\n:2\r\n"},
		{"return {string.find('a+b', '+', 1, true)}", "*2\r\n:2\r\n:2\r\n"},
		{"return {string.find('a+b', 'a+b')}", "*0\r\n"},
		{"return {string.find('hello', '^h')}", "*2\r\n:1\r\n:1\r\n"},
		{"return {string.find('hello', '^e')}", "*0\r\n"},
		{"return {string.find('hello', 'o$')}", "*2\r\n:5\r\n:5\r\n"},
		{"return {string.find('hello', 'l$')}", "*0\r\n"},
		{"return {string.find('he$llo', 'e$l')}", "*2\r\n:2\r\n:4\r\n"},
		{"return {string.find('a^b', '^', 2)}", "*2\r\n:2\r\n:1\r\n"},
		{"return {string.find('a^b', 'a^')}", "*2\r\n:1\r\n:2\r\n"},
		{"return {pcall(string.find, 'abc', '%')}", "*2\r\n$-1\r\n$33\r\nmalformed pattern (ends with '%')\r\n"},
		{"return {pcall(string.find, 'abc', '[a')}", "*2\r\n$-1\r\n$31\r\nmalformed pattern (missing ']')\r\n"},
		{"return {pcall(string.find, 'abc', '[a%')}", "*2\r\n$-1\r\n$31\r\nmalformed pattern (missing ']')\r\n"},
		{"return {string.find('abc', 'b\\0zzz')}", "*0\r\n"},
		{"return {string.find('ab\\0c', 'b\\0c')}", "*2\r\n:2\r\n:4\r\n"},
		{"return {string.match('hello world', '%w+')}", "*1\r\n$5\r\nhello\r\n"},
		{"return {string.match('hello world', '(%w+) (%w+)')}", "*2\r\n$5\r\nhello\r\n$5\r\nworld\r\n"},
		{"return {string.match('hello world', 'o', 6)}", "*1\r\n$1\r\no\r\n"},
		{"return {string.match('key=val', '(%w+)=(%w*)')}", "*2\r\n$3\r\nkey\r\n$3\r\nval\r\n"},
		{"return {string.match('  trim  ', '^%s*(.-)%s*$')}", "*1\r\n$4\r\ntrim\r\n"},
		{"return {string.match('abc', '()')}", "*1\r\n:1\r\n"},
		{"return {string.match('abc', 'x')}", "*0\r\n"},
		{"return {pcall(string.match, 'abc', '(a')}", "*2\r\n$-1\r\n$18\r\nunfinished capture\r\n"},
		{"return {pcall(string.match, 'abc', '%1')}", "*2\r\n$-1\r\n$21\r\ninvalid capture index\r\n"},
		{"local t = {} for w in string.gmatch('one two three', '%a+') do t[#t+1] = w end return t", "*3\r\n$3\r\none\r\n$3\r\ntwo\r\n$5\r\nthree\r\n"},
		{"local t = {} for k, v in string.gmatch('a=1, b=2', '(%w+)=(%w+)') do t[#t+1] = k .. v end return t", "*2\r\n$2\r\na1\r\n$2\r\nb2\r\n"},
		{"local t = {} for w in string.gmatch('abc', '') do t[#t+1] = 'x' end return #t", ":4\r\n"},
		{"local t = {} for w in string.gmatch('^a^a', '^a') do t[#t+1] = w end return t", "*2\r\n$2\r\n^a\r\n$2\r\n^a\r\n"},
		{"local t = {} for p in string.gmatch('abc', '()') do t[#t+1] = p end return t", "*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n"},
		{"return {pcall(string.gmatch, 'abc')}", "*2\r\n$-1\r\n$54\r\nbad argument #2 to '?' (string expected, got no value)\r\n"},
		{"local t = {} for a in ('x1y22'):gmatch('%d*') do t[#t+1] = '[' .. a .. ']' end return t", "*5\r\n$2\r\n[]\r\n$3\r\n[1]\r\n$2\r\n[]\r\n$4\r\n[22]\r\n$2\r\n[]\r\n"},
		{"return {string.find('x', '[%a-z]')}", "*2\r\n:1\r\n:1\r\n"},
		{"return {string.find('-', '[%a-z]')}", "*2\r\n:1\r\n:1\r\n"},
		{"return {string.find('b', '[a-]')}", "*0\r\n"},
		{"return {string.find('-', '[a-]')}", "*2\r\n:1\r\n:1\r\n"},
		{"return {string.find('\\200', '%a')}", "*0\r\n"},
		{"return {string.find('\\200', '%W')}", "*2\r\n:1\r\n:1\r\n"},
		{"return {string.find('\\11', '%s')}", "*2\r\n:1\r\n:1\r\n"},
		{"return {string.find('aaab', 'a-b')}", "*2\r\n:1\r\n:4\r\n"},
		{"return {string.find('[[x]]', '%[(.-)%]')}", "*3\r\n:1\r\n:4\r\n$2\r\n[x\r\n"},
		{"return {string.match('2024-01-02', '(%d+)-(%d+)-(%d+)')}", "*3\r\n$4\r\n2024\r\n$2\r\n01\r\n$2\r\n02\r\n"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			require.Equal(t, tc.want, runScript(t, e, &fakeHost{}, 2, tc.body, nil, nil))
		})
	}
}

// TestLongGsub: string.gsub is linear in its subject. gopher-lua's spliced each
// replacement into a copy of the whole string: 1e5 characters took 21 s and allocated
// 20 GB, 1e6 would take half an hour; Redis answers 1e6 at once. What a run allocates is
// the measure of its work that does not depend on the machine or the race detector (2.1 MB
// for the first, the string.rep and the result); the time is checked too, far above what
// it takes.
func TestLongGsub(t *testing.T) {
	e := New()
	for _, tc := range []struct {
		body, want string
		alloc      uint64 // the most it may allocate: a few bytes per character
	}{
		{"return #string.gsub(string.rep('a', 1e6), 'a', 'b')", ":1000000\r\n", 8 << 20},
		{"local s, n = string.gsub(string.rep('ab', 5e5), '(a)(b)', '%2%1') return {#s, n}", "*2\r\n:1000000\r\n:500000\r\n", 8 << 20},
		{"return select(2, string.gsub(string.rep('a', 1e6), '', ''))", ":1000001\r\n", 8 << 20},
		{"return #string.gsub(string.rep('a', 1e6), '%w', {a = 'bc'})", ":2000000\r\n", 32 << 20},
		{"local n = 0 local s = string.gsub(string.rep('a', 1e5), 'a', function(c) n = n + 1 return 'b' end) return {#s, n}", "*2\r\n:100000\r\n:100000\r\n", 8 << 20},
	} {
		t.Run(tc.body, func(t *testing.T) { requireCheap(t, e, tc.body, tc.want, tc.alloc) })
	}
}

// requireCheap runs body, wants its reply, and that it allocated less than alloc and used
// far less than 10 s of the process's CPU (each of these scripts takes 30 to 200 ms; 3 s under
// -race). CPU time, not the clock: other processes on a busy machine stretch the one, not
// the other, while the quadratic gsub this guards against took 21 s of CPU at 1e5.
func requireCheap(t *testing.T, e *Engine, body, want string, alloc uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := processCPU(t)
	require.Equal(t, want, runScript(t, e, &fakeHost{}, 2, body, nil, nil))
	took := processCPU(t) - start
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, alloc)
	require.Less(t, took, 10*time.Second)
}

// processCPU is the CPU time the test process has used, user and system.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLongFind: string.find, match and gmatch on a subject of 1e6 characters cost what
// Redis's do. gopher-lua's gmatch found all the matches before the loop asked for its
// first, a million records for a loop that stops at the third (861 ms, now 2.4 ms); its
// find of 'a*b' took 2.4 s and its match of '^(.*)$' 0.9 s (now 15 and 6 ms).
func TestLongFind(t *testing.T) {
	e := New()
	for _, tc := range []struct {
		body, want string
		alloc      uint64
	}{
		{"local n = 0 for w in string.gmatch(string.rep('a', 1e6), 'a') do n = n + 1 if n == 3 then break end end return n", ":3\r\n", 2 << 20},
		{"return {string.find(string.rep('a', 1e6) .. 'b', 'a*b')}", "*2\r\n:1\r\n:1000001\r\n", 4 << 20},
		{"return {string.find(string.rep('a', 1e6) .. 'b', '[ab]+')}", "*2\r\n:1\r\n:1000001\r\n", 4 << 20},
		{"return {string.find(string.rep('a', 1e6), 'b')}", "*0\r\n", 2 << 20},
		{"return #string.match(string.rep('a', 1e6), '^(.*)$')", ":1000000\r\n", 2 << 20},
		{"return string.match(string.rep('a', 1e6), '()$')", ":1000001\r\n", 2 << 20},
		{"local n = 0 for w in string.gmatch(string.rep('a ', 5e4), '%a+') do n = n + 1 end return n", ":50000\r\n", 8 << 20},
	} {
		t.Run(tc.body, func(t *testing.T) { requireCheap(t, e, tc.body, tc.want, tc.alloc) })
	}
}

// BenchmarkFind: string.find of a pattern in a subject of 1e4 to 1e6 characters, matched
// at its end.
func BenchmarkFind(b *testing.B) {
	for _, n := range []int{1e4, 1e5, 1e6} {
		b.Run(itoa(n), func(b *testing.B) {
			e := New()
			s, err := e.Load([]byte("return string.find(ARGV[1], '[ab]+c')"))
			require.NoError(b, err)
			call := &Call{Host: &fakeHost{}, Proto: 2, Args: [][]byte{[]byte(strings.Repeat("a", n) + "c")}}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Run(nil, s, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGsub: string.gsub over a subject of 1e4 to 1e6 characters, every character a
// match: the time per character stays the same.
func BenchmarkGsub(b *testing.B) {
	for _, n := range []int{1e4, 1e5, 1e6} {
		b.Run(itoa(n), func(b *testing.B) {
			e := New()
			s, err := e.Load([]byte("return #string.gsub(ARGV[1], 'a', 'b')"))
			require.NoError(b, err)
			call := &Call{Host: &fakeHost{}, Proto: 2, Args: [][]byte{[]byte(strings.Repeat("a", n))}}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Run(nil, s, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzPatterns runs find, match, gmatch and gsub on any subject and pattern: each ends
// with a result or Lua 5.1's error, never a Go panic (which gopher-lua would report as a
// "runtime error"), and within its work bound (a kill after 1 s).
func FuzzPatterns(f *testing.F) {
	for _, seed := range [][2]string{
		{"hello world", "(%w+) (%w+)"}, {"a(b)c", "%b()"}, {"THE (quick) fox", "%f[%a]%a+"},
		{"abc", "[%a-z]"}, {"abc", "%"}, {"abc", "[a"}, {"abc", "(()"}, {"aaa", "(a)%1"}, {"a\x00b", "%z"},
		{"abc", "[]]"}, {"abc", "[^]"}, {"x", "%f"}, {"ab", "^(a-)(b?)$"},
	} {
		f.Add(seed[0], seed[1])
	}
	e := New()
	s, err := e.Load([]byte(`local s, p = ARGV[1], ARGV[2]
local r = {pcall(string.find, s, p)}
r[#r + 1] = select(2, pcall(string.match, s, p, 2))
r[#r + 1] = select(2, pcall(string.gsub, s, p, '<%0>'))
r[#r + 1] = select(2, pcall(string.gsub, s, p, function(...) return select('#', ...) end, 3))
r[#r + 1] = select(2, pcall(function() local n = 0 for a in s:gmatch(p) do n = n + 1 if n > 100 then break end end return n end))
return r`))
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, subject, pattern string) {
		h := &killHost{}
		call := &Call{Host: h, Proto: 2, Args: [][]byte{[]byte(subject), []byte(pattern)}, BusyAfter: time.Second}
		h.call = call
		out, err := e.Run(nil, s, call)
		require.NoError(t, err)
		require.NotContains(t, string(out), "runtime error")
	})
}
