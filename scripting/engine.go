package scripting

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Host runs the commands a script calls: the server, which this package never imports.
type Host interface {
	// Call runs args as a command on behalf of the script and appends its reply to dst, in
	// RESP2 or RESP3 as resp says. What Redis refuses before a command runs (an unknown
	// command, one not allowed from scripts, the ACL) is an error reply too: "-ERR ...".
	// A non-nil error stops the script at once, whatever it catches: the host wants it
	// run again (a key it cannot lock yet) or killed; Run then returns that error.
	Call(dst []byte, args [][]byte, resp int) ([]byte, error)
	// Allowed reports whether the caller's user may run args (redis.acl_check_cmd); known
	// is false when no such command exists.
	Allowed(args [][]byte) (allowed, known bool)
	// Log writes redis.log's message at a Redis log level (LOG_DEBUG 0 to LOG_WARNING 3).
	Log(level int, msg string)
	// Busy tells that the script has run for Call.BusyAfter (busy-reply-threshold): from
	// now on it may be killed. Called once a run, from the script's goroutine.
	Busy()
}

// Script is a script in the cache: compiled once, run by every interpreter.
type Script struct {
	SHA  string // the SHA1 of Body, in lower-case hex
	Body string
	// Shebang is set when the body starts with "#!lua": Redis 7 then takes the flags from
	// that line (NoWrites...) instead of deciding write by write.
	Shebang bool
	Flags   Flags
	code    compiled // the script's chunk
	native  Native   // the script as Go code, when Engine.Natives knows its digest
}

// Native runs a script the engine recognises by its digest as Go code, with the effects
// and the reply the interpreter's run would have, and appends the reply to dst. It calls
// the same commands through call.Host, with the same arguments, as the script's
// redis.call would. When done is false it declined (arguments, a stored value or a reply
// it does not reproduce to the byte) before any command that changes anything, and the
// interpreter runs the script instead; out is then dst as given. A non-nil error is the
// host's, as Run returns it.
type Native func(dst []byte, call *Call) (out []byte, done bool, err error)

// Direct runs, on the key a native script declared first (Call.Keys[0]), the commands the
// script calls, as Host.Call would (the same effects, the same values replied, each
// counted as the command it is) but without a command's dispatch and without its reply
// written and read back: the host holds the key's shard for the whole run. A host offers
// it (Call.Direct) only where no check Host.Call makes before a command could refuse one
// (the ACL, a read-only script or replica, maxmemory, min-replicas-to-write, a reserved
// key); a Native uses it when it is there. args is each command as the script calls it,
// for SLOWLOG and MONITOR. A command that fails (GET of a hash, INCRBY of a word) is
// neither run nor counted: the Native declines, or, past a write, replies the script's
// error with the command's (the error's text).
type Direct interface {
	Time(args [][]byte) (sec, usec int64)
	// Get is GET: found false for no key; ok false when the key holds no string.
	Get(args [][]byte) (val []byte, found, ok bool)
	PTTL(args [][]byte) int64
	// Set is SET key val PX ms, with NX when nx (EX n is PX n*1000), ms from 1 to
	// MaxDirectMs: false when NX found the key.
	Set(args [][]byte, val []byte, ms int64, nx bool) (bool, error)
	IncrBy(args [][]byte, by int64) (int64, error) // INCRBY, and INCR by 1
	// Expire is EXPIRE key seconds, from 1 to 10^9: false for no key.
	Expire(args [][]byte, seconds int64) (bool, error)
}

// MaxDirectMs is the longest expiry Direct.Set takes (about 31 years): past it, SET's own
// checks decide.
const MaxDirectMs = 1e12

// Flags are the flags a "#!lua flags=..." line gives.
type Flags uint8

// The script flags of Redis 7.
const (
	NoWrites Flags = 1 << iota
	AllowOOM
	AllowStale
	NoCluster
	AllowCrossSlot
)

var flagNames = map[string]Flags{"no-writes": NoWrites, "allow-oom": AllowOOM, "allow-stale": AllowStale, "no-cluster": NoCluster, "allow-cross-slot-keys": AllowCrossSlot}

