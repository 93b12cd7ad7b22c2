package server

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/redistest"
)

// The struct and cmsgpack libraries against a real redis-server: each script's reply must
// be the same bytes, in RESP2 and RESP3. Packed bytes come back as they are (a bulk string),
// unpacked values as numbers, strings and tables; the errors with their texts. Maps of more
// than one key are left out where their bytes would show: their pairs come in gopher-lua's
// order, not C Lua's (scripting/cmsgpack.go).

// structScripts exercise struct.pack, unpack and size.
var structScripts = []string{
	// Every option, both orders, alignment.
	"return struct.pack('bBhHlLTiI', -1, 255, -2, 65535, -3, 7, 8, -4, 9)",
	"return struct.pack('>bBhHlLTiI', -1, 255, -2, 65535, -3, 7, 8, -4, 9)",
	"return {struct.unpack('bBhHlLTiI', struct.pack('bBhHlLTiI', -1, 255, -2, 65535, -3, 7, 8, -4, 9))}",
	"return {struct.unpack('>bBhHlLTiI', struct.pack('>bBhHlLTiI', -1, 255, -2, 65535, -3, 7, 8, -4, 9))}",
	"return struct.pack('<i1i2i3i5i7i8I16', 1, -2, 3, -4, 5, -6, 7)",
	"return struct.pack('>i16', -2)", "return struct.pack('<i32', -1)", "return struct.pack('i0', 5)",
	"return {struct.unpack('>i9', '\\0\\0\\0\\0\\0\\0\\0\\0\\64')}",
	"return {struct.unpack('>i9', '\\0\\0\\0\\0\\0\\0\\0\\0\\128')}",
	"return {struct.unpack('>i16', string.rep('\\255', 16))}", "return {struct.unpack('<I3', '\\1\\2\\3')}",
	"return {struct.unpack('>i3', '\\255\\255\\254')}", "return {struct.unpack('>i0', '')}",
	"return struct.pack('!bd', 1, 2)", "return struct.pack('!4bd', 1, 2)", "return struct.pack('!2bi', 1, 2)",
	"return struct.pack('!i3bi3', 1, 2, 3)", "return {struct.unpack('!i3bi3', 'abcdefghijklm')}",
	"return {struct.unpack('>!4hi', '\\0\\1\\0\\0\\0\\0\\0\\2')}", "return struct.pack('!2bT', 1, 2)",
	"return struct.pack('b x b', 1, 2)", "return struct.pack('<h>h<h', 1, 2, 3)",
	// Integers at their edges: C's casts of doubles.
	"return struct.pack('>L', 0/0)", "return struct.pack('>L', 2^64)", "return struct.pack('>L', 1/0)",
	"return struct.pack('>L', -1/0)", "return struct.pack('>L', 2^63)", "return struct.pack('>L', 2^63 + 2^11)",
	"return struct.pack('>L', 1e30)", "return struct.pack('>l', -1e30)", "return struct.pack('>L', -1.5)",
	"return struct.pack('>L', 2.7)", "return struct.pack('>i', 2^31)", "return struct.pack('>i', -2^31 - 1)",
	"return struct.pack('>l', 2^53 + 1)", "return struct.pack('>B', 256)", "return struct.pack('>b', -129)",
	"return {struct.unpack('<L', '\\255\\255\\255\\255\\255\\255\\255\\127')}",
	"return tostring(struct.unpack('>L', '\\255\\255\\255\\255\\255\\255\\255\\255'))",
	"return tostring(struct.unpack('>l', '\\128\\0\\0\\0\\0\\0\\0\\0'))",
	"return tostring(struct.unpack('>I16', string.rep('\\255', 16)))",
	// Floats.
	"return struct.pack('>f', 0.1)", "return struct.pack('>d', 0.1)", "return struct.pack('<fd', 1/0, -1/0)",
	"return struct.pack('>d', 0/0)", "return struct.pack('>f', 0/0)", "return struct.pack('>f', 1e40)",
	"return struct.pack('>d', -0.0)", "return struct.pack('>f', 2^-149)",
	"return tostring(struct.unpack('>f', struct.pack('>f', 0.1)))", "return tostring(struct.unpack('<d', struct.pack('<d', 1/3)))",
	"return tostring(struct.unpack('>d', struct.pack('>d', 0/0)))", "return tostring(struct.unpack('>f', struct.pack('>f', 1/0)))",
	// Strings.
	"return struct.pack('c5', 'hello world')", "return struct.pack('c0', 'whole')", "return struct.pack('s', 'a\\0b')",
	"return struct.pack('c0', 12.5)", "return struct.pack('>Ic0', 5, 'hello')", "return struct.pack('c', 'xyz')",
	"return {struct.unpack('>Ic0', struct.pack('>Ic0', 5, 'hello'))}", "return {struct.unpack('bc0', '\\0abc')}",
	"return {struct.unpack('c1c0', '2abcdef')}", "return {struct.unpack('s', 'ab\\0cd')}",
	"return {struct.unpack('ss', 'ab\\0cd\\0', 2)}", "return {struct.unpack('c3', 'abcdef', 4)}",
	"return {struct.unpack('s', struct.pack('s', string.rep('x', 300)))}",
	// Numbers as strings, strings as numbers; the position.
	"return struct.pack('b', '0x10')", "return struct.pack('b', ' 7 ')", "return struct.pack('>h', '1e3')",
	"return {struct.unpack('b', 'abc', 3)}", "return {struct.unpack('b', 'abc', 1.9)}", "return {struct.unpack('b', 'abc', '2')}",
	"return {struct.unpack('', '')}", "return {struct.unpack('', 'a', 5)}", "return {struct.unpack('', 'a', -1)}",
	"return {struct.unpack('b', 'a', 1, 2, 3)}", "return struct.pack('b\\0=', 1)", "return struct.pack(12, 3)",
	// Sizes.
	"return struct.size('bBhHlLTiI')", "return struct.size('!bd')", "return struct.size('!4bd')", "return struct.size('!8bd!2bd')",
	"return struct.size('i3')", "return struct.size('q')", "return struct.size(' x')", "return struct.size('c2147483647')",
	"return struct.size('!')", "return struct.size('!16')", "return struct.size('!i')", "return struct.size('>>')",
	"return struct.size('b\\0q=')", "return struct.size('c10i')",
	// Errors.
	"return struct.size('s')", "return struct.size('c0')", "return struct.size('s0')", "return struct.size('i33')",
	"return struct.size('i99999999999')", "return struct.size('!3')", "return struct.size('!0')", "return struct.size('=')",
	"return struct.size('\\200')", "return struct.size()", "return struct.size({})",
	"return struct.pack('q', 1)", "return struct.pack('=')", "return struct.pack('\\200')", "return struct.pack()",
	"return struct.pack('i')", "return struct.pack('i', 'x')", "return struct.pack('i', {})", "return struct.pack('bi', 1)",
	"return struct.pack('c5', 'abc')", "return struct.pack('bc5', 1, 'abc')", "return struct.pack('c2147483648', 'x')",
	"return struct.pack('s', nil)", "return struct.pack('s')", "return struct.pack('bc0', 1)", "return struct.pack('bd')",
	"return {pcall(struct.pack, 'i')}", "return struct.pack('i', 1, nil)", "return struct.pack('ii', nil)", "return struct.pack('!5i', 1)", "return struct.pack('i40', 1)",
	"return struct.unpack('q', 'a')", "return struct.unpack('>I4', 'abc')", "return struct.unpack('s', 'abc')",
	"return struct.unpack('c0', 'abc')", "return struct.unpack('c0', '1')", "return struct.unpack('c1c0', 'xabcdef')",
	"return struct.unpack('bc0', '\\255abc')", "return struct.unpack('Bc0', '\\255abc')", "return struct.unpack('c0', 'abc', 1, 2)",
	"return struct.unpack('dc0', struct.pack('d', 0/0) .. 'abc')", "return struct.unpack('dc0', struct.pack('d', 2^64) .. 'abc')",
	"return struct.unpack('i', 'abcd', 2)", "return struct.unpack('i', 'abcd', 0)", "return struct.unpack('i', 'abcd', -5)",
	"return struct.unpack('b', 'abc', 2^63)", "return struct.unpack('b', 'abc', 2^64)", "return struct.unpack('b', 'abc', -1)",
	"return struct.unpack('c0', 'abc', 'x')", "return struct.unpack('x', '')", "return struct.unpack(' ', 'a', 5)",
	"return struct.unpack('b')", "return struct.unpack()", "return struct.unpack('b', {})", "return struct.unpack('i99', 'x')",
	"return select('#', struct.unpack(string.rep('b', 7997), string.rep('a', 7997)))",
	"return select('#', struct.unpack(string.rep('b', 7998), string.rep('a', 7998)))",
	"return select('#', struct.unpack(string.rep('b', 7996), string.rep('a', 7996), 1))",
	"return select('#', struct.unpack(string.rep('b', 7997), string.rep('a', 7997), 1))",
	"return select('#', struct.unpack(string.rep('b', 7997) .. 'x', string.rep('a', 7998)))",
	// Called through pcall, as a Lua value.
	"return {pcall(struct.pack, 'q')}", "return {pcall(struct.unpack, 's', 'x')}", "return {pcall(struct.size, 'i33')}",
	"return {pcall(struct.pack, 'c5', 'x')}", "return {pcall(struct.unpack, 'c0', 'x')}",
	"struct.pack = 1", "return type(struct)", "return struct.x",
}

