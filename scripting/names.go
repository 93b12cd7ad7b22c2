package scripting

import (
	"reflect"
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1 names the variable at fault in a runtime error: "attempt to index local 't' (a
// nil value)", "attempt to call field 'foo' (a nil value)". It finds the name by reading the
// function's bytecode back from the failing instruction (ldebug.c's getobjname and
// symbexec). gopher-lua compiles to Lua 5.1's instruction set, so the same reading works on
// its bytecode; what it needs that gopher-lua does not export (a frame's pc, its registers)
// is read through reflect, on the error path only. Should gopher-lua's internals change
// shape, the names are left out and the message stays right otherwise.

// gopher-lua's opcodes that the reading needs (opcode.go: Lua 5.1.4's, plus MOVEN,
// GETTABLEKS and SETTABLEKS).
const (
	opMove       = 0
	opLoadNil    = 4
	opGetUpval   = 5
	opGetGlobal  = 6
	opGetTable   = 7
	opGetTableKS = 8
	opSetTable   = 11
	opSetTableKS = 12
	opSelf       = 14
	opAdd        = 15
	opPow        = 20
	opUnm        = 21
	opLen        = 23
	opJmp        = 25
	opCall       = 31
	opTailCall   = 32
	opForLoop    = 34
	opForPrep    = 35
	opTForLoop   = 36
	opSetList    = 37
	opClosure    = 39
	opRK         = 1 << 8 // an RK operand naming a constant
	opMaxSbx     = (1<<18 - 1) >> 1
)

// setsA reports whether an opcode writes its register A (gopher-lua's opProps SetRegA).
var setsA = [...]bool{
	true, true, true, true, true, true, true, true, true, // MOVE..GETTABLEKS
	false, false, false, false, // SETGLOBAL..SETTABLEKS
	true, true, // NEWTABLE, SELF
	true, true, true, true, true, true, true, true, true, // ADD..LEN
	true,                // CONCAT
	false,               // JMP
	false, false, false, // EQ, LT, LE
	true, true, // TEST, TESTSET
	true, true, false, // CALL, TAILCALL, RETURN
	true, true, false, false, false, // FORLOOP, FORPREP, TFORLOOP, SETLIST, CLOSE
	true, true, false, // CLOSURE, VARARG, NOP
}

// frame is a Lua function's activation: its code, the instruction running (or failing),
// and where its registers start.
type frame struct {
	proto *lua.FunctionProto
	pc    int
	base  int
}

// luaFrame returns the Lua function's frame at level (0 is the running function).
func luaFrame(L *lua.LState, level int) (f frame, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	dbg, found := L.GetStack(level)
	if !found {
		return f, false
	}
	fv := reflect.ValueOf(dbg).Elem().FieldByName("frame")
	if !fv.IsValid() || fv.Kind() != reflect.Pointer || fv.IsNil() {
		return f, false
	}
	cf := fv.Elem()
	fnv := cf.FieldByName("Fn")
	pcv, basev := cf.FieldByName("Pc"), cf.FieldByName("LocalBase")
	if !fnv.IsValid() || !pcv.IsValid() || !basev.IsValid() {
		return f, false
	}
	fn, _ := reflect.NewAt(fnv.Type(), unsafe.Pointer(fnv.UnsafeAddr())).Elem().Interface().(*lua.LFunction)
	if fn == nil || fn.IsG || fn.Proto == nil {
		return f, false
	}
	f = frame{proto: fn.Proto, pc: int(pcv.Int()) - 1, base: int(basev.Int())}
	return f, f.pc >= 0 && f.pc < len(fn.Proto.Code)
}

// goFrameArgs returns how many arguments the Go function at level was given.
func goFrameArgs(L *lua.LState, level int) (n int, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	dbg, found := L.GetStack(level)
	if !found {
		return 0, false
	}
	fv := reflect.ValueOf(dbg).Elem().FieldByName("frame")
	if !fv.IsValid() || fv.Kind() != reflect.Pointer || fv.IsNil() {
		return 0, false
	}
	nv := fv.Elem().FieldByName("NArgs")
	if !nv.IsValid() {
		return 0, false
	}
	return int(nv.Int()), true
}

// register reads register reg of f.
func (f frame) register(L *lua.LState, reg int) (v lua.LValue) {
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	rv := reflect.ValueOf(L).Elem().FieldByName("reg")
	if !rv.IsValid() || rv.IsNil() {
		return nil
	}
	arr := rv.Elem().FieldByName("array")
	i := f.base + reg
	if !arr.IsValid() || i < 0 || i >= arr.Len() {
		return nil
	}
	e := arr.Index(i)
	v, _ = reflect.NewAt(e.Type(), unsafe.Pointer(e.UnsafeAddr())).Elem().Interface().(lua.LValue)
	return v
}

func instOp(i uint32) int { return int(i >> 26) }
func instA(i uint32) int  { return int(i>>18) & 0xff }
func instB(i uint32) int  { return int(i & 0x1ff) }
func instC(i uint32) int  { return int(i>>9) & 0x1ff }
func instBx(i uint32) int { return int(i & 0x3ffff) }

// localName is the n-th local (1-based) active at pc, or "".
func localName(p *lua.FunctionProto, n, pc int) string {
	for _, l := range p.DbgLocals {
		if l.StartPc > pc {
			break
		}
		if pc < l.EndPc {
			n--
			if n == 0 {
				return l.Name
			}
		}
	}
	return ""
}

// symbexec returns the last instruction before lastpc that set reg, following forward
// jumps as Lua 5.1's symbexec does.
func symbexec(p *lua.FunctionProto, lastpc, reg int) uint32 {
	code := p.Code
	last := len(code) - 1
	for pc := 0; pc < lastpc && pc < len(code); pc++ {
		i := code[pc]
		op, a := instOp(i), instA(i)
		if op < len(setsA) && setsA[op] && a == reg {
			last = pc
		}
		switch op {
		case opLoadNil:
			if a <= reg && reg <= instB(i) {
				last = pc
			}
		case opTForLoop:
			if reg >= a+2 {
				last = pc
			}
		case opCall, opTailCall:
			if reg >= a {
				last = pc
			}
		case opJmp, opForLoop, opForPrep:
			dest := pc + 1 + instBx(i) - opMaxSbx
			if pc < dest && dest <= lastpc {
				pc = dest - 1
			}
		case opClosure:
			if bx := instBx(i); bx < len(p.FunctionPrototypes) {
				pc += int(p.FunctionPrototypes[bx].NumUpvalues)
			}
		case opSetList:
			if instC(i) == 0 {
				pc++
			}
		}
	}
	if last < 0 {
		return 0
	}
	return code[last]
}

// objName is getobjname: what register reg holds at pc, as "local", "global", "field",
// "upvalue" or "method" and the name, or "" when Lua would not say.
func objName(p *lua.FunctionProto, pc, reg int) (kind, name string) {
	for depth := 0; depth < 32; depth++ {
		if n := localName(p, reg+1, pc); n != "" {
			return "local", n
		}
		i := symbexec(p, pc, reg)
		switch instOp(i) {
		case opGetGlobal:
			if s, ok := constant(p, instBx(i)); ok {
				return "global", s
			}
			return "", ""
		case opMove:
			if b := instB(i); b < instA(i) {
				reg = b
				continue
			}
		case opGetTable, opGetTableKS:
			return "field", kname(p, instC(i))
		case opGetUpval:
			if b := instB(i); b < len(p.DbgUpvalues) {
				if kind, name, ok := constantName(p.DbgUpvalues[b]); ok {
					return kind, name // a global or library field read as a constant (rewrite.go)
				}
				return "upvalue", p.DbgUpvalues[b]
			}
			return "upvalue", "?"
		case opSelf:
			return "method", kname(p, instC(i))
		}
		return "", ""
	}
	return "", ""
}

func constant(p *lua.FunctionProto, k int) (string, bool) {
	if k < 0 || k >= len(p.Constants) {
		return "", false
	}
	s, ok := p.Constants[k].(lua.LString)
	return string(s), ok
}

// kname is the name of an RK operand that is a constant string, else "?".
func kname(p *lua.FunctionProto, rk int) string {
	if rk&opRK != 0 {
		if s, ok := constant(p, rk&^opRK); ok {
			return s
		}
	}
	return "?"
}

// typeError is luaG_typeerror's text: with the variable's name when Lua would give it.
func typeError(op, typ, kind, name string) string {
	if kind != "" && !strings.HasPrefix(name, "(") {
		return "attempt to " + op + " " + kind + " '" + name + "' (a " + typ + " value)"
	}
	return "attempt to " + op + " a " + typ + " value"
}

// operandError is the error of a Go function standing for an operator (the concat
// function): the operand is its argument arg (1-based), which the calling Lua function
// passed in register A+arg of its CALL.
func (st *state) operandError(L *lua.LState, op string, v lua.LValue, arg int) string {
	typ := v.Type().String()
	if arg <= 0 {
		return typeError(op, typ, "", "")
	}
	f, ok := luaFrame(L, 1)
	if !ok || instOp(f.proto.Code[f.pc]) != opCall && instOp(f.proto.Code[f.pc]) != opTailCall {
		return typeError(op, typ, "", "")
	}
	kind, name := objName(f.proto, f.pc, instA(f.proto.Code[f.pc])+arg)
	return typeError(op, typ, kind, name)
}

// vmError rewrites an error the VM raised in the Lua function at level as Lua 5.1 words
// it, with the variable's name: msg is gopher-lua's text without its position.
func vmError(L *lua.LState, level int, msg string) string {
	f, ok := luaFrame(L, level)
	if !ok {
		return luaMessage(msg)
	}
	i := f.proto.Code[f.pc]
	op := instOp(i)
	named := func(verb string, reg int, typ string) string {
		if typ == "" {
			if v := f.register(L, reg); v != nil {
				typ = v.Type().String()
			} else {
				return luaMessage(msg)
			}
		}
		kind, name := objName(f.proto, f.pc, reg)
		return typeError(verb, typ, kind, name)
	}
	switch {
	case strings.HasPrefix(msg, "attempt to index a non-table object("):
		typ := msg[len("attempt to index a non-table object("):]
		if j := strings.IndexByte(typ, ')'); j >= 0 {
			typ = typ[:j]
		}
		switch op {
		case opGetTable, opGetTableKS, opSelf:
			return named("index", instB(i), typ)
		case opSetTable, opSetTableKS:
			return named("index", instA(i), typ)
		}
	case msg == "attempt to call a non-function object":
		if op == opCall || op == opTailCall {
			return named("call", instA(i), "")
		}
	case strings.HasPrefix(msg, "cannot perform ") && strings.Contains(msg, " operation between ") && op >= opAdd && op <= opPow:
		a, b := operands(msg[strings.Index(msg, " operation between ")+len(" operation between "):])
		rk, typ := instB(i), a
		if a == "number" {
			rk, typ = instC(i), b
		}
		if rk&opRK != 0 {
			return typeError("perform arithmetic on", typ, "", "")
		}
		return named("perform arithmetic on", rk, typ)
	case msg == "__unm undefined" && op == opUnm:
		return named("perform arithmetic on", instB(i), "")
	case msg == "__len undefined" && op == opLen:
		return named("get length of", instB(i), "")
	}
	return luaMessage(msg)
}