// Engine is the script cache and a pool of interpreters.
//
// Every EVALSHA reads the cache and takes an interpreter, from every core: the cache is a
// map no one writes (Load and Flush publish a new one, rarely), and the pool is split in
// shards, each caller drawing from the one its Call.Slot names, so that cores do not
// queue on one lock or pass one cache line around.
type Engine struct {
	cache atomic.Pointer[scriptCache]
	mu    sync.Mutex // serializes Load's and Flush's new caches

	flushes atomic.Uint64 // SCRIPT FLUSH count: an interpreter's compiled functions older than it are dropped
	libGen  atomic.Uint64 // LibrariesChanged count: an interpreter's loaded libraries older than it are dropped

	pools []statePool

	closing atomic.Bool // Close was called: running scripts are killed
	// MemoryLimit is how much a script may grow the heap by before it fails with
	// errScriptMemory; 0 for no limit. Set before the first run.
	MemoryLimit uint64
	// Natives returns the Go code of the script with a digest, or nil for the scripts that
	// take the interpreter. Set before the first Load.
	Natives func(digest [20]byte) Native

	interpretOnly atomic.Bool // SetNative(false): every script takes the interpreter
}

// SetNative turns on or off the native runs of the scripts Natives knows (on by default):
// off, every script takes the interpreter, as to compare both.
func (e *Engine) SetNative(on bool) { e.interpretOnly.Store(!on) }

// NativeOn reports whether SetNative left native runs on.
func (e *Engine) NativeOn() bool { return !e.interpretOnly.Load() }

// DefaultMemoryLimit is the memory a script may take: gopher-lua cannot count what a
// script allocates, so the limit is on the heap's growth while it runs, read every few
// hundred loop iterations or commands, every 64 KB a builtin writes, and before any string
// of 1 MB or more is made (reserve), with the garbage collected before a script is failed
// for it. Resident memory stays within the limit, the heap at the run's start and the
// collector's garbage: issue 40's script that kept 3.4 GB of strings fails at 960 MB, 994
// MB resident. Other clients' allocations count too: the limit
// is set far above what any limiter needs, to stop a runaway script before it takes the
// server, not to meter scripts.
const DefaultMemoryLimit = 1 << 30

// Close kills the scripts running and any started from now on: the server is stopping
// (SHUTDOWN NOSAVE must end even a script in an endless loop).
func (e *Engine) Close() { e.closing.Store(true) }

// scriptCache is the cached scripts by digest, and their bodies' bytes.
type scriptCache struct {
	scripts map[[20]byte]*Script
	bodies  int64
}

// statePool is one shard of idle interpreters, on cache lines of its own: 128 bytes, as the
// adjacent-line prefetcher of x86 fetches lines in pairs (a native run writes natives at
// every call, and its neighbour's callers theirs).
type statePool struct {
	mu    sync.Mutex // guards idle
	idle  []*state
	calls int64 // interpreter runs from this shard; guarded by mu
	// natives are the runs of this shard's callers that native code served; fallbacks
	// those it declined, which the interpreter ran (and calls counts).
	natives, fallbacks atomic.Int64
	_                  [128 - 56]byte
}

// poolShardIdle bounds each shard's idle interpreters.
const poolShardIdle = 4

// New returns an empty engine.
func New() *Engine {
	e := &Engine{pools: make([]statePool, 2*runtime.GOMAXPROCS(0)), MemoryLimit: DefaultMemoryLimit}
	e.cache.Store(&scriptCache{scripts: map[[20]byte]*Script{}})
	return e
}

// Digest parses a script's SHA1 as EVALSHA gives it: 40 hex digits, in any case.
func Digest(sha []byte) (d [20]byte, ok bool) {
	if len(sha) != 40 {
		return d, false
	}
	_, err := hex.Decode(d[:], sha)
	return d, err == nil
}

// Lookup returns the cached script with digest d, or nil.
func (e *Engine) Lookup(d [20]byte) *Script { return e.cache.Load().scripts[d] }

// A Memo remembers a caller's last script found by its hex digest (LookupHex): a client
// sends the same EVALSHA over and over.
type Memo struct {
	sha   [40]byte
	cache *scriptCache // the cache it was found in: one Load or Flush later, it is looked up again
	s     *Script
}