// msgpackScripts exercise cmsgpack.pack, unpack, unpack_one and unpack_limit.
var msgpackScripts = []string{
	// Integers in every encoding, at each edge.
	"return cmsgpack.pack(0, 1, -1, 127, 128, -32, -33, 255, 256, 65535, 65536, -128, -129, -32768, -32769)",
	"return cmsgpack.pack(2^32 - 1, 2^32, -2^31, -2^31 - 1, 2^31, 2^53, -2^53, 2^63, -2^63, 2^64, -0.0)",
	"return {cmsgpack.unpack(cmsgpack.pack(0, 1, -1, 127, 128, -32, -33, 255, 256, 65535, 65536, -128, -129, -32768, -32769))}",
	"return {cmsgpack.unpack(cmsgpack.pack(2^32 - 1, 2^32, -2^31, -2^31 - 1, 2^31, 2^53, -2^53, -2^63, -0.0))}",
	"local t = {} for _, v in ipairs({cmsgpack.unpack(cmsgpack.pack(2^53, 2^63, -2^63, 2^64, 1e300))}) do t[#t + 1] = tostring(v) end return t",
	// Floats and doubles.
	"return cmsgpack.pack(0.5, 0.1, 1/0, -1/0, 0/0, -(0/0), 1e300, 3.4028234663852886e38, 1e-45, 1.5)",
	"local t = {} for _, v in ipairs({cmsgpack.unpack(cmsgpack.pack(0.5, 0.1, 1/0, -1/0, 1e300, 1.5, 1/3))}) do t[#t + 1] = tostring(v) end return t",
	"return tostring(cmsgpack.unpack(cmsgpack.pack(0/0)))",
	"return tostring(cmsgpack.unpack('\\202\\127\\192\\0\\0'))",
	"return tostring(cmsgpack.unpack('\\203\\127\\240\\0\\0\\0\\0\\0\\0'))",
	// Strings at each header's edge.
	"return cmsgpack.pack('', 'a', string.rep('x', 31), string.rep('y', 32))",
	"return #cmsgpack.pack(string.rep('x', 255)) .. ' ' .. #cmsgpack.pack(string.rep('x', 256))",
	"return #cmsgpack.pack(string.rep('x', 65535)) .. ' ' .. #cmsgpack.pack(string.rep('x', 65536))",
	"return cmsgpack.pack(string.rep('x', 255)):sub(1, 4)", "return cmsgpack.pack(string.rep('x', 256)):sub(1, 4)",
	"return cmsgpack.pack(string.rep('x', 65535)):sub(1, 4)", "return cmsgpack.pack(string.rep('x', 65536)):sub(1, 6)",
	"for _, n in ipairs({0, 31, 32, 255, 256, 65535, 65536}) do local s = string.rep('z', n) if cmsgpack.unpack(cmsgpack.pack(s)) ~= s then return n end end return 'ok'",
	"return cmsgpack.pack('a\\0b', 12.5 .. '')",
	// Other types.
	"return cmsgpack.pack(true, false, nil, cjson.null, redis.call, coroutine.create(function() end))",
	"return cmsgpack.pack(nil)", "return {cmsgpack.unpack('\\192\\194\\195')}", "return {cmsgpack.unpack('\\195\\192\\1')}",
	// Tables: arrays, maps of one key, empty, nested, sparse, nesting limit.
	"return cmsgpack.pack({}, {1, 2, 3}, {a = 1}, {[1] = 1, [3] = 3}, {[0] = 'z'}, {[1.5] = 1}, {[-1] = 1})",
	"return cmsgpack.pack({1, nil, 3})", "return cmsgpack.pack({nil, nil, 3})", "return cmsgpack.pack({[2^31] = 1})",
	"return cmsgpack.pack({[2^31 - 1] = 1})", "return cmsgpack.pack({{}, {{}}, {{{1}}}})",
	"return cmsgpack.pack({[true] = false})", "return cmsgpack.pack({[{1}] = {2}})", "return cmsgpack.pack({x = {y = {z = 'deep'}}})",
	"local t = {} for i = 1, 15 do t[i] = i end return cmsgpack.pack(t)",
	"local t = {} for i = 1, 16 do t[i] = i end return cmsgpack.pack(t)",
	"local t = {} for i = 1, 65535 do t[i] = i % 7 end return #cmsgpack.pack(t) .. cmsgpack.pack(t):sub(1, 3)",
	"local t = {} for i = 1, 65536 do t[i] = true end return #cmsgpack.pack(t) .. cmsgpack.pack(t):sub(1, 5)",
	"local t = {} t[1] = t return cmsgpack.pack(t)", "local t = {} t.a = t return cmsgpack.pack(t)",
	"local t = {} for i = 1, 20 do t = {t} end return cmsgpack.pack(t)",
	"return cmsgpack.unpack(cmsgpack.pack({1, 'two', {3.5, true}, {a = false}}))",
	"local t = cmsgpack.unpack(cmsgpack.pack({a = 1, b = 'x', c = {1, 2}, [5] = 5})) return {t.a, t.b, t.c[2], t[5]}",
	"local t = cmsgpack.unpack(cmsgpack.pack({[1] = 'a', [2] = 'b', [4] = 'd'})) return {t[1], t[2], t[3], t[4]}",
	"local t = {} for k, v in pairs(cmsgpack.unpack(cmsgpack.pack(cmsgpack))) do t[#t + 1] = k end table.sort(t) return t",
	"return cmsgpack.pack(KEYS, ARGV)",
	"return {cmsgpack.unpack('\\146\\1\\192')}", "return {cmsgpack.unpack('\\147\\1\\192\\3')}",
	"return {cmsgpack.unpack('\\220\\0\\2\\1\\2')}", "return {cmsgpack.unpack('\\221\\0\\0\\0\\1\\1')}",
	"return cmsgpack.unpack('\\222\\0\\1\\161a\\1').a", "return cmsgpack.unpack('\\223\\0\\0\\0\\1\\1\\2')[1]",
	"return cmsgpack.unpack('\\129\\1\\192')[1]", "return type(cmsgpack.unpack('\\128'))", "return #cmsgpack.unpack('\\144')",
	"return {cmsgpack.unpack('\\217\\3abc\\218\\0\\1d\\219\\0\\0\\0\\2ef')}",
	// Raw integers decoded.
	"return {cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255')}",
	"return tostring(cmsgpack.unpack('\\207\\128\\0\\0\\0\\0\\0\\0\\0'))",
	"return tostring(cmsgpack.unpack('\\211\\128\\0\\0\\0\\0\\0\\0\\0'))",
	"return {cmsgpack.unpack('\\204\\255\\205\\255\\255\\206\\255\\255\\255\\255\\208\\128\\209\\128\\0\\210\\128\\0\\0\\0')}",
	"return {cmsgpack.unpack('\\224\\255\\127\\0')}",
	// unpack_one and unpack_limit.
	"return {cmsgpack.unpack('')}", "return {cmsgpack.unpack_one('')}", "return {cmsgpack.unpack_one('\\1\\2\\3')}",
	"return {cmsgpack.unpack_one('\\1\\2\\3', 2)}", "return {cmsgpack.unpack_one('\\1\\2\\3', 3)}",
	"return {cmsgpack.unpack_one('\\1\\2\\3', 1.7)}", "return {cmsgpack.unpack_one('\\1\\2\\3', '1')}",
	"return {cmsgpack.unpack_limit('\\1\\2\\3', 2)}", "return {cmsgpack.unpack_limit('\\1\\2\\3', 0)}",
	"return {cmsgpack.unpack_limit('\\1\\2\\3', 2, 1)}", "return {cmsgpack.unpack_limit('\\1\\2\\3', 2^31)}",
	"return {cmsgpack.unpack_limit('\\1\\2\\3', 2^32)}", "return {cmsgpack.unpack_limit('\\1\\2\\3', 0, 1)}",
	"return {cmsgpack.unpack(123)}", "return {cmsgpack.unpack_one(12, 1)}",
	"local s, out, off = cmsgpack.pack(1, 'two', {3}), {}, 0 while off >= 0 do local v off, v = cmsgpack.unpack_one(s, off) out[#out + 1] = off end return out",
	// Errors.
	"return cmsgpack.pack()", "return {cmsgpack.unpack('\\193')}", "return {cmsgpack.unpack('\\196\\1a')}",
	"return {cmsgpack.unpack('\\199\\1\\1a')}", "return {cmsgpack.unpack('\\212\\1\\1')}", "return {cmsgpack.unpack('\\205\\1')}",
	"return {cmsgpack.unpack('\\145')}", "return {cmsgpack.unpack('\\129\\1')}", "return {cmsgpack.unpack('\\165abc')}",
	"return {cmsgpack.unpack('\\219\\255\\255\\255\\255ab')}", "return {cmsgpack.unpack('\\221\\255\\255\\255\\255\\1')}",
	"return {cmsgpack.unpack('\\1\\2\\193')}", "return {cmsgpack.unpack('\\146\\1\\193')}",
	"return cmsgpack.unpack('\\129\\192\\1')", "return cmsgpack.unpack('\\129\\203\\255\\248\\0\\0\\0\\0\\0\\0\\1')",
	"return cmsgpack.unpack('\\129\\192')", "return cmsgpack.unpack('\\130\\1\\1\\192\\1')",
	"return {cmsgpack.unpack_one('\\1\\2\\3', 4)}", "return {cmsgpack.unpack_one('\\1\\2\\3', -1)}",
	"return {cmsgpack.unpack_limit('\\1\\2\\3', -1)}", "return {cmsgpack.unpack_limit('\\1\\2\\3', -1, 5)}",
	"return {cmsgpack.unpack_limit('\\1\\2\\3')}", "return {cmsgpack.unpack_limit('\\1\\2\\3', 'x')}",
	"return {cmsgpack.unpack_one('\\1\\2\\3', 2^63)}", "return {cmsgpack.unpack_one('\\1\\2\\3', 2^31)}",
	"return {cmsgpack.unpack_one('\\1\\2\\3', 2^32 + 1)}", "return {cmsgpack.unpack_one('\\1', 'x')}",
	"return {cmsgpack.unpack()}", "return {cmsgpack.unpack({})}", "return {cmsgpack.unpack_one()}", "return {cmsgpack.unpack_limit()}",
	"return select('#', cmsgpack.unpack(string.rep('\\1', 7999)))",
	"return select('#', cmsgpack.unpack(string.rep('\\1', 8000)))",
	"return select('#', cmsgpack.unpack(string.rep('\\1', 7998), 1))",
	"return select('#', cmsgpack.unpack(string.rep('\\1', 7999), 1))",
	"return select('#', cmsgpack.unpack_limit(string.rep('\\1', 7998), 7998))",
	"return select('#', cmsgpack.unpack_limit(string.rep('\\1', 7999), 7999))",
	"return select('#', cmsgpack.unpack_limit(string.rep('\\1', 8000), 8000))",
	"return type(cmsgpack.unpack(string.rep('\\145', 3999) .. '\\1'))",
	"return type(cmsgpack.unpack(string.rep('\\145', 4000) .. '\\1'))",
	"return type(cmsgpack.unpack(string.rep('\\129\\1', 3998) .. '\\1'))",
	"return type(cmsgpack.unpack(string.rep('\\129\\1', 4000) .. '\\1'))",
	"return type(cmsgpack.unpack(string.rep('\\129\\145', 2000) .. '\\1'))",
	"local t = {} for i = 1, 4000 do t[i] = i end return #cmsgpack.pack(unpack(t))",
	"local t = {} for i = 1, 4001 do t[i] = i end return #cmsgpack.pack(unpack(t))",
	"local t = {} for i = 1, 3999 do t[i] = {i} end return #cmsgpack.pack(unpack(t))",
	"local t = {} for i = 1, 4000 do t[i] = {i} end return #cmsgpack.pack(unpack(t))",
	"local t = {} for i = 1, 3990 do t[i] = {a = {i}} end return #cmsgpack.pack(unpack(t))",
	"local t = {} for i = 1, 3995 do t[i] = {a = {i}} end return #cmsgpack.pack(unpack(t))",
	"return {pcall(cmsgpack.unpack, '\\193')}", "return {pcall(cmsgpack.unpack, '\\129\\192\\1')}", "return {pcall(cmsgpack.pack)}",
	"return {pcall(cmsgpack.unpack_limit, 'x', -1)}",
	"cmsgpack.pack = 1", "return cmsgpack._NAME", "return cmsgpack._VERSION", "return cmsgpack._COPYRIGHT",
	"return cmsgpack._DESCRIPTION", "return type(cmsgpack_safe)", "return cmsgpack.nosuch",
}

