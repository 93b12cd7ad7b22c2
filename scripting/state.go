package scripting

import (
	"crypto/sha1"
	"encoding/hex"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// state is one Lua interpreter with Redis's sandbox, reused from call to call (Engine.get,
// Engine.put): building one costs far more than a script's run.
//
// The sandbox is Redis 7.0's: the base, table, string, math and coroutine libraries without
// the functions that reach outside (print, dofile, loadfile, require, os, io, debug), and
// globals that scripts can neither create nor change: "a = 1" fails with "Attempt to modify
// a readonly table" and reading an unknown global with "Script attempted to access
// nonexistent global variable". Redis marks the tables read-only inside its Lua; gopher-lua
// has no such mark, so a script sees views instead of the tables: an empty table whose
// metatable reads through to the real one (__index) and refuses writes (__newindex).
// rawset, rawget, next and the table library see through the views or refuse them; the
// views' metatables are hidden behind __metatable. A script thus cannot leave anything
// behind for the next one on the same state, which is what makes reuse safe.
type state struct {
	e  *Engine
	L  *lua.LState
	g  *lua.LTable // the real globals
	gv *lua.LTable // their view: _G and every script's environment

	// protected holds the views, and the real tables behind them (real[view]).
	protected map[*lua.LTable]bool
	real      map[*lua.LTable]*lua.LTable
	views     []*lua.LTable

	handler  *lua.LFunction // the error handler of a run (errorHandler)
	pcallH   *lua.LFunction // pcall's: it only words errors (translate)
	concatFn *lua.LFunction // the concat function scripts call (rewrite.go)
	tickFn   *lua.LFunction // the tick function
	unpackFn *lua.LFunction // the unpack function
	fornumFn *lua.LFunction // the fornum function
	replyFn  *lua.LFunction // the reply function
	catBuf   []byte         // concat's buffer, reused
	keys     *lua.LTable    // KEYS and ARGV of the last run, reused (fill)
	argv     *lua.LTable
	strs     map[string]lua.LValue      // ARGV's strings seen lately (interned)
	box      boxes                      // the strings and numbers handed to scripts (box.go)
	okFree   []*lua.LTable              // status reply tables to reuse (resp.go)
	okUsed   []*lua.LTable              // those handed out in this run
	arrFree  []*lua.LTable              // small array reply tables to reuse (resp.go)
	arrUsed  []*lua.LTable              // those handed out in this run
	fns      map[*Script]*lua.LFunction // each script's function, made once per state
	sources  map[string]string          // loadstring's chunks by name: their source, for errors
	gen      uint64                     // the Engine.flushes fns belongs to
	run      run                        // the call in progress
	args     [][]byte                   // redis.call's arguments, reused
	nums     []byte                     // its numbers, as "%.17g"
	numAt    []int                      // where each number lies in nums: arg, start, end
	reply    []byte                     // the reply to redis.call, reused
	errInfo  errInfo                    // what the error handler learnt of the last error
	killErr  *lua.LTable                // the error a killed script ends with
	memErr   *lua.LTable                // the error of a script past the memory limit
	heap     [1]metrics.Sample          // the heap's size, read by watch
	cjson    cjsonConfig                // cjson's configuration (cjson.go)
	jsonNull *lua.LUserData             // cjson.null
	libBuf   []byte                     // struct.pack's and cmsgpack.pack's buffer, reused
	rand     rand48                     // math.random's generator (random.go)

	// Functions (functions.go): the globals of library code and the load sandbox's, the
	// libraries loaded here and their callbacks, the load in progress.
	fenv    *lua.LTable
	fmeta   *lua.LTable // fenv's metatable: its __index is switched while a library loads
	loadEnv *lua.LTable
	libs    map[*Library]map[string]*lua.LFunction
	libGen  uint64       // the Engine.libGen libs belongs to
	reg     *registering // the library loading, nil when none
}

// errInfo is where a script's uncaught error came from, as Redis's error handler reports it.
type errInfo struct {
	source string // "@user_script"
	line   int    // 0 when unknown
}

// Readonly and missing-global errors, Redis 7.0's texts.
const (
	errReadonly = "Attempt to modify a readonly table"
)

// newState builds an interpreter with the sandbox and the redis API.
func newState(e *Engine) *state {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   callStackSize,
		RegistrySize:    1024,
		RegistryMaxSize: registryMaxSize,
	})
	st := &state{
		e:         e,
		L:         L,
		g:         L.G.Global,
		protected: make(map[*lua.LTable]bool),
		real:      make(map[*lua.LTable]*lua.LTable),
		fns:       make(map[*Script]*lua.LFunction),
		sources:   make(map[string]string),
		strs:      make(map[string]lua.LValue),
		gen:       e.flushes.Load(),
		rand:      rand48Init,
	}
	st.run.resp = 2
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := st.g
	for _, name := range []string{"print", "dofile", "loadfile", "module", "require", "_printregs", "_GOPHER_LUA_VERSION",
		"package", "getfenv", "setfenv", "newproxy"} {
		g.RawSetString(name, lua.LNil)
	}
	st.setBase()
	st.setLibraries()
	g.RawSetString("redis", st.redisAPI())
	g.RawSetString("bit", st.openBit())
	g.RawSetString("cjson", st.openCJSON())
	g.RawSetString("struct", st.openStruct())
	g.RawSetString("cmsgpack", st.openCmsgpack())
	L.G.Registry.RawSetString("_LOADED", L.CreateTable(0, 0)) // nothing for require to find

	// Protect: every library table is replaced by its view, then the globals themselves.
	for _, name := range []string{"string", "table", "math", "coroutine", "redis", "bit", "cjson", "struct", "cmsgpack"} {
		if t, ok := g.RawGetString(name).(*lua.LTable); ok {
			g.RawSetString(name, st.protect(t))
		}
	}
	g.RawSetString("server", g.RawGetString("redis")) // Valkey's name for the same API
	missing := L.CreateTable(0, 2)
	missing.RawSetString("__index", L.NewFunction(missingGlobal))
	missing.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(g, missing)
	st.gv = st.protect(g)
	g.RawSetString("_G", st.gv)
	// Strings' methods come from the real string library (s:sub() stays fast); what
	// getmetatable('') shows is a read-only table whose __index is the string view.
	if sv, ok := g.RawGetString("string").(*lua.LTable); ok {
		smt := L.CreateTable(0, 2)
		smt.RawSetString("__index", st.real[sv])
		shown := L.CreateTable(0, 1)
		shown.RawSetString("__index", sv)
		smt.RawSetString("__metatable", st.protect(shown))
		st.setStringArith(smt) // arithmetic on strings as Lua 5.1's (arith.go)
		L.SetMetatable(lua.LString(""), smt)
	}
	// From here on, whatever asks for the globals gets the view: loadstring's chunks,
	// getfenv, coroutines.
	L.G.Global = st.gv
	L.Env = st.gv
	st.handler = L.NewFunction(st.errorHandler)
	st.pcallH = L.NewFunction(func(L *lua.LState) int {
		L.Push(st.translate(L, L.Get(1)))
		return 1
	})
	st.concatFn = L.NewFunction(st.concat)
	st.tickFn = L.NewFunction(st.tick)
	st.unpackFn = L.NewFunction(unpackArgs)
	st.fornumFn = L.NewFunction(st.fornum)
	st.replyFn = L.NewFunction(st.replyArray)
	st.killErr = plainError(L, "Script killed by user with SCRIPT KILL...")
	st.memErr = plainError(L, "Script used too much memory: its heap grew past "+itoa(int(e.MemoryLimit>>20))+" MB")
	st.heap = [1]metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	return st
}