// LookupHex returns the cached script whose digest sha is in hex (EVALSHA's argument, in
// any case), or nil, through m.
func (e *Engine) LookupHex(sha []byte, m *Memo) *Script {
	c := e.cache.Load()
	if m.cache == c && string(m.sha[:]) == string(sha) {
		return m.s
	}
	d, ok := Digest(sha)
	if !ok {
		return nil
	}
	s := c.scripts[d]
	if s != nil {
		copy(m.sha[:], sha)
		m.cache, m.s = c, s
	}
	return s
}

// Load returns the script with this body, compiling and caching it the first time. A
// compile error is Redis's text, without the ERR code.
func (e *Engine) Load(body []byte) (*Script, error) {
	d := sha1.Sum(body)
	if s := e.Lookup(d); s != nil {
		return s, nil
	}
	s, err := compile(string(body), hex.EncodeToString(d[:]))
	if err != nil {
		return nil, err
	}
	if e.Natives != nil && !s.Shebang {
		s.native = e.Natives(d)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.cache.Load()
	if s2 := old.scripts[d]; s2 != nil {
		return s2, nil
	}
	// A new map with the script added: copying the cache costs at each new script what
	// readers save at every call. Scripts are a few, loaded once.
	next := &scriptCache{scripts: make(map[[20]byte]*Script, len(old.scripts)+1), bodies: old.bodies + int64(len(s.Body))}
	for k, v := range old.scripts {
		next.scripts[k] = v
	}
	next.scripts[d] = s
	e.cache.Store(next)
	return s, nil
}

// Flush empties the cache (SCRIPT FLUSH).
func (e *Engine) Flush() {
	e.mu.Lock()
	e.cache.Store(&scriptCache{scripts: map[[20]byte]*Script{}})
	e.mu.Unlock()
	e.flushes.Add(1)
}

// Stats are the engine's figures for INFO.
type Stats struct {
	Scripts    int   // cached scripts
	BodyBytes  int64 // their bodies' bytes
	States     int   // idle interpreters
	Calls      int64 // interpreter runs since start
	Natives    int64 // runs native code served since start
	Fallbacks  int64 // runs native code declined, which the interpreter ran (counted in Calls too)
	StateBytes int64 // an estimate of the idle interpreters' memory
}

// Stats returns the engine's figures.
func (e *Engine) Stats() Stats {
	c := e.cache.Load()
	st := Stats{Scripts: len(c.scripts), BodyBytes: c.bodies}
	for i := range e.pools {
		p := &e.pools[i]
		p.mu.Lock()
		st.States += len(p.idle)
		st.Calls += p.calls
		p.mu.Unlock()
		st.Natives += p.natives.Load()
		st.Fallbacks += p.fallbacks.Load()
	}
	st.StateBytes = int64(st.States) * stateBytes
	return st
}

// stateBytes is about what an idle interpreter holds: its stacks and its libraries.
const stateBytes = 64 << 10

// compile compiles body once for all interpreters, as Redis 7.0 does: a chunk named
// "@user_script", after the shebang line if any (whose line still counts).
func compile(body, sha string) (*Script, error) {
	s := &Script{SHA: sha, Body: body}
	code := body
	if strings.HasPrefix(body, "#!") {
		line := body
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			line = body[:i]
		}
		if err := s.parseShebang(line); err != nil {
			return nil, err
		}
		code = body[len(line):]
	}
	c, msg := compileChunk(code, "user_script", true)
	if msg != "" {
		return nil, errors.New("Error compiling script (new function): " + msg)
	}
	s.code = c
	return s, nil
}

// parseShebang reads "#!lua [flags=a,b]" as Redis 7.0 does, with its errors.
func (s *Script) parseShebang(line string) error {
	s.Shebang = true
	parts := splitNonEmptyRuns(line)
	if len(parts) == 0 {
		return errors.New("Invalid engine in script shebang")
	}
	if parts[0] != "#!lua" {
		return errors.New("Unexpected engine in script shebang: " + parts[0])
	}
	for _, p := range parts[1:] {
		flags, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return errors.New("Unknown lua shebang option: " + p)
		}
		if flags == "" {
			continue
		}
		for _, f := range strings.Split(flags, ",") {
			bit, ok := flagNames[f]
			if !ok {
				return errors.New("Unexpected flag in script shebang: " + f)
			}
			s.Flags |= bit
		}
	}
	return nil
}

