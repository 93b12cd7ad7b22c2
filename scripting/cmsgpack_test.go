package scripting

import (
	"strings"
	"testing"
)

func TestMsgpackPack(t *testing.T) {
	runLibCases(t, []libCase{
		{"hex(cmsgpack.pack(0, 127, 128, -32, -33, 255, 256, 65535, 65536, -128, -129, -32768, -32769, 2^32 - 1, 2^32, -2^31, -2^31 - 1, -2^63))",
			"007fcc80e0d0dfccffcd0100cdffffce00010000d080d1ff7fd18000d2ffff7fffceffffffffcf0000000100000000d280000000d3ffffffff7fffffffd38000000000000000"},
		{"hex(cmsgpack.pack(0.5, 0.1, 1/0, 0/0, -0.0, 2^63, 2^53))", "ca3f000000cb3fb999999999999aca7f800000cbfff800000000000000ca5f000000cf0020000000000000"},
		{"hex(cmsgpack.pack('', 'abc', true, false, nil, {}, {1, {2}}, {a = 'b'}, {[2] = 1}))", "a0a3616263c3c2c0909201910281a161a162810201"},
		{"hex(cmsgpack.pack(string.rep('x', 32)):sub(1, 2)) .. ' ' .. hex(cmsgpack.pack(string.rep('x', 256)):sub(1, 3)) .. ' ' .. hex(cmsgpack.pack(string.rep('x', 65536)):sub(1, 5))",
			"d920 da0100 db00010000"},
		{"(function() local t = {} t[1] = t return hex(cmsgpack.pack(t)) end)()", "91919191919191919191919191919191c0"}, // nil at 16 deep
		{"(function() local t = {} for i = 1, 16 do t[i] = i end return hex(cmsgpack.pack(t):sub(1, 4)) end)()", "dc001001"},
	}, false)
}

func TestMsgpackUnpack(t *testing.T) {
	runLibCases(t, []libCase{
		{"list(cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255\\204\\200\\208\\128\\209\\255\\0\\202\\63\\0\\0\\0\\163abc\\195\\192'))",
			"-1 200 -128 -256 0.5 abc true nil"}, // a uint 64 past 2^63 is negative
		{"list(cmsgpack.unpack_one('\\1\\2\\3', 1))", "2 2"},
		{"list(cmsgpack.unpack_limit('\\1\\2\\3', 2))", "2 1 2"},
		{"list(cmsgpack.unpack_limit('\\1\\2\\3', 0))", "1 2 3"},
		{"list(cmsgpack.unpack_one('\\1\\2\\3', 2))", "-1 3"},
		{"(function() local t = cmsgpack.unpack('\\147\\1\\192\\3') return list(t[1], t[2], t[3]) end)()", "1 nil 3"},
		{"(function() local t = cmsgpack.unpack('\\130\\161a\\1\\1\\161b') return list(t.a, t[1]) end)()", "1 b"},
		{"tostring(select('#', cmsgpack.unpack(string.rep('\\1', 7999))))", "7999"},
	}, false)
}

func TestMsgpackErrors(t *testing.T) {
	runLibCases(t, []libCase{
		{"cmsgpack.pack()", "bad argument #0 to 'pack' (MessagePack pack needs input.)"},
		{"cmsgpack.unpack('\\193')", "Bad data format in input."},
		{"cmsgpack.unpack('\\205\\1')", "Missing bytes in input."},
		{"cmsgpack.unpack_one('\\1\\2\\3', 4)", "Start offset 4 greater than input length 3."},
		{"cmsgpack.unpack_limit('\\1\\2\\3', -1, 5)", "Invalid request to unpack with offset of 5 and limit of 3."},
		{"cmsgpack.unpack_limit('\\1')", "bad argument #2 to 'unpack_limit' (number expected, got no value)"},
		{"cmsgpack.unpack(string.rep('\\1', 8000))", "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"},
		{"cmsgpack.unpack(string.rep('\\145', 4000) .. '\\1')", "stack overflow (in function mp_decode_to_lua_array)"},
	}, true)
	// lua_settable's errors carry no position.
	e := New()
	body := "return cmsgpack.unpack('\\129\\192\\1')"
	out := runScript(t, e, &fakeHost{}, 2, body, nil, nil)
	if want := "-ERR table index is nil script: " + sha1hex([]byte(body)) + ", on @user_script:1.\r\n"; out != want {
		t.Fatalf("want %q, got %q", want, out)
	}
}

// BenchmarkMsgpack packs and unpacks a small limiter state, as a script would keep it.
func BenchmarkMsgpack(b *testing.B) {
	e := New()
	s, err := e.Load([]byte("return cmsgpack.unpack(cmsgpack.pack({ARGV[1], 12, 0.5, {1, 2, 3}}))[2]"))
	if err != nil {
		b.Fatal(err)
	}
	call := &Call{Host: &fakeHost{}, Proto: 2, Args: [][]byte{[]byte(strings.Repeat("k", 20))}}
	b.ReportAllocs()
	var out []byte
	for b.Loop() {
		if out, err = e.Run(out[:0], s, call); err != nil {
			b.Fatal(err)
		}
	}
}