// Bounds of one interpreter: Lua call depth (C Lua's "stack overflow" comes near 200 C
// levels; gopher-lua counts Lua frames), and the value stack.
const (
	callStackSize   = 1000
	registryMaxSize = 1 << 20
)

// protect returns a read-only view of t.
func (st *state) protect(t *lua.LTable) *lua.LTable {
	L := st.L
	view := L.CreateTable(0, 0)
	mt := L.CreateTable(0, 3)
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(readonlyIndex))
	decoy := L.CreateTable(0, 0) // what getmetatable returns: a table, as Redis's, that leads nowhere
	dmt := L.CreateTable(0, 2)
	dmt.RawSetString("__newindex", L.NewFunction(readonlyIndex))
	dmt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(decoy, dmt)
	mt.RawSetString("__metatable", decoy)
	L.SetMetatable(view, mt)
	st.protected[view] = true
	st.protected[t] = true
	st.protected[decoy] = true
	st.real[view] = t
	st.views = append(st.views, view, decoy)
	return view
}

// constant is the value of a constant a script takes (rewrite.go): the global "tonumber",
// or the field "math.floor" of a library, read through its view.
func (st *state) constant(name string) lua.LValue {
	if name == replyName {
		return st.replyFn
	}
	lib, field, isField := strings.Cut(name, ".")
	v := st.g.RawGetString(lib)
	if !isField {
		return v
	}
	t, _ := v.(*lua.LTable)
	return st.see(t).RawGetString(field)
}