// splitNonEmptyRuns splits the shebang line on runs of blanks, as sdssplitargs does.
func splitNonEmptyRuns(s string) []string { return strings.Fields(s) }

// get takes an idle interpreter from the shard slot names, or builds one.
func (e *Engine) get(slot uint64) *state {
	p := &e.pools[slot%uint64(len(e.pools))]
	p.mu.Lock()
	p.calls++
	if n := len(p.idle); n > 0 {
		st := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return st
	}
	p.mu.Unlock()
	return newState(e)
}

// put returns an interpreter to the shard slot names, unless it is full.
func (e *Engine) put(st *state, slot uint64) {
	p := &e.pools[slot%uint64(len(e.pools))]
	p.mu.Lock()
	if len(p.idle) < poolShardIdle {
		p.idle = append(p.idle, st)
		st = nil
	}
	p.mu.Unlock()
	if st != nil {
		st.L.Close()
	}
}

// function returns the interpreter's function for s, made the first time.
func (st *state) function(s *Script) *lua.LFunction {
	if gen := st.e.flushes.Load(); gen != st.gen {
		clear(st.fns)
		clear(st.sources)
		st.gen = gen
	}
	if fn := st.fns[s]; fn != nil {
		return fn
	}
	if len(st.fns) >= maxStateFunctions { // scripts built per call (values in the body) must not grow it for good
		clear(st.fns)
	}
	fn := st.instantiate(s.code)
	st.fns[s] = fn
	return fn
}

// maxStateFunctions bounds the scripts an interpreter keeps made; past it it starts over.
const maxStateFunctions = 1024

// Call is one run of a script.
type Call struct {
	Keys, Args [][]byte
	Host       Host
	Proto      int           // the caller's protocol, 2 or 3: the reply's
	BusyAfter  time.Duration // when Host.Busy is called; 0 for never
	Start      time.Time     // when the run started, for BusyAfter; the host reads the clock for it
	Slot       uint64        // which shard of the interpreter pool the run draws from: the caller's id
	Direct     Direct        // the host's commands on Keys[0] without dispatch, or nil
	// Scratch and ScratchBytes are Native code's to reuse from run to run of a Call kept
	// by its caller: the arguments of the commands it calls (Host.Call keeps none), so
	// that a run allocates nothing.
	Scratch      [][]byte
	ScratchBytes []byte

	kill atomic.Bool
}

// started is Start, or now when the host gave none.
func (c *Call) started() time.Time {
	if c.Start.IsZero() {
		return time.Now()
	}
	return c.Start
}

// Kill stops the run at its next loop, function call or command, as SCRIPT KILL does: it
// replies "Script killed by user with SCRIPT KILL...". Any goroutine may call it.
func (c *Call) Kill() { c.kill.Store(true) }

// Run runs s and appends its reply (an error reply when the script fails) to dst. It
// returns an error only when the host stopped the script (Host.Call); dst is then as it
// was.
func (e *Engine) Run(dst []byte, s *Script, call *Call) ([]byte, error) {
	if e.Native(s) {
		out, done, err := e.RunNative(dst, s, call)
		switch {
		case err != nil:
			return dst, err
		case done:
			return out, nil
		}
		e.pools[call.Slot%uint64(len(e.pools))].fallbacks.Add(1)
	}
	st := e.get(call.Slot)
	defer e.put(st, call.Slot)
	fn := st.function(s)
	L := st.L
	L.Env = st.gv
	fn.Env = st.g
	keys, argv := st.keys, st.argv
	st.keys = st.fill(st.keys, call.Keys, false)
	st.argv = st.fill(st.argv, call.Args, true)
	if st.keys != keys { // the globals keep the table of the last run otherwise: no script can rebind them
		st.g.RawSetString("KEYS", st.keys)
	}
	if st.argv != argv {
		st.g.RawSetString("ARGV", st.argv)
	}
	call.kill.Store(false)
	st.run = run{script: s, host: call.Host, call: call, resp: 2, start: call.started()}
	st.errInfo = errInfo{}
	L.Push(fn)
	err := L.PCall(0, 1, st.handler)
	return st.finish(dst, err, s.SHA, call.Proto)
}