func TestDifferentialStructMsgpack(t *testing.T) {
	scripts := append(append([]string{}, structScripts...), msgpackScripts...)
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			rs := redistest.Start(t)
			ts := startServer(t, func(c *Config) { c.Now = nil })
			want, got := difftest.Dial(t, rs.Addr, proto), difftest.Dial(t, ts.addr, proto)
			var cmds []diffCmd
			for _, body := range scripts {
				cmds = append(cmds, cmd("EVAL", body, "1", "k0", "argv1"))
			}
			wants, gots := want.Pipeline(t, cmds), got.Pipeline(t, cmds)
			for i, body := range scripts {
				if wants[i] != gots[i] {
					t.Errorf("%s\nredis:     %q\nthrottled: %q", body, clip(wants[i]), clip(gots[i]))
				}
			}
		})
	}
}

// clip shortens a long reply for a failure's message.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "...(" + strconv.Itoa(len(s)) + " bytes)"
	}
	return s
}

// genLibScript draws a random script of struct and cmsgpack calls: packs of random values
// and formats read back, random bytes unpacked, packed values stored in a key and read
// from it. Maps have one key at most where their bytes show.
func genLibScript(r *rand.Rand) diffCmd {
	var body string
	switch r.IntN(8) {
	case 0, 1:
		format, args := diffStructFormat(r)
		body = "local s = struct.pack(" + strings.Join(append([]string{luaQuote(format)}, args...), ", ") + ")\n" +
			"local r = {struct.unpack(" + luaQuote(format) + ", s)}\n" +
			"for i = 1, #r do r[i] = tostring(r[i]) end\n" +
			"return {s, r, pcall(struct.size, " + luaQuote(format) + ")}"
	case 2:
		format, _ := diffStructFormat(r)
		body = "return {pcall(struct.unpack, " + luaQuote(format) + ", " + luaQuote(diffBytes(r)) + ", " + difftest.Pick(r, "1", "2", "0", "-1", "nil", "5") + ")}"
	case 3, 4:
		var vals []string
		for range 1 + r.IntN(4) {
			vals = append(vals, diffLuaValue(r, 0))
		}
		body = "local s = cmsgpack.pack(" + strings.Join(vals, ", ") + ")\n" +
			"return {s, cmsgpack.pack(cmsgpack.unpack(s)), select('#', cmsgpack.unpack(s))}"
	case 5:
		s := luaQuote(diffBytes(r))
		body = "return {pcall(" + difftest.Pick(r, "cmsgpack.unpack, "+s,
			"cmsgpack.unpack_one, "+s+", "+strconv.Itoa(r.IntN(6)-1),
			"cmsgpack.unpack_limit, "+s+", "+strconv.Itoa(r.IntN(5)-1)+", "+strconv.Itoa(r.IntN(6)-1)) + ")}"
	case 6:
		body = "return redis.pcall('SET', KEYS[1], cmsgpack.pack(" + diffLuaValue(r, 0) + ", " + diffLuaValue(r, 1) + "))"
	default:
		body = difftest.Pick(r, "return {pcall(cmsgpack.unpack, redis.call('GET', KEYS[1]))}",
			"local v = redis.pcall('GET', KEYS[1]) if type(v) ~= 'string' then return v end return {pcall(cmsgpack.unpack_one, v)}",
			"local v = redis.pcall('GET', KEYS[1]) if type(v) ~= 'string' then return v end return {pcall(struct.unpack, 'bhi', v)}")
	}
	return cmd("EVAL", body, "1", difftest.Key(r))
}

