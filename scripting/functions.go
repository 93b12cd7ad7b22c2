package scripting

import (
	"errors"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Functions (FUNCTION LOAD, FCALL) as Redis 7.0 has them. A library is Lua code after a
// "#!lua name=<lib>" line; loading it runs the code once, in a sandbox whose only global
// is a small redis table (register_function, log, the LOG_* levels and the version), and
// each redis.register_function call names a function: its callback, flags and
// description. A loaded library is a Library (its code compiled once) and the functions
// it registered; a Libraries is a set of them with their functions by name, a value that
// never changes (a change makes a new set), so FCALL reads it without a lock.
//
// Redis keeps one Lua state for all functions; here each interpreter of the engine's pool
// runs a library's code the first time it calls one of its functions, and keeps the
// callbacks it registered (state.libs). So a library's locals are per interpreter: a
// function that counts its calls in an upvalue counts those of its interpreter. Redis
// documents that functions must not keep state that way.
//
// The code's globals are one table per interpreter (fenv) that reads through its
// metatable: to the load sandbox while the code runs, to the interpreter's globals after,
// as Redis swaps the __index of its globals. Helpers the code made while loading thus see
// redis.call when a function runs, and never register_function.

// Library is a loaded library.
type Library struct {
	Name      string
	Code      string      // all of it, the shebang line included: what FUNCTION LIST WITHCODE shows
	Functions []*Function // by name
	code      compiled
}

// Function is a function a library registered.
type Function struct {
	Name        string
	Description string
	HasDesc     bool // a description was given (FUNCTION LIST shows null otherwise)
	Flags       Flags
	Lib         *Library
}

// FlagNames are the flags' names, in Redis's order (FUNCTION LIST shows them so).
var FlagNames = []struct {
	Name string
	Flag Flags
}{{"no-writes", NoWrites}, {"allow-oom", AllowOOM}, {"allow-stale", AllowStale}, {"no-cluster", NoCluster}, {"allow-cross-slot-keys", AllowCrossSlot}}

// LoadTimeout bounds how long a library's code may run while it loads (Redis's 500 ms).
const LoadTimeout = 500 * time.Millisecond

// Libraries is a set of libraries and their functions. The zero value is empty.
type Libraries struct {
	byName map[string]*Library
	funcs  map[string]*Function // by lower-case name: FCALL finds a function in any case
}

// Len returns the number of libraries and of functions.
func (ls *Libraries) Len() (libs, funcs int) {
	if ls == nil {
		return 0, 0
	}
	for _, l := range ls.byName {
		funcs += len(l.Functions)
	}
	return len(ls.byName), funcs
}

// Function returns the function named name in any case, or nil.
func (ls *Libraries) Function(name []byte) *Function {
	if ls == nil {
		return nil
	}
	if f := ls.funcs[string(name)]; f != nil {
		return f
	}
	return ls.funcs[strings.ToLower(string(name))]
}

// Library returns the library named name, or nil.
func (ls *Libraries) Library(name string) *Library {
	if ls == nil {
		return nil
	}
	return ls.byName[name]
}

// List returns the libraries, by name.
func (ls *Libraries) List() []*Library {
	if ls == nil {
		return nil
	}
	out := make([]*Library, 0, len(ls.byName))
	for _, l := range ls.byName {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// with returns a copy of ls with lib added, without the library named drop.
func (ls *Libraries) with(add []*Library, drop map[string]bool) *Libraries {
	next := &Libraries{byName: map[string]*Library{}, funcs: map[string]*Function{}}
	link := func(l *Library) {
		next.byName[l.Name] = l
		for _, f := range l.Functions {
			if k := strings.ToLower(f.Name); next.funcs[k] == nil {
				next.funcs[k] = f
			}
		}
	}
	if ls != nil {
		for name, l := range ls.byName {
			if !drop[name] {
				link(l)
			}
		}
	}
	for _, l := range add {
		link(l)
	}
	return next
}

// collision returns Redis's error when a function of libs has the name of one in ls
// (but those of the libraries in drop), or nil.
func (ls *Libraries) collision(libs []*Library, drop map[string]bool) error {
	for _, l := range libs {
		for _, f := range l.Functions {
			if g := ls.Function([]byte(f.Name)); g != nil && !drop[g.Lib.Name] {
				return errors.New("Function " + f.Name + " already exists")
			}
		}
	}
	return nil
}

// Without returns ls without the library named name, and whether it was there.
func (ls *Libraries) Without(name string) (*Libraries, bool) {
	if ls.Library(name) == nil {
		return ls, false
	}
	return ls.with(nil, map[string]bool{name: true}), true
}

// Join returns ls with libs added, as FUNCTION RESTORE's APPEND (replace false) and
// REPLACE join them, with Redis's errors on a collision.
func (ls *Libraries) Join(libs []*Library, replace bool) (*Libraries, error) {
	drop := map[string]bool{}
	for _, l := range libs {
		if ls.Library(l.Name) != nil {
			if !replace {
				return nil, errors.New("Library " + l.Name + " already exists")
			}
			drop[l.Name] = true
		}
	}
	if err := ls.collision(libs, drop); err != nil {
		return nil, err
	}
	return ls.with(libs, drop), nil
}

// LoadLibrary compiles and loads a library's code into ls (FUNCTION LOAD [REPLACE]), with
// Redis's checks in Redis's order and its errors (without their ERR code). timeout bounds
// the run of its code; 0 for none (a library the primary or the disk gives).
func (e *Engine) LoadLibrary(code []byte, ls *Libraries, replace bool, timeout time.Duration) (*Libraries, *Library, error) {
	name, body, err := parseLibraryMeta(string(code))
	if err != nil {
		return nil, nil, err
	}
	old := ls.Library(name)
	if old != nil && !replace {
		return nil, nil, errors.New("Library '" + name + "' already exists")
	}
	lib := &Library{Name: name, Code: string(code)}
	c, msg := compileChunk(body, "user_function", false) // its globals change while it loads
	if msg != "" {
		return nil, nil, errors.New("Error compiling function: " + msg)
	}
	lib.code = c
	st := e.get(0)
	_, fns, err := st.loadLibrary(lib, timeout)
	e.put(st, 0)
	if err != nil {
		return nil, nil, err
	}
	if len(fns) == 0 {
		return nil, nil, errors.New("No functions registered")
	}
	lib.Functions = fns
	drop := map[string]bool{}
	if old != nil {
		drop[name] = true
	}
	if err := ls.collision([]*Library{lib}, drop); err != nil {
		return nil, nil, err
	}
	return ls.with([]*Library{lib}, drop), lib, nil
}

// parseLibraryMeta reads the "#!<engine> name=<lib>" line as Redis 7.0 does, and returns
// the library's name and the code after the line (its newline kept, so lines count from
// the shebang's).
func parseLibraryMeta(code string) (name, body string, err error) {
	if !strings.HasPrefix(code, "#!") {
		return "", "", errors.New("Missing library metadata")
	}
	end := strings.IndexByte(code, '\n')
	if end < 0 {
		return "", "", errors.New("Invalid library metadata")
	}
	parts, ok := splitArgs(code[:end])
	if !ok || len(parts) == 0 {
		return "", "", errors.New("Invalid library metadata")
	}
	engine := ""
	if len(parts[0]) > 2 {
		engine = parts[0][2:]
	}
	named := false
	for _, p := range parts[1:] {
		if len(p) >= 5 && strings.EqualFold(p[:5], "name=") {
			if named {
				return "", "", errors.New("Invalid metadata value, name argument was given multiple times")
			}
			name, named = p[5:], true
			continue
		}
		return "", "", errors.New("Invalid metadata value given: " + cString(p))
	}
	switch {
	case !named:
		return "", "", errors.New("Library name was not given")
	case !validName(name):
		return "", "", errors.New("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	case !strings.EqualFold(engine, "lua"):
		return "", "", errors.New("Engine '" + cString(engine) + "' not found")
	}
	return name, code[end:], nil
}

// validName reports whether a library or function name is [a-zA-Z0-9_]+.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// splitArgs splits a line as Redis's sdssplitargs does: blanks separate arguments,
// "double quotes" take \n, \r, \t, \b, \a and \xHH escapes, 'single quotes' only \'; a
// closing quote must end its argument. ok is false for unbalanced quotes.
func splitArgs(line string) (args []string, ok bool) {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' }
	hex := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return args, true
		}
		var cur []byte
		inDouble, inSingle := false, false
		for done := false; !done; {
			switch {
			case inDouble:
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x':
					hi, ok1 := hex(line[i+2])
					lo, ok2 := hex(line[i+3])
					if ok1 && ok2 {
						cur = append(cur, hi<<4|lo)
						i += 3
					} else {
						cur = append(cur, c)
					}
				case c == '\\' && i+1 < len(line):
					i++
					switch e := line[i]; e {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, e)
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			case inSingle:
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			default:
				if i >= len(line) {
					done = true
					continue
				}
				switch c := line[i]; {
				case isSpace(c):
					done = true
				case c == '"':
					inDouble = true
				case c == '\'':
					inSingle = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		args = append(args, string(cur))
	}
}

// registering is what a library's load collects: its callbacks and its functions.
type registering struct {
	callbacks map[string]*lua.LFunction
	fns       []*Function
	lib       *Library
}

// functionEnv makes the interpreter's globals of library code, and the load sandbox's
// redis table, the first time a library loads in it.
func (st *state) functionEnv() {
	if st.fenv != nil {
		return
	}
	L := st.L
	api := L.CreateTable(0, 8)
	api.RawSetString("register_function", L.NewFunction(st.registerFunction))
	api.RawSetString("log", L.NewFunction(st.log))
	for name, n := range map[string]int{"LOG_DEBUG": logDebug, "LOG_VERBOSE": logVerbose, "LOG_NOTICE": logNotice, "LOG_WARNING": logWarning, "REDIS_VERSION_NUM": versionNum} {
		api.RawSetString(name, lua.LNumber(n))
	}
	api.RawSetString("REDIS_VERSION", lua.LString(Version))
	missing := L.CreateTable(0, 2) // a name that is not there fails, in the table as in the globals
	missing.RawSetString("__index", L.NewFunction(missingGlobal))
	missing.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(api, missing)
	g := L.CreateTable(0, 1)
	g.RawSetString("redis", st.protect(api))
	L.SetMetatable(g, missing)
	st.loadEnv = st.protect(g)
	st.fenv = st.protect(st.g)                 // its metatable's __index is switched while a library loads
	st.fmeta = st.fenv.Metatable.(*lua.LTable) // the real one: GetMetatable gives the decoy
	st.libs = make(map[*Library]map[string]*lua.LFunction)
}

// loadLibrary runs lib's code in this interpreter and returns the callbacks and the
// functions it registered. Its error is Redis's "Error registering functions: ...".
func (st *state) loadLibrary(lib *Library, timeout time.Duration) (map[string]*lua.LFunction, []*Function, error) {
	st.functionEnv()
	L := st.L
	reg := &registering{callbacks: map[string]*lua.LFunction{}, lib: lib}
	st.reg = reg
	st.fmeta.RawSetString("__index", st.loadEnv)
	st.run = run{resp: 2, start: time.Now()}
	if timeout > 0 {
		st.run.deadline = st.run.start.Add(timeout)
	}
	fn := st.instantiate(lib.code)
	fn.Env = st.fenv
	L.Push(fn)
	err := L.PCall(0, 0, st.pcallH)
	st.fmeta.RawSetString("__index", st.g)
	st.reg = nil
	abort := st.run.abort
	st.run = run{}
	L.SetTop(0)
	if abort != nil {
		err = &lua.ApiError{Object: abort}
	}
	if err != nil {
		return nil, nil, errors.New("Error registering functions: " + loadErrorText(errorObject(err)))
	}
	sort.Slice(reg.fns, func(i, j int) bool { return reg.fns[i].Name < reg.fns[j].Name })
	return reg.callbacks, reg.fns, nil
}

// loadErrorText is an error of a library's load as Redis words it: a table's err field,
// or ERR and the message.
func loadErrorText(obj lua.LValue) string {
	if t, ok := obj.(*lua.LTable); ok {
		if e := t.RawGetString("err"); isStringLike(e) {
			return cString(string(luaString(e)))
		}
		return "ERR unknown error"
	}
	if isStringLike(obj) {
		return "ERR " + cString(string(luaString(obj)))
	}
	return "ERR unknown error"
}

// registerFunction is redis.register_function, in its two forms: (name, callback), or a
// table of named arguments {function_name=, callback=, flags={...}, description=}.
func (st *state) registerFunction(L *lua.LState) int {
	reg := st.reg
	if reg == nil {
		raise(L, "redis.register_function can only be called on FUNCTION LOAD command")
	}
	var f Function
	var cb *lua.LFunction
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			raise(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		named := false
		for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
			if !isStringLike(k) {
				raise(L, "named argument key given to redis.register_function is not a string")
			}
			switch strings.ToLower(string(luaString(k))) {
			case "function_name":
				if !isStringLike(v) {
					raise(L, "function_name argument given to redis.register_function must be a string")
				}
				f.Name, named = string(luaString(v)), true
			case "description":
				if !isStringLike(v) {
					raise(L, "description argument given to redis.register_function must be a string")
				}
				f.Description, f.HasDesc = string(luaString(v)), true
			case "callback":
				fn, ok := v.(*lua.LFunction)
				if !ok {
					raise(L, "callback argument given to redis.register_function must be a function")
				}
				cb = fn
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					raise(L, "flags argument to redis.register_function must be a table representing function flags")
				}
				flags, ok := readFlags(ft)
				if !ok {
					raise(L, "unknown flag given")
				}
				f.Flags = flags
			default:
				raise(L, "unknown argument given to redis.register_function")
			}
		}
		if !named {
			raise(L, "redis.register_function must get a function name argument")
		}
		if cb == nil {
			raise(L, "redis.register_function must get a callback argument")
		}
	case 2:
		if !isStringLike(L.Get(1)) {
			raise(L, "first argument to redis.register_function must be a string")
		}
		fn, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			raise(L, "second argument to redis.register_function must be a function")
		}
		f.Name, cb = string(luaString(L.Get(1))), fn
	default:
		raise(L, "wrong number of arguments to redis.register_function")
	}
	if !validName(f.Name) {
		raise(L, "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	if reg.callbacks[f.Name] != nil {
		raise(L, "Function already exists in the library")
	}
	f.Lib = reg.lib
	reg.callbacks[f.Name] = cb
	reg.fns = append(reg.fns, &f)
	return 0
}

// readFlags reads a flags table's array part up to its first nil, as Redis does.
func readFlags(t *lua.LTable) (Flags, bool) {
	var flags Flags
	for i := 1; ; i++ {
		v := t.RawGetInt(i)
		if v == lua.LNil {
			return flags, true
		}
		if !isStringLike(v) {
			return 0, false
		}
		name := string(luaString(v))
		found := false
		for _, fl := range FlagNames {
			if strings.EqualFold(fl.Name, name) {
				flags |= fl.Flag
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
}

// maxStateLibraries bounds the libraries an interpreter keeps loaded; past it it starts over.
const maxStateLibraries = 1024

// callbacks returns this interpreter's callbacks of lib, loading it the first time.
func (st *state) callbacks(lib *Library) (map[string]*lua.LFunction, error) {
	st.functionEnv()
	if gen := st.e.libGen.Load(); gen != st.libGen {
		clear(st.libs)
		st.libGen = gen
	}
	if cbs := st.libs[lib]; cbs != nil {
		return cbs, nil
	}
	if len(st.libs) >= maxStateLibraries {
		clear(st.libs)
	}
	cbs, _, err := st.loadLibrary(lib, 0)
	if err != nil {
		return nil, err
	}
	st.libs[lib] = cbs
	return cbs, nil
}

// LibrariesChanged tells the engine that libraries were removed or replaced: interpreters
// drop the libraries they loaded, and load again those they call.
func (e *Engine) LibrariesChanged() { e.libGen.Add(1) }

// CallFunction runs f with the call's keys and arguments (FCALL) and appends its reply
// to dst, as Run does for a script; its errors name the function ("script: f, on
// @user_function:3.").
func (e *Engine) CallFunction(dst []byte, f *Function, call *Call) ([]byte, error) {
	st := e.get(call.Slot)
	defer e.put(st, call.Slot)
	cbs, err := st.callbacks(f.Lib)
	if err != nil {
		return appendErrorText(dst, "ERR "+err.Error()), nil
	}
	fn := cbs[f.Name]
	L := st.L
	L.Env = st.gv
	keys := L.CreateTable(len(call.Keys), 0)
	for i, k := range call.Keys {
		keys.RawSetInt(i+1, lua.LString(k))
	}
	args := L.CreateTable(len(call.Args), 0)
	for i, a := range call.Args {
		args.RawSetInt(i+1, lua.LString(a))
	}
	call.kill.Store(false)
	st.run = run{host: call.Host, call: call, resp: 2, start: call.started()}
	st.errInfo = errInfo{}
	L.Push(fn)
	L.Push(keys)
	L.Push(args)
	err = L.PCall(2, 1, st.handler)
	return st.finish(dst, err, f.Name, call.Proto)
}

// finish appends the reply of the run that ended with err, and readies the interpreter
// for the next; name is the script's digest or the function's name, as its errors show it.
func (st *state) finish(dst []byte, err error, name string, proto int) ([]byte, error) {
	L := st.L
	stop := st.run.stop
	mark := len(dst)
	switch {
	case stop != nil:
	case st.run.abort != nil:
		dst = st.appendError(dst, st.run.abort, name)
	case err != nil:
		dst = st.appendError(dst, errorObject(err), name)
	default:
		dst = st.appendLuaReply(dst, L.Get(-1), proto, st.run.resp, 2)
	}
	L.SetTop(0)
	st.run = run{}
	st.recycle()
	if stop != nil {
		return dst[:mark], stop
	}
	return dst, nil
}