// Native reports whether s runs as Go code: the engine knows its digest, and native runs
// are on.
func (e *Engine) Native(s *Script) bool { return s.native != nil && !e.interpretOnly.Load() }

// RunNative runs s as Go code, as Run does when Native(s): done is false when the code
// declined (Native), and dst is then as given; Run would go on with the interpreter.
func (e *Engine) RunNative(dst []byte, s *Script, call *Call) (out []byte, done bool, err error) {
	if out, done, err = s.native(dst, call); err != nil || !done {
		return dst, false, err
	}
	e.pools[call.Slot%uint64(len(e.pools))].natives.Add(1)
	return out, true, nil
}

// fill makes t the KEYS or ARGV table of items. The table of the last run is reused when
// that run left it as it was given (a script may add to it; the next must not see that).
// ARGV's strings come from a small cache: a limiter's arguments but its clock repeat.
func (st *state) fill(t *lua.LTable, items [][]byte, cache bool) *lua.LTable {
	if t == nil || !st.untouched(t) {
		t = st.L.CreateTable(len(items), 0)
	}
	for i, it := range items {
		var s lua.LValue
		if cache {
			s = st.interned(it)
		} else {
			s = st.box.bytesStr(it)
		}
		t.RawSetInt(i+1, s)
	}
	for i := len(items) + 1; i <= st.filled(t); i++ {
		t.RawSetInt(i, lua.LNil)
	}
	return t
}

// untouched reports whether a KEYS or ARGV table holds nothing but its array of strings,
// with no metatable.
func (st *state) untouched(t *lua.LTable) bool {
	if t.Metatable != lua.LNil {
		return false
	}
	n := t.Len()
	var last lua.LValue = lua.LNil
	if n > 0 {
		last = lua.LNumber(n)
	}
	k, _ := t.Next(last)
	return k == lua.LNil
}

// filled is how many items the table holds from 1 on.
func (st *state) filled(t *lua.LTable) int { return t.Len() }

// interned returns b as a Lua string, from the cache when it was seen lately: the value
// boxed once, so that setting it in ARGV allocates nothing. A miss is boxed in the state's
// blocks, whose bytes never change, and the cache's key is those bytes: an argument that
// is new on every call (a limiter's clock) allocates nothing either.
func (st *state) interned(b []byte) lua.LValue {
	if s, ok := st.strs[string(b)]; ok {
		return s
	}
	v := st.box.bytesStr(b)
	if len(b) > 64 {
		return v
	}
	if len(st.strs) >= 256 {
		clear(st.strs)
	}
	st.strs[string(v.(lua.LString))] = v
	return v
}

// run is what the redis API needs of the call in progress.
type run struct {
	script  *Script
	host    Host
	call    *Call
	resp    int         // redis.setresp: the protocol of the commands' replies
	stop    error       // set once the host stops the script
	abort   *lua.LTable // once killed or past its memory, the error it ends with
	memBase uint64      // the lowest heap seen in the run: its growth is counted from there
	gcAt    uint64      // the heap after the last collection checkMemory forced; 0 for none
	busy    bool        // Host.Busy was called
	start   time.Time
	// deadline ends a library's load with "FUNCTION LOAD timeout"; zero for none.
	deadline time.Time
	ticks    uint32 // tick calls: the clock is read every so many
	work     int    // a builtin's work since the run was last watched (worked)
	// nilArg is an argument past those given that a library function finds nil rather
	// than absent (struct.pack pushes a nil before its work, as a mark): its "bad argument"
	// error says "got nil", as there.
	nilArg int
}

