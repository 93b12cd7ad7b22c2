package scripting

import (
	"math"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// A Lua value is a Go interface: handing a script a string or a number (a key in KEYS, a
// reply of redis.call, what tonumber returns) costs Go a heap object for the value behind
// the interface, and a string one more for its bytes. A limiter script call made about
// twenty of them. A state's boxes hand them out of blocks instead, as gopher-lua's own
// allocator does for the numbers its VM computes: a value is written once into the next
// free place of a block, the interface points at it, and nothing is ever written there
// again, so a value a script keeps stays as it was. A block lives while any of its values
// does; a state fills one in a few calls and takes a new one.

// Block sizes: values per block, and bytes of string data per block. A longer string
// than boxStringMax gets an object of its own.
const (
	boxValues    = 256
	boxBytes     = 8 << 10
	boxStringMax = 512
)

// boxes are a state's blocks of boxed values; only the state's goroutine uses them.
type boxes struct {
	strs  []lua.LString // string headers: a boxed string's interface points at one
	nums  []float64     // numbers: a boxed number's interface points at one
	bytes []byte        // the strings' bytes
}

// eface is the layout of a Go interface value: the type word and the data pointer.
type eface struct {
	typ, data unsafe.Pointer
}

// The interfaces whose type word a boxed value takes: built from constants, so that Go
// keeps their data in static memory and converting them allocates nothing.
var (
	stringType = (*eface)(unsafe.Pointer(&[]lua.LValue{lua.LString("")}[0])).typ
	numberType = (*eface)(unsafe.Pointer(&[]lua.LValue{lua.LNumber(0)}[0])).typ
)

// boxed returns the interface of type typ whose value is at p.
func boxed(typ, p unsafe.Pointer) lua.LValue {
	var v lua.LValue
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, p
	return v
}

// str returns s as a Lua string value; s must never change (a Go string, or bytes of the
// boxes).
func (b *boxes) str(s string) lua.LValue {
	if len(b.strs) == cap(b.strs) {
		b.strs = make([]lua.LString, 0, boxValues)
	}
	b.strs = append(b.strs, lua.LString(s))
	return boxed(stringType, unsafe.Pointer(&b.strs[len(b.strs)-1]))
}

// bytesStr returns a copy of p as a Lua string value.
func (b *boxes) bytesStr(p []byte) lua.LValue {
	if len(p) == 0 {
		return emptyString
	}
	if len(p) > boxStringMax {
		return b.str(string(p))
	}
	if len(b.bytes)+len(p) > cap(b.bytes) {
		b.bytes = make([]byte, 0, boxBytes)
	}
	start := len(b.bytes)
	b.bytes = append(b.bytes, p...)
	return b.str(unsafe.String(&b.bytes[start], len(p)))
}

// number returns f as a Lua number value.
func (b *boxes) number(f float64) lua.LValue {
	if f >= 0 && f < float64(len(smallNumbers)) && f == float64(int(f)) && !math.Signbit(f) {
		return smallNumbers[int(f)]
	}
	if len(b.nums) == cap(b.nums) {
		b.nums = make([]float64, 0, boxValues)
	}
	b.nums = append(b.nums, f)
	return boxed(numberType, unsafe.Pointer(&b.nums[len(b.nums)-1]))
}

// luaNumber returns f as Lua's tostring writes it, as a Lua string value.
func (b *boxes) luaNumber(f float64) lua.LValue {
	if len(b.bytes)+32 > cap(b.bytes) {
		b.bytes = make([]byte, 0, boxBytes)
	}
	start := len(b.bytes)
	b.bytes = appendLuaNumber(b.bytes, f) // "%.14g" fits in 32 bytes: no new array
	return b.str(unsafe.String(&b.bytes[start], len(b.bytes)-start))
}

// emptyString is "" as a Lua value.
var emptyString lua.LValue = lua.LString("")

// smallNumbers are the integers most replies and scripts use, boxed once.
var smallNumbers = func() []lua.LValue {
	out := make([]lua.LValue, 1024)
	for i := range out {
		out[i] = lua.LNumber(i)
	}
	return out
}()
