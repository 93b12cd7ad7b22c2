package scripting

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The cmsgpack library as Redis 7.0 ships it (lua-cmsgpack 0.4.0).
//
// cmsgpack.pack(v, ...) writes each value after the other in the smallest encoding:
// a number that a 64-bit integer holds exactly as the shortest integer (fixint, int or
// uint 8 to 64; -0 as 0), any other as a float when a float holds it exactly (inf too),
// else as a double (NaN); a string as fixstr or str 8, 16 or 32; a table whose keys are
// exactly 1..n (n below 2^31; the empty table too) as an array, any other as a map of its
// pairs in the order next gives them; nil, functions and anything else as nil. Tables
// nested 16 deep are written as nil, so a table that holds itself ends.
//
// cmsgpack.unpack(s) returns every value s holds; unpack_one(s [, offset]) and
// unpack_limit(s, limit [, offset]) return the offset after what they read (-1 at the
// end) and then at most one, or limit, values (a limit and an offset of 0 read all, with
// no offset returned). Integers come back as numbers (a uint 64 past 2^63 as a negative
// one, as C's cast makes it), arrays as tables from 1 with their nils left out, bin and
// ext are a bad format. The errors are the library's texts, and the stack's: 8000 values
// at most, as lua_checkstack allows a C function.
//
// Where this differs from Redis: a map's pairs come in gopher-lua's order of the table,
// not C Lua's, so a table of several keys that are not 1..n packs its pairs in another
// order (the same pairs, which unpack reads back to the same table).

// msgpackMaxNesting is LUACMSGPACK_MAX_NESTING: the depth at which a table packs as nil.
const msgpackMaxNesting = 16

func (st *state) openCmsgpack() *lua.LTable {
	L := st.L
	t := L.CreateTable(0, 8)
	t.RawSetString("pack", L.NewFunction(st.msgpackPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int {
		return st.msgpackUnpack(L, 0, 0, L.GetTop())
	}))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		offset := optInteger(L, 2, 0)
		return st.msgpackUnpack(L, 1, offset, 1)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		limit := toInteger(checkNumber(L, 2))
		offset := optInteger(L, 3, 0)
		return st.msgpackUnpack(L, limit, offset, 1)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

// checkStack is luaL_checkstack for a C function whose stack would hold top values.
func checkStack(L *lua.LState, top int, what string) {
	if top > luaMaxCStack {
		luaLError(L, "stack overflow (%s)", what)
	}
}

// msgpackPack is cmsgpack.pack(v, ...).
func (st *state) msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.ArgError(0, "MessagePack pack needs input.")
	}
	if 2*n > luaMaxCStack {
		L.ArgError(0, "Too many arguments for MessagePack pack.")
	}
	b := st.libBuf[:0]
	for i := 1; i <= n; i++ {
		// C's stack: the arguments, each one's encoding so far, the value being encoded.
		b = st.msgpackAppend(L, b, L.Get(i), 0, n+i)
		if len(b) > maxString {
			L.Error(lua.LString("not enough memory"), 0)
		}
	}
	L.Push(lua.LString(b))
	st.keepLibBuf(b)
	return 1
}

// msgpackAppend appends v at nesting level, where C's stack holds top values.
func (st *state) msgpackAppend(L *lua.LState, b []byte, v lua.LValue, level, top int) []byte {
	switch v := v.(type) {
	case lua.LString:
		return append(appendMsgpackHeader(b, 0xa0, 0xd9, 0xda, 0xdb, len(v), 31), v...)
	case lua.LBool:
		if v {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(v)
		if i := toInteger(f); !math.IsInf(f, 0) && float64(i) == f {
			return appendMsgpackInt(b, i)
		}
		if f32 := float32(f); float64(f32) == f {
			return binary.BigEndian.AppendUint32(append(b, 0xca), math.Float32bits(f32))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
	case *lua.LTable:
		if level < msgpackMaxNesting {
			return st.msgpackTable(L, b, st.see(v), level, top)
		}
	}
	return append(b, 0xc0)
}

func (st *state) msgpackTable(L *lua.LState, b []byte, t *lua.LTable, level, top int) []byte {
	st.tick(L) // a table that holds itself many times packs for long: it can be killed
	if len(b) > maxString {
		L.Error(lua.LString("not enough memory"), 0)
	}
	checkStack(L, top+2, "in function table_is_an_array")
	if n, ok := msgpackArrayLen(t); ok {
		checkStack(L, top+1, "in function mp_encode_lua_table_as_array")
		b = appendMsgpackHeader(b, 0x90, 0, 0xdc, 0xdd, n, 15)
		for i := 1; i <= n; i++ {
			b = st.msgpackAppend(L, b, t.RawGetInt(i), level+1, top+1)
		}
		return b
	}
	checkStack(L, top+3, "in function mp_encode_lua_table_as_map")
	n := 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n++
	}
	b = appendMsgpackHeader(b, 0x80, 0, 0xde, 0xdf, n, 15)
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		b = st.msgpackAppend(L, b, k, level+1, top+3)
		b = st.msgpackAppend(L, b, v, level+1, top+2)
	}
	return b
}