// errorHandler notes where an uncaught error comes from, as Redis's __redis__err__handler
// does: the function that raised it, or its caller when that is a Go (C) function. An
// error the VM raised is worded as Lua 5.1's while its frame is still there.
func (st *state) errorHandler(L *lua.LState) int {
	obj := st.translate(L, L.Get(1))
	for level := 1; level <= 2; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.What == "G" && level == 1 {
			continue
		}
		if dbg.What != "G" {
			st.errInfo = errInfo{source: st.sourceOf(dbg.Source), line: dbg.CurrentLine}
		}
		break
	}
	L.Push(obj)
	return 1
}

// translate words an error value as Lua 5.1 would, from inside an error handler: when the
// function that raised it is Lua code (level 1), the VM raised it, and the failing
// instruction names the variable.
func (st *state) translate(L *lua.LState, obj lua.LValue) lua.LValue {
	s, ok := obj.(lua.LString)
	if !ok {
		return obj
	}
	if dbg, ok := L.GetStack(1); ok {
		if _, err := L.GetInfo("S", dbg, lua.LNil); err == nil && dbg.What != "G" {
			pos, text := splitPosition(string(s))
			return lua.LString(pos + vmError(L, 1, text))
		}
		pos, text := splitPosition(string(s))
		return lua.LString(st.argError(L, pos, luaMessage(text)))
	}
	return lua.LString(luaMessage(string(s)))
}

// argError rewrites a library function's "bad argument" error as Lua 5.1 words it, from
// an error handler while its frame (level 1) is there: an argument past those given is
// "no value", not nil; a function called from Go (pcall(string.rep)) has no name ('?')
// and its error no position, since in C Lua luaL_where finds a C function there.
func (st *state) argError(L *lua.LState, pos, text string) string {
	nilArg := st.run.nilArg
	st.run.nilArg = 0
	if !strings.HasPrefix(text, "bad argument #") {
		return pos + text
	}
	if n, ok := goFrameArgs(L, 1); ok {
		var arg int
		if _, err := fmt.Sscanf(text, "bad argument #%d", &arg); err == nil && arg > n && arg != nilArg {
			text = strings.Replace(text, "got nil)", "got no value)", 1)
		}
	}
	if dbg, ok := L.GetStack(2); ok {
		if _, err := L.GetInfo("S", dbg, lua.LNil); err == nil && dbg.What == "G" {
			if i := strings.Index(text, " to '"); i >= 0 {
				if j := strings.Index(text[i+5:], "'"); j >= 0 {
					text = text[:i+5] + "?" + text[i+5+j:]
				}
			}
			return text
		}
	}
	return pos + text
}

// sourceOf is a function's source as Redis's error handler shows it.
func (st *state) sourceOf(name string) string {
	if name == "user_script" || name == "user_function" {
		return "@" + name
	}
	if src, ok := st.sources[name]; ok {
		return src
	}
	return name
}

// appendError appends the reply to a script that failed with obj: the error's text, then
// where it came from, as Redis 7.0 words it.
func (st *state) appendError(dst []byte, obj lua.LValue, sha string) []byte {
	var msg string
	switch v := obj.(type) {
	case *lua.LTable:
		if e := v.RawGetString("err"); isStringLike(e) {
			msg = string(luaString(e))
		} else {
			msg = "ERR unknown error" // Redis 7.0 crashes here
		}
	case lua.LString, lua.LNumber:
		msg = "ERR " + string(luaString(v))
	default:
		msg = "ERR " + string(st.L.ToStringMeta(v).(lua.LString))
	}
	msg = cString(msg)
	if st.errInfo.line > 0 {
		msg += " script: " + sha + ", on " + st.errInfo.source + ":" + itoa(st.errInfo.line) + "."
	}
	return appendErrorText(dst, msg)
}

// AppendCallError appends the reply to a script that failed at line of @user_script
// because a redis.call there got the error reply reply ("-ERR ...\r\n"), as Run words it:
// for Native code whose error comes after a write, when the interpreter may not run
// the script again.
func AppendCallError(dst, reply []byte, sha string, line int) []byte {
	text := string(reply)
	if len(text) > 0 && text[0] == '-' {
		text = text[1:]
	}
	msg := cString(errorCode(text))
	msg += " script: " + sha + ", on @user_script:" + itoa(line) + "."
	return appendErrorText(dst, msg)
}