// diffStructFormat returns a random struct format and Lua arguments that fit it (now and
// then not).
func diffStructFormat(r *rand.Rand) (string, []string) {
	var format strings.Builder
	var args []string
	for range 1 + r.IntN(6) {
		opt := difftest.Pick(r, "b", "B", "h", "H", "l", "L", "T", "i", "I", "i1", "i3", "I5", "i8", "I12", "i16", "f", "d",
			"x", "c3", "c0", "s", "<", ">", "!", "!2", "!4", " ", "!16")
		format.WriteString(opt)
		switch opt[0] {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I', 'f', 'd':
			args = append(args, diffLuaNumber(r))
		case 'c', 's':
			args = append(args, "string.rep('z', "+difftest.Pick(r, "0", "2", "3", "5", "40")+")")
		}
	}
	if r.IntN(15) == 0 {
		args = args[:max(0, len(args)-1)] // one missing
	}
	return format.String(), args
}

// diffLuaNumber returns a Lua expression of a number at one of the encodings' edges.
// Its -0 is computed at run time: the compilers fold constants differently (Lua 5.1 folds
// -0.0 but not 1/0, gopher-lua both) and both merge a folded -0 with a 0 of the same
// function, so "-0.0, 1/0" or "0, -1/(1/0)" do not read the same on both.
func diffLuaNumber(r *rand.Rand) string {
	return difftest.Pick(r, "0", "1", "-1", "127", "128", "-32", "-33", "255", "256", "-128", "-129", "65535", "65536", "-32768",
		"-32769", "2^31", "-2^31", "-2^31 - 1", "2^32 - 1", "2^32", "2^53", "-2^53", "2^63", "-2^63", "2^64", "0.5", "-1.5",
		"0.1", "1/3", "1e30", "-1e30", "1e300", "0/0", "1/0", "-1/0", "-tonumber('0')", "3.4028234663852886e38", "'12'", "' 0x10 '")
}