// msgpackArrayLen is table_is_an_array: the table's keys are 1..n, each a number that C's
// int holds. A table whose array part holds 1..n and that has nothing past it is one;
// others are walked, key by key.
func msgpackArrayLen(t *lua.LTable) (int, bool) {
	n := t.MaxN()
	dense := n < 1<<31
	for i := 1; dense && i <= n; i++ {
		dense = t.RawGetInt(i) != lua.LNil
	}
	if dense {
		var k lua.LValue = lua.LNil
		if n > 0 {
			k = lua.LNumber(n)
		}
		if next, _ := t.Next(k); next == lua.LNil {
			return n, true
		}
	}
	count, max := 0, 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f <= 0 || f >= 1<<31 || f != math.Trunc(f) {
			return 0, false
		}
		max = int(math.Max(float64(max), f))
		count++
	}
	return count, max == count
}

// appendMsgpackHeader appends the header of a string, array or map of n items: fix (the
// low bits of the first byte, up to fixMax), then 8-bit (strings only), 16-bit and 32-bit
// lengths.
func appendMsgpackHeader(b []byte, fix, b8, b16, b32 byte, n, fixMax int) []byte {
	switch {
	case n <= fixMax:
		return append(b, fix|byte(n))
	case b8 != 0 && n <= 0xff:
		return append(b, b8, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, b32), uint32(n))
}