// sandbox is what every interpreter's globals hold, read once from one: each global's
// name, with the fields of those that are libraries (nil for the others, and for _G, whose
// missing fields are errors). These are the constants a script may take (rewrite.go).
func sandbox() map[string]map[string]bool {
	sandboxOnce.Do(readSandbox)
	return sandboxNames
}

var (
	sandboxOnce  sync.Once
	sandboxNames map[string]map[string]bool
)

func readSandbox() {
	st := newState(New())
	defer st.L.Close()
	names := make(map[string]map[string]bool)
	for k, v := st.g.Next(lua.LNil); k != lua.LNil; k, v = st.g.Next(k) {
		name, ok := k.(lua.LString)
		if !ok {
			continue
		}
		var fields map[string]bool
		if t, ok := v.(*lua.LTable); ok && t != st.gv {
			if real, ok := st.real[t]; ok {
				fields = make(map[string]bool)
				real.ForEach(func(f, _ lua.LValue) {
					if f, ok := f.(lua.LString); ok {
						fields[string(f)] = true
					}
				})
			}
		}
		names[string(name)] = fields
	}
	delete(names, "KEYS") // each run's (Engine.Run): never constants
	delete(names, "ARGV")
	sandboxNames = names
}

// see returns the table a view stands for, or t itself.
func (st *state) see(t *lua.LTable) *lua.LTable {
	if r, ok := st.real[t]; ok {
		return r
	}
	return t
}

// readonlyIndex is a view's __newindex: any write fails, with the position of the writer.
func readonlyIndex(L *lua.LState) int {
	L.RaiseError(errReadonly)
	return 0
}

// missingGlobal is the globals' __index: reading a global that does not exist fails.
func missingGlobal(L *lua.LState) int {
	name := "(null)" // what C's printf makes of a key that is not a string
	switch k := L.Get(2).(type) {
	case lua.LString:
		name = string(k)
	case lua.LNumber:
		name = luaNumberString(float64(k))
	}
	L.RaiseError("Script attempted to access nonexistent global variable '%s'", cString(name))
	return 0
}

// clean reports whether no script wrote into the views (tests check that none can).
func (st *state) clean() bool {
	for _, v := range st.views {
		if k, _ := v.Next(lua.LNil); k != lua.LNil {
			return false
		}
	}
	return true
}

// setBase replaces base functions whose Go versions differ from Lua 5.1's in what a script
// sees: numbers as strings, error positions, and the sandbox's views.
func (st *state) setBase() {
	L, g := st.L, st.g
	set := func(name string, fn lua.LGFunction) { g.RawSetString(name, L.NewFunction(fn)) }
	set("tostring", st.luaToString)
	set("tonumber", st.luaToNumber)
	set("error", luaErrorFn)
	set("pcall", st.pcall)
	set("xpcall", st.xpcall)
	set("rawset", st.rawset)
	set("rawget", st.rawget)
	set("next", st.next)
	set("setmetatable", st.setmetatable)
	set("loadstring", st.loadstring)
	set("load", st.load)
	set("gcinfo", func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 })
	set("collectgarbage", func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 })
	pairsIter := L.NewFunction(st.next)
	set("pairs", func(L *lua.LState) int {
		t := L.CheckTable(1)
		L.Push(pairsIter)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	})
	// getfenv: gopher-lua answers the globals for Go functions; L.G.Global is the view.
	if co, ok := g.RawGetString("coroutine").(*lua.LTable); ok {
		resume := co.RawGetString("resume").(*lua.LFunction)
		co.RawSetString("resume", L.NewFunction(func(L *lua.LState) int {
			n := L.GetTop()
			L.Insert(resume, 1)
			L.Call(n, lua.MultRet)
			st.stopIfStopped(L)
			if L.GetTop() >= 2 && L.Get(1) == lua.LFalse {
				L.Replace(2, luaError(L.Get(2)))
			}
			return L.GetTop()
		}))
	}
}