// diffLuaValue returns a Lua expression of a value for cmsgpack.pack.
func diffLuaValue(r *rand.Rand, depth int) string {
	switch n := r.IntN(10); {
	case n < 3:
		return diffLuaNumber(r)
	case n < 5:
		return "string.rep('s', " + difftest.Pick(r, "0", "1", "31", "32", "255", "256", "65535", "65536") + ")"
	case n < 6:
		return difftest.Pick(r, "true", "false", "nil", "cjson.null", "redis.call")
	case depth >= 3:
		return "{}"
	case n < 8:
		var elems []string
		for range r.IntN(4) {
			elems = append(elems, diffLuaValue(r, depth+1))
		}
		return "{" + strings.Join(elems, ", ") + "}"
	}
	key := difftest.Pick(r, "a", "[1]", "[2]", "[0]", "[1.5]", "[-1]", "[true]")
	return "{" + key + " = " + diffLuaValue(r, depth+1) + "}"
}

// diffBytes returns a short random string, mostly MessagePack's type bytes.
func diffBytes(r *rand.Rand) string {
	b := make([]byte, r.IntN(12))
	for i := range b {
		if r.IntN(3) == 0 {
			b[i] = byte(r.IntN(256))
		} else {
			b[i] = []byte{0x00, 0x7f, 0x80, 0x81, 0x90, 0x91, 0xa1, 0xc0, 0xc1, 0xc2, 0xc3, 0xca, 0xcb, 0xcc, 0xcd, 0xce,
				0xcf, 0xd0, 0xd3, 0xd9, 0xda, 0xdc, 0xde, 0xe0, 0xff, 0x01}[r.IntN(26)]
		}
	}
	return string(b)
}