// appendMsgpackInt appends n in the shortest of MessagePack's integer encodings.
func appendMsgpackInt(b []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= 127:
		return append(b, byte(n))
	case n >= 0 && n <= 0xff:
		return append(b, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n >= 0 && n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= -128:
		return append(b, 0xd0, byte(n))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// msgpackUnpack is mp_unpack_full: at most limit values (all of them when limit and
// offset are 0) from offset in the string argument, where C's stack holds top values.
func (st *state) msgpackUnpack(L *lua.LState, limit, offset int64, top int) int {
	s := checkLString(L, 1)
	if offset < 0 || limit < 0 {
		luaLError(L, "Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s)))
	} else if offset > int64(len(s)) {
		luaLError(L, "Start offset %d greater than input length %d.", int32(offset), int32(len(s)))
	}
	all := limit == 0 && offset == 0
	if all {
		limit = math.MaxInt32
	}
	d := msgpackDecoder{st: st, L: L, s: s, i: int(offset)}
	first := L.GetTop() + 1
	cnt := 0
	for ; d.i < len(s) && int64(cnt) < limit; cnt++ {
		L.Push(d.value(top + cnt))
	}
	if all {
		return cnt
	}
	checkStack(L, top+cnt+1, "in function mp_unpack_full")
	next := lua.LNumber(-1)
	if d.i < len(s) {
		next = lua.LNumber(d.i)
	}
	L.Insert(next, first)
	return cnt + 1
}

// smallInts are the numbers -32 to 255, boxed once: a fixint or uint 8 decodes to one
// without allocating.
var smallInts = func() (n [32 + 256]lua.LValue) {
	for i := range n {
		n[i] = lua.LNumber(i - 32)
	}
	return n
}()

// msgpackDecoder reads values from s at i.
type msgpackDecoder struct {
	st *state
	L  *lua.LState
	s  string
	i  int
}

// need fails unless n more bytes are there.
func (d *msgpackDecoder) need(n int) {
	if len(d.s)-d.i < n {
		luaLError(d.L, "Missing bytes in input.")
	}
}

// take returns the next n bytes.
func (d *msgpackDecoder) take(n int) string {
	d.need(n)
	d.i += n
	return d.s[d.i-n : d.i]
}

// value reads one value, to be pushed where C's stack holds top values.
func (d *msgpackDecoder) value(top int) lua.LValue {
	d.need(1)
	checkStack(d.L, top+1, "too many return values at once; use unpack_one or unpack_limit instead.")
	c := d.s[d.i]
	switch {
	case c <= 0x7f:
		d.i++
		return smallInts[int(c)+32]
	case c >= 0xe0:
		d.i++
		return smallInts[int(int8(c))+32]
	case c&0xe0 == 0xa0:
		return lua.LString(d.take(1 + int(c&0x1f))[1:])
	case c&0xf0 == 0x90:
		d.i++
		return d.array(int(c&0xf), top)
	case c&0xf0 == 0x80:
		d.i++
		return d.hash(int(c&0xf), top)
	}
	switch c {
	case 0xc0:
		d.i++
		return lua.LNil
	case 0xc2, 0xc3:
		d.i++
		return lua.LBool(c == 0xc3)
	case 0xcc:
		return smallInts[int(d.take(2)[1])+32]
	case 0xcd:
		return lua.LNumber(d.uint(3))
	case 0xce:
		return lua.LNumber(d.uint(5))
	case 0xcf:
		return lua.LNumber(int64(d.uint(9)))
	case 0xd0:
		return lua.LNumber(int8(d.take(2)[1]))
	case 0xd1:
		return lua.LNumber(int16(d.uint(3)))
	case 0xd2:
		return lua.LNumber(int32(d.uint(5)))
	case 0xd3:
		return lua.LNumber(int64(d.uint(9)))
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(d.uint(5))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(d.uint(9)))
	case 0xd9:
		n := int(d.take(2)[1])
		return lua.LString(d.take(n))
	case 0xda:
		return lua.LString(d.take(int(d.uint(3))))
	case 0xdb:
		return lua.LString(d.take(int(d.uint(5))))
	case 0xdc:
		return d.array(int(d.uint(3)), top)
	case 0xdd:
		return d.array(int(d.uint(5)), top)
	case 0xde:
		return d.hash(int(d.uint(3)), top)
	case 0xdf:
		return d.hash(int(d.uint(5)), top)
	}
	luaLError(d.L, "Bad data format in input.")
	return lua.LNil
}

// uint reads the big-endian integer after a type byte, n bytes with it.
func (d *msgpackDecoder) uint(n int) uint64 {
	var v uint64
	for _, c := range []byte(d.take(n)[1:]) {
		v = v<<8 | uint64(c)
	}
	return v
}

// array reads n values into a table from 1; C's stack holds the table and an index.
func (d *msgpackDecoder) array(n, top int) lua.LValue {
	d.st.tick(d.L)
	t := d.L.CreateTable(min(n, len(d.s)-d.i), 0) // each value takes a byte at least
	checkStack(d.L, top+2, "in function mp_decode_to_lua_array")
	for i := 1; i <= n; i++ {
		if v := d.value(top + 2); v != lua.LNil {
			t.RawSetInt(i, v)
		}
	}
	return t
}

// hash reads n pairs into a table; C's stack holds the table, then a key.
func (d *msgpackDecoder) hash(n, top int) lua.LValue {
	d.st.tick(d.L)
	t := d.L.CreateTable(0, min(n, (len(d.s)-d.i)/2))
	for range n {
		k := d.value(top + 1)
		v := d.value(top + 2)
		switch k := k.(type) {
		case *lua.LNilType:
			d.L.Error(lua.LString("table index is nil"), 0) // lua_settable's, without a position
		case lua.LNumber:
			if math.IsNaN(float64(k)) {
				d.L.Error(lua.LString("table index is NaN"), 0)
			}
		}
		t.RawSet(k, v)
	}
	return t
}