// setLibraries completes and patches the libraries: Lua 5.1's table functions (table.go)
// and those gopher-lua lacks, string functions that bound what they build, math.max and
// min as C compares.
func (st *state) setLibraries() {
	L, g := st.L, st.g
	if tl, ok := g.RawGetString("table").(*lua.LTable); ok {
		tl.RawSetString("insert", L.NewFunction(st.tableInsert))
		tl.RawSetString("remove", L.NewFunction(st.tableRemove))
		tl.RawSetString("sort", L.NewFunction(st.tableSort))
		tl.RawSetString("foreach", L.NewFunction(tableForeach(false)))
		tl.RawSetString("foreachi", L.NewFunction(tableForeach(true)))
		tl.RawSetString("setn", L.NewFunction(func(L *lua.LState) int {
			L.RaiseError("'setn' is obsolete")
			return 0
		}))

	}
	if sl, ok := g.RawGetString("string").(*lua.LTable); ok {
		sl.RawSetString("rep", L.NewFunction(st.stringRep))
		sl.RawSetString("char", L.NewFunction(stringChar))
		sl.RawSetString("format", L.NewFunction(st.stringFormat))
		sl.RawSetString("find", L.NewFunction(st.strFind))
		sl.RawSetString("match", L.NewFunction(st.strMatch))
		sl.RawSetString("gmatch", L.NewFunction(st.strGmatch))
		sl.RawSetString("gsub", L.NewFunction(st.strGsub))
	}
	if ml, ok := g.RawGetString("math").(*lua.LTable); ok {
		ml.RawSetString("huge", lua.LNumber(math.Inf(1))) // C's HUGE_VAL; gopher-lua's is the largest finite number
		ml.RawSetString("random", L.NewFunction(st.mathRandom))
		ml.RawSetString("randomseed", L.NewFunction(st.mathRandomSeed))
		ml.RawSetString("max", L.NewFunction(st.mathMinMax(true)))
		ml.RawSetString("min", L.NewFunction(st.mathMinMax(false)))
		// floor and ceil as gopher-lua's, their result boxed without an allocation.
		ml.RawSetString("floor", L.NewFunction(func(L *lua.LState) int {
			L.Push(st.box.number(math.Floor(checkNumber(L, 1))))
			return 1
		}))
		ml.RawSetString("ceil", L.NewFunction(func(L *lua.LState) int {
			L.Push(st.box.number(math.Ceil(checkNumber(L, 1))))
			return 1
		}))
	}
	st.wrapNumberArgs()
}

// tableForeach is Lua 5.1's table.foreach (every pair) and table.foreachi (1..#t): f is
// called with each, and the first non-nil result ends the walk and is returned.
func tableForeach(indexed bool) lua.LGFunction {
	return func(L *lua.LState) int {
		t := L.CheckTable(1)
		f := L.CheckFunction(2)
		each := func(k, v lua.LValue) bool {
			L.Push(f)
			L.Push(k)
			L.Push(v)
			L.Call(2, 1)
			r := L.Get(-1)
			L.Pop(1)
			if r != lua.LNil {
				L.Push(r)
				return true
			}
			return false
		}
		if indexed {
			for i := 1; i <= t.Len(); i++ {
				if each(lua.LNumber(i), t.RawGetInt(i)) {
					return 1
				}
			}
			return 0
		}
		for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
			if each(k, v) {
				return 1
			}
		}
		return 0
	}
}

// pcall is Redis's: an error that is a table with an err field (redis.call's) comes back
// as its text, as scripts written for Redis 6 expect.
func (st *state) pcall(L *lua.LState) int {
	top := L.GetTop()
	if top == 0 { // Redis's pcall then calls its own first result, true
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a boolean value"))
		return 2
	}
	if msg := notCallable(L, L.Get(1)); msg != "" {
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(lua.LString(msg))
		return 2
	}
	err := L.PCall(top-1, lua.MultRet, st.pcallH)
	st.stopIfStopped(L)
	if err != nil {
		obj := errorObject(err)
		if t, ok := obj.(*lua.LTable); ok {
			if s := L.GetField(t, "err"); isStringLike(s) {
				obj = luaString(s)
			}
		}
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// xpcall is Lua's, except that it cannot catch a stopped script.
func (st *state) xpcall(L *lua.LState) int {
	fn := L.CheckAny(1)
	handler := L.CheckFunction(2)
	L.SetTop(0)
	L.Push(fn)
	err := L.PCall(0, lua.MultRet, L.NewFunction(func(L *lua.LState) int {
		obj := st.translate(L, L.Get(1))
		L.Push(handler)
		L.Push(obj)
		L.Call(1, 1)
		return 1
	}))
	st.stopIfStopped(L)
	if err != nil {
		L.Push(lua.LFalse)
		L.Push(errorObject(err))
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// notCallable is the error of calling v from Go, or "" when v can be called.
func notCallable(L *lua.LState, v lua.LValue) string {
	if _, ok := v.(*lua.LFunction); ok || L.GetMetaField(v, "__call") != lua.LNil {
		return ""
	}
	return "attempt to call a " + v.Type().String() + " value"
}

// errorObject is the value a Lua error carries, its message worded as Lua 5.1's.
func errorObject(err error) lua.LValue {
	if ae, ok := err.(*lua.ApiError); ok {
		return luaError(ae.Object)
	}
	return lua.LString(err.Error())
}

func (st *state) rawset(L *lua.LState) int {
	t := L.CheckTable(1)
	if st.protected[t] {
		L.Error(lua.LString(errReadonly), 0) // from C: no position, as Redis
	}
	k := L.CheckAny(2)
	v := L.CheckAny(3)
	if k == lua.LNil {
		L.RaiseError("table index is nil")
	}
	t.RawSet(k, v)
	L.SetTop(1)
	return 1
}

func (st *state) rawget(L *lua.LState) int {
	t := st.see(L.CheckTable(1))
	L.Push(t.RawGet(L.CheckAny(2)))
	return 1
}

func (st *state) next(L *lua.LState) int {
	t := st.see(L.CheckTable(1))
	key := L.Get(2)
	if key != lua.LNil && t.RawGet(key) == lua.LNil {
		L.Error(lua.LString("invalid key to 'next'"), 0)
	}
	k, v := t.Next(key)
	if k == lua.LNil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(k)
	L.Push(v)
	return 2
}

func (st *state) setmetatable(L *lua.LState) int {
	t := L.CheckTable(1)
	mt := L.Get(2)
	if _, ok := mt.(*lua.LTable); !ok && mt != lua.LNil {
		L.ArgError(2, "nil or table expected")
	}
	if st.protected[t] {
		L.Error(lua.LString(errReadonly), 0)
	}
	if cur, ok := L.GetMetatable(t).(*lua.LTable); ok {
		if L.GetField(cur, "__metatable") != lua.LNil {
			L.RaiseError("cannot change a protected metatable")
		}
	}
	L.SetMetatable(t, mt)
	L.SetTop(1)
	return 1
}

// loadstring compiles a chunk as Lua 5.1 names it ([string "..."]) in the script's
// environment.
func (st *state) loadstring(L *lua.LState) int {
	src := L.CheckString(1)
	name := L.OptString(2, src)
	id := chunkID(name)
	c, msg := compileChunk(src, id, false)
	if msg != "" {
		L.Push(lua.LNil)
		L.Push(lua.LString(msg))
		return 2
	}
	if len(st.sources) >= maxStateFunctions {
		clear(st.sources)
	}
	st.sources[id] = name
	L.Push(st.instantiate(c))
	return 1
}

// load is Lua 5.1's load(reader [, name]): the chunk is read piece by piece from reader,
// then compiled as loadstring's.
func (st *state) load(L *lua.LState) int {
	reader := L.CheckFunction(1)
	name := L.OptString(2, "=(load)")
	var b strings.Builder
	for {
		L.Push(reader)
		L.Call(0, 1)
		piece := L.Get(-1)
		L.Pop(1)
		if piece == lua.LNil {
			break
		}
		s, ok := piece.(lua.LString)
		if !ok {
			if n, isNum := piece.(lua.LNumber); isNum {
				s = lua.LString(luaNumberString(float64(n)))
			} else {
				L.Push(lua.LNil)
				L.Push(lua.LString("reader function must return a string"))
				return 2
			}
		}
		if len(s) == 0 {
			break
		}
		b.WriteString(string(s))
		if b.Len() > maxString {
			L.RaiseError("not enough memory")
		}
	}
	id := chunkID(name)
	c, msg := compileChunk(b.String(), id, false)
	if msg != "" {
		L.Push(lua.LNil)
		L.Push(lua.LString(msg))
		return 2
	}
	if len(st.sources) >= maxStateFunctions {
		clear(st.sources)
	}
	st.sources[id] = name
	L.Push(st.instantiate(c))
	return 1
}

// instantiate makes a compiled chunk (wrapChunk's) into its function in this interpreter.
func (st *state) instantiate(c compiled) *lua.LFunction {
	L := st.L
	L.Push(L.NewFunctionFromProto(c.proto))
	L.Push(st.concatFn)
	L.Push(st.tickFn)
	L.Push(st.unpackFn)
	L.Push(st.gv)
	L.Push(st.fornumFn)
	for _, name := range c.consts {
		L.Push(st.constant(name))
	}
	L.Call(5+len(c.consts), 1)
	fn := L.Get(-1).(*lua.LFunction)
	L.Pop(1)
	fn.Env = st.g // reads go straight to the globals; writes go through the view (rewrite.go)
	return fn
}

// replyArray is the reply function (rewrite.go): the array a script returns, in a table that
// the interpreter takes back once the reply is written (recycle), filled as the table
// constructor would fill it.
func (st *state) replyArray(L *lua.LState) int {
	n := L.GetTop()
	t := st.arrayTable(n)
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, L.Get(i))
	}
	L.Push(t)
	return 1
}

// tick runs at the top of every loop and function body: it stops a stopped script, and
// now and then looks whether it was killed or has become busy.
func (st *state) tick(L *lua.LState) int {
	st.stopIfStopped(L)
	if st.run.ticks++; st.run.ticks&255 == 0 {
		st.watch(L)
	}
	return 0
}

// watch kills the script when it was asked to (SCRIPT KILL, shutdown), and tells the host
// once it has run past its busy time.
func (st *state) watch(L *lua.LState) {
	r := &st.run
	if r.call == nil {
		if !r.deadline.IsZero() && time.Now().After(r.deadline) {
			r.abort = plainError(L, "FUNCTION LOAD timeout")
			st.stopIfStopped(L)
		}
		return
	}
	if r.call.kill.Load() || st.e.closing.Load() {
		r.abort = st.killErr
		st.stopIfStopped(L)
	}
	st.checkMemory(L, 0)
	st.watchBusy()
}

// checkMemory fails the script when the heap, grown by n bytes more, would be past the
// memory limit counted from the lowest heap seen in the run (the first look may come
// before the collector frees the garbage of earlier runs). A heap past it may be
// garbage more than the script's strings and tables: before failing, it collects the
// garbage and looks again, at most once per limit/8 of growth (a collection takes a few
// milliseconds per 100 MB live).
func (st *state) checkMemory(L *lua.LState, n int) {
	limit := st.e.MemoryLimit
	r := &st.run
	if limit == 0 || r.call == nil {
		return
	}
	used := st.heapNow()
	if r.memBase == 0 || used < r.memBase {
		r.memBase = used // the lowest heap seen: a base read before garbage was collected is too high
	}
	if used+uint64(n) <= r.memBase+limit {
		return
	}
	if r.gcAt == 0 || used >= r.gcAt+limit/8 {
		runtime.GC()
		used = st.heapNow()
		r.gcAt = max(used, 1)
		if used+uint64(n) <= r.memBase+limit {
			return
		}
	}
	r.abort = st.memErr
	st.stopIfStopped(L)
}

// heapNow is the heap's size: its objects, live or not yet swept.
func (st *state) heapNow() uint64 {
	metrics.Read(st.heap[:])
	return st.heap[0].Value.Uint64()
}

// reserveMin is the smallest string whose bytes are checked against the memory limit
// before they are taken (reserve); smaller ones are counted by the next watch.
const reserveMin = 1 << 20

// reserve is told by a builtin before it takes n bytes for a string: a large one is
// checked against the memory limit first, so that a script building strings fails at the
// limit rather than one string past it (string.rep of 500 MB, s .. s).
func (st *state) reserve(L *lua.LState, n int) {
	if n >= reserveMin {
		st.checkMemory(L, n)
	}
}

// room makes room in b for k more bytes, reserved first when the builder must grow for them
// (to twice its size and k, as strings.Builder grows).
func (st *state) room(L *lua.LState, b *strings.Builder, k int) {
	if b.Cap()-b.Len() < k {
		st.reserve(L, 2*b.Cap()+k)
		b.Grow(k)
	}
}

// grow is b with room for n more bytes, the room reserved first when it must be taken.
func (st *state) grow(L *lua.LState, b []byte, n int) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	c := max(2*cap(b), len(b)+n)
	st.reserve(L, c)
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// watchBusy tells the host once the script has run past its busy time.
func (st *state) watchBusy() {
	r := &st.run
	if !r.busy && r.call != nil && r.call.BusyAfter > 0 && time.Since(r.start) >= r.call.BusyAfter {
		r.busy = true
		r.host.Busy()
	}
}

// workQuantum is how much work the builtins that can run long (string.rep, gsub, find,
// table.concat, string.format, '..') do between two looks at the run (watch): bytes
// written or pattern steps taken, 0.05 to 2 ms of work. A loop's ticks alone would let
// a loop of 256 string.rep of 500 MB run 25 s before the first look.
const workQuantum = 1 << 16

// worked counts n units of a builtin's work, and watches the run (SCRIPT KILL, BUSY, the
// memory limit) each time workQuantum of them have been done: a long builtin is stopped
// in its loop, not after it.
func (st *state) worked(L *lua.LState, n int) {
	if st.run.work += n; st.run.work >= workQuantum {
		st.run.work = 0
		st.watch(L)
	}
}

// chunkID is Lua 5.1's luaO_chunkid: how a chunk's name shows in error positions.
func chunkID(source string) string {
	const idSize = 60
	switch {
	case strings.HasPrefix(source, "="):
		s := source[1:]
		if len(s) > idSize-1 {
			s = s[:idSize-1]
		}
		return s
	case strings.HasPrefix(source, "@"):
		s := source[1:]
		if len(s) > idSize-1 {
			s = "..." + s[len(s)-(idSize-1-3):]
		}
		return s
	}
	line := source
	if i := strings.IndexAny(line, "\n\r"); i >= 0 {
		line = line[:i]
	}
	room := idSize - len(`[string "..."]`) - 1
	if len(line) > room || len(line) < len(source) {
		if len(line) > room {
			line = line[:room]
		}
		return `[string "` + line + `..."]`
	}
	return `[string "` + line + `"]`
}

// stopIfStopped raises the run's stop again: once the host stopped a script (to run it
// again, or SCRIPT KILL), no pcall may swallow that.
func (st *state) stopIfStopped(L *lua.LState) {
	switch {
	case st.run.abort != nil:
		L.Error(st.run.abort, 0)
	case st.run.stop != nil:
		L.Error(stopValue, 0)
	}
}

// stopValue is the error a stopped script unwinds with.
var stopValue = lua.LString("script stopped")

// isStringLike is lua_isstring: a string or a number.
func isStringLike(v lua.LValue) bool {
	switch v.(type) {
	case lua.LString, lua.LNumber:
		return true
	}
	return false
}

// luaString is lua_tostring of a string or number.
func luaString(v lua.LValue) lua.LString {
	if n, ok := v.(lua.LNumber); ok {
		return lua.LString(luaNumberString(float64(n)))
	}
	s, _ := v.(lua.LString)
	return s
}

// luaToString is Lua 5.1's tostring: numbers as "%.14g".
func (st *state) luaToString(L *lua.LState) int {
	v := L.CheckAny(1)
	switch v := v.(type) {
	case lua.LNumber:
		L.Push(st.box.luaNumber(float64(v)))
		return 1
	case lua.LString:
		L.Push(v)
		return 1
	}
	L.Push(L.ToStringMeta(v))
	return 1
}

// luaToNumber is Lua 5.1's tonumber: strtod in base 10, strtoul in the others.
func (st *state) luaToNumber(L *lua.LState) int {
	v := L.CheckAny(1)
	base := 10
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		base = checkInt(L, 2)
	}
	if base == 10 {
		switch v := v.(type) {
		case lua.LNumber:
			L.Push(v)
			return 1
		case lua.LString:
			if f, ok := str2number(string(v)); ok {
				L.Push(st.box.number(f))
				return 1
			}
		}
		L.Push(lua.LNil)
		return 1
	}
	if base < 2 || base > 36 {
		L.ArgError(2, "base out of range")
	}
	s := ""
	switch v := v.(type) {
	case lua.LString:
		s = cString(string(v)) // read as C reads it, up to a NUL
	case lua.LNumber:
		s = luaNumberString(float64(v))
	default:
		L.ArgError(1, "string expected, got "+v.Type().String())
	}
	f, n := strtoul(s, base)
	if n > 0 {
		for n < len(s) && isSpace(s[n]) {
			n++
		}
		if n == len(s) {
			L.Push(lua.LNumber(f))
			return 1
		}
	}
	L.Push(lua.LNil)
	return 1
}

// luaErrorFn is Lua 5.1's error: a string or number message gets the position of the
// level's function.
func luaErrorFn(L *lua.LState) int {
	obj := L.Get(1)
	level := optInt(L, 2, 1)
	switch v := obj.(type) {
	case lua.LString, lua.LNumber:
		msg := string(luaString(v))
		if level > 0 {
			msg = where(L, level) + msg
		}
		L.Error(lua.LString(msg), 0)
	}
	L.Error(obj, 0)
	return 0
}

// where is luaL_where: "chunk:line: " of the function at level, or "".
func where(L *lua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.CurrentLine <= 0 {
		return ""
	}
	return dbg.Source + ":" + itoa(dbg.CurrentLine) + ": "
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// maxString bounds a string that string.rep or string.format builds, as proto-max-bulk-len
// bounds a value: past it the script fails rather than the server running out of memory.
const maxString = 512 << 20

// stringRep is string.rep with the size checked first. It copies the string so far onto
// its end, at most repChunk bytes at a time, and counts the work: a string of 500 MB
// takes 100 ms, which SCRIPT KILL interrupts.
func (st *state) stringRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := checkInt(L, 2)
	if n <= 0 || len(s) == 0 {
		L.Push(lua.LString(""))
		return 1
	}
	total := int64(len(s)) * int64(n)
	if total > maxString {
		L.RaiseError("not enough memory")
	}
	st.reserve(L, int(total))
	b := make([]byte, total)
	done := copy(b, s)
	// b[:done] is whole copies of s, so any prefix of it that is whole copies too may be
	// copied after it.
	step := max(len(s), repChunk/len(s)*len(s))
	for done < len(b) {
		k := copy(b[done:], b[:min(done, step)])
		done += k
		st.worked(L, k)
	}
	L.Push(lua.LString(unsafe.String(&b[0], len(b))))
	return 1
}

// stringChar is string.char(...): the string of those byte values, each one a C int that
// must be 0 to 255 ("bad argument #1 to 'char' (invalid value)"; gopher-lua's kept the low
// byte).
func stringChar(L *lua.LState) int {
	n := L.GetTop()
	b := make([]byte, n)
	for i := 1; i <= n; i++ {
		c := checkInt(L, i)
		if c < 0 || c > 255 {
			L.ArgError(i, "invalid value")
		}
		b[i-1] = byte(c)
	}
	L.Push(lua.LString(unsafe.String(unsafe.SliceData(b), n)))
	return 1
}

// repChunk is about the most string.rep copies between two counts of its work.
const repChunk = 1 << 20

// mathMinMax is math.max or math.min as Lua 5.1 computes them: a plain comparison loop,
// so that NaN falls as C's does.
func (st *state) mathMinMax(isMax bool) lua.LGFunction {
	return func(L *lua.LState) int {
		m := checkNumber(L, 1)
		for i := 2; i <= L.GetTop(); i++ {
			d := checkNumber(L, i)
			if (isMax && d > m) || (!isMax && d < m) {
				m = d
			}
		}
		L.Push(st.box.number(m))
		return 1
	}
}

// sha1hex is redis.sha1hex's digest, and a script's.
func sha1hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// stringBytes views s as bytes without copying. The commands a script calls never write
// into their arguments.
func stringBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
