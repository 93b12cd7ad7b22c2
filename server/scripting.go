package server

import (
	"bytes"
	"errors"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/scripting"
	"github.com/throttledhq/throttled/scripting/functions"
	"github.com/throttledhq/throttled/scripting/native"
)

// The scripting commands: EVAL and its kin run a script of package scripting, which calls
// back here (scriptRun.Call) for each redis.call; the command runs through the table and
// its handler like a client's, on a client of the script's own whose replies go back to
// Lua. A script runs as one command: see scripting's doc.go for how it locks its keys.

func scriptCommands() []*cmdEntry {
	const evalFlags = "noscript stale skip_monitor no_mandatory_keys movablekeys"
	return []*cmdEntry{
		{name: "eval", holdsStripes: true, noScript: true, arity: -3, flags: evalFlags, group: "scripting", since: "2.6.0", summary: "Execute a Lua script server side", syntax: "script numkeys [key ...] [arg ...]", handler: evalHandler(false, false), keysOf: evalKeys},
		{name: "evalsha", holdsStripes: true, noScript: true, arity: -3, flags: evalFlags, group: "scripting", since: "2.6.0", summary: "Execute a Lua script server side", syntax: "sha1 numkeys [key ...] [arg ...]", handler: evalHandler(true, false), keysOf: evalKeys},
		{name: "eval_ro", holdsStripes: true, noScript: true, arity: -3, flags: "readonly " + evalFlags, group: "scripting", since: "7.0.0", summary: "Execute a read-only Lua script server side", syntax: "script numkeys [key ...] [arg ...]", handler: evalHandler(false, true), keysOf: evalKeys},
		{name: "evalsha_ro", holdsStripes: true, noScript: true, arity: -3, flags: "readonly " + evalFlags, group: "scripting", since: "7.0.0", summary: "Execute a read-only Lua script server side", syntax: "sha1 numkeys [key ...] [arg ...]", handler: evalHandler(true, true), keysOf: evalKeys},
	}
}

// luaScripts is the server's scripting: the engine, and the scripts that have run past
// busy-reply-threshold.
type luaScripts struct {
	eng       *scripting.Engine
	busyAfter atomic.Int64 // busy-reply-threshold, in milliseconds; 0 for never

	mu    sync.Mutex // guards busy
	busy  map[*scriptRun]struct{}
	nbusy atomic.Int32 // len(busy): commands of other clients get BUSY while it is not 0
}

func (l *luaScripts) init(cfg Config) {
	l.eng = scripting.New()
	l.eng.Natives = native.Lookup // the limiter scripts people run most, as Go code
	l.busy = make(map[*scriptRun]struct{})
	l.busyAfter.Store(int64(cfg.BusyReplyThreshold))
}

// defaultBusyReplyThreshold is Redis's busy-reply-threshold, in milliseconds.
const defaultBusyReplyThreshold = 5000

// scriptParams are the scripting configuration parameters: busy-reply-threshold, and its
// older name lua-time-limit.
func (s *Server) scriptParams() []*param {
	n := &s.scripts.busyAfter
	eng := s.scripts.eng
	return []*param{{name: "lua-native-scripts", def: "yes", file: plainValue,
		get: func() string { return yesNo(eng.NativeOn()) },
		set: func(v string) (func(), error) {
			on, err := parseYesNo(v)
			if err != nil {
				return nil, err
			}
			return func() { eng.SetNative(on) }, nil
		}}, {name: "busy-reply-threshold", aliases: []string{"lua-time-limit"}, def: itoa(defaultBusyReplyThreshold), file: plainValue,
		get: func() string { return itoa(n.Load()) },
		set: func(v string) (func(), error) {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, errors.New("argument couldn't be parsed into an integer")
			}
			if x < 0 {
				return nil, errors.New("argument must be between 0 and 9223372036854775807 inclusive")
			}
			return func() { n.Store(x) }, nil
		}}}
}

// initScripting marks the commands scripts may not call: those whose literal says noScript,
// with their subcommands but HELP, and any whose handler needs a connection of its own (a
// blocking command: it would wait forever inside a script); and those that run while a
// script is busy (allowBusy).
func initScripting(table map[string]*cmdEntry) {
	for _, cmd := range table {
		if cmd.noScript || cmd.detach {
			cmd.bits |= flagNoScript
		}
		if cmd.allowBusy {
			cmd.bits |= flagAllowBusy
		}
		for _, sub := range cmd.subcommands {
			if cmd.noScript && !strings.HasSuffix(sub.name, "|help") {
				sub.bits |= flagNoScript
			}
			if sub.allowBusy {
				sub.bits |= flagAllowBusy
			}
		}
	}
}

// evalKeys are EVAL's keys: numkeys of them after it, none when numkeys is bad.
func evalKeys(args [][]byte) [][]byte {
	if len(args) < 3 {
		return nil
	}
	n, ok := command.ParseInt(args[2])
	if !ok || n <= 0 || n > int64(len(args)-3) {
		return nil
	}
	return args[3 : 3+n]
}

var (
	// errNoScript is EVALSHA of a digest not in the cache.
	errNoScript = &command.Error{Code: "NOSCRIPT", Msg: "No matching script. Please use EVAL."}
	// errNotBusy is SCRIPT KILL with no script running.
	errNotBusy = &command.Error{Code: "NOTBUSY", Msg: "No scripts in execution right now."}
	// errKeysNegative is EVAL's negative numkeys.
	errKeysNegative = errors.New("Number of keys can't be negative")
	// errScriptWriteRO is EVAL_RO of a script whose shebang lets it write.
	errScriptWriteRO = errors.New("Can not execute a script with write flag using *_ro command.")
	// errScriptOOM is a script whose shebang lacks allow-oom, over maxmemory.
	errScriptOOM = &command.Error{Code: "OOM", Msg: "allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"}
	// errRestart stops a script that must run again with more stripes (scriptRun.lock).
	errRestart = errors.New("scripting: restart with more stripes")
	// errNotDirect stops a native run that called a command its lock does not cover
	// (scriptRun.direct): it runs again, taking the stripes.
	errNotDirect = errors.New("scripting: a command outside the direct run")
	// errBusy is any other command while a script has run past busy-reply-threshold.
	errBusy = &command.Error{Code: "BUSY", Msg: "Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."}
	// errUnkillable is SCRIPT KILL of busy scripts that have all written.
	errUnkillable = &command.Error{Code: "UNKILLABLE", Msg: "Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."}
)

// evalHandler makes EVAL (byDigest false) and EVALSHA, and their read-only variants.
func evalHandler(byDigest, readOnly bool) handler {
	return func(c *client, args [][]byte) error {
		c.monitorScript(args)
		numkeys, ok := command.ParseInt(args[2])
		switch {
		case !ok:
			return command.ErrNotInteger
		case numkeys > int64(len(args)-3):
			return command.ErrKeysTooMany
		case numkeys < 0:
			return errKeysNegative
		}
		eng := c.s.scripts.eng
		var sc *scripting.Script
		if byDigest {
			if sc = eng.LookupHex(args[1], &c.scriptRun().memo); sc == nil {
				return errNoScript
			}
		} else {
			var err error
			if sc, err = eng.Load(args[1]); err != nil {
				return err
			}
		}
		if sc.Shebang {
			if err := c.s.checkScriptFlags(sc.Flags, readOnly); err != nil {
				return err
			}
		}
		return c.runScript(sc, nil, args, args[3:3+numkeys], args[3+numkeys:], readOnly || sc.Flags&scripting.NoWrites != 0)
	}
}

// checkScriptFlags refuses a script with a shebang, or a function, where its flags say it
// cannot run.
func (s *Server) checkScriptFlags(flags scripting.Flags, readOnly bool) error {
	if flags&scripting.AllowOOM == 0 && s.mem.full.Load() {
		if err := s.makeRoom(); err != nil {
			return errScriptOOM
		}
	}
	if flags&scripting.NoWrites == 0 {
		if s.isReplica.Load() {
			return command.ErrReadOnly // as Redis: the script's flags make it a write command
		}
		if readOnly {
			return errScriptWriteRO
		}
	}
	return nil
}

// scriptRun is a client's script in progress: the scripting.Host its redis.call reaches.
// A client keeps one and reuses it.
type scriptRun struct {
	s      *Server
	caller *client
	c      *client // the script's own client: runs its commands, collects their replies
	call   scripting.Call

	readOnly   bool                // EVAL_RO, or a no-writes shebang: write commands are refused
	keyStripes []uint64            // the stripe of each key the script declared, as call.Keys
	memo       scripting.Memo      // the script of the caller's last EVALSHA
	names      [4]cachedCommand    // the commands the script called last, as it named them
	namesAt    int                 // the entry of names to replace next
	lastEnd    int64               // the end of the script's last command: the start of its next (client.tick)
	dirty      atomic.Bool         // a command that changes state ran: no restart, no SCRIPT KILL from here
	busy       bool                // it has run past busy-reply-threshold: in luaScripts.busy
	fn         *scripting.Function // the function FCALL runs; nil for a script
	args       [][]byte            // the caller's command (FUNCTION STATS)
	held       uint64              // the transaction stripes held, as a set
	txHeld     uint64              // those the caller's EXEC holds: not this script's to take or release
	want       uint64              // the stripes the next try starts with
}

// scriptRun returns c's script run, made the first time.
func (c *client) scriptRun() *scriptRun {
	if c.script == nil {
		r := &scriptRun{s: c.s, caller: c}
		r.c = c.s.bareClient("lua", "lua")
		r.call.Host = r
		c.script = r
	}
	return c.script
}

// runScript runs sc, or the function fn, for c's command args: it takes the stripes of
// keys, runs, and runs again with more stripes when the script reached a key whose stripe
// another script holds (scripting's doc.go); the reply goes to c.
func (c *client) runScript(sc *scripting.Script, fn *scripting.Function, args, keys, argv [][]byte, readOnly bool) error {
	r := c.scriptRun()
	if u := c.user.Load(); r.c.user.Load() != u {
		r.c.user.Store(u)
	}
	r.call.Keys, r.call.Args, r.call.Proto, r.call.Slot = keys, argv, c.W.Proto, uint64(c.id)
	r.readOnly = readOnly
	r.fn, r.args = fn, args
	r.call.Start = c.s.obs.base.Add(time.Duration(c.Tick)) // no clock read: the command's start
	r.txHeld = c.txHeld
	r.call.BusyAfter = time.Duration(c.s.scripts.busyAfter.Load()) * time.Millisecond
	defer func() {
		if r.busy {
			c.s.scripts.unbusy(r)
		}
		r.call.Keys, r.call.Args, r.fn, r.args = nil, nil, nil, nil
	}()
	r.want, r.keyStripes = 0, r.keyStripes[:0]
	if fn == nil && len(keys) == 1 && c.txHeld == 0 && c.s.scripts.eng.Native(sc) {
		if done, err := r.direct(sc); done {
			return err
		}
	}
	if len(r.keyStripes) == 0 {
		r.stripes()
	}
	for {
		r.dirty.Store(false)
		r.lastEnd = c.Tick
		r.held = r.txHeld
		r.lockAll(r.want &^ r.txHeld)
		mark := len(c.W.B)
		var out []byte
		var err error
		if fn != nil {
			out, err = c.s.fn.Engine().CallFunction(c.W.B, fn, &r.call)
		} else {
			out, err = c.s.scripts.eng.Run(c.W.B, sc, &r.call)
		}
		c.s.unlockTx(r.held &^ r.txHeld)
		if err == errRestart {
			continue
		}
		c.W.B = out
		if r.c.mustSync {
			c.mustSync = true
			r.c.mustSync = false
		}
		if err != nil {
			return err
		}
		if len(out) > mark && out[mark] == '-' {
			c.stat().errors.Add(1) // the script wrote its error reply itself
		}
		return nil
	}
}

// direct runs a native script on its one key as a plain command runs: through the gate
// (enterGate), under its shard's lock, held from its first command to its last, instead of
// the transaction stripes (the lock already makes it one command to every other client,
// and to transactions and scripts, which wait at the gate). Its commands on that key take
// the held lock (client.lockShard); TIME takes none; any other stops it. done is false,
// and nothing has changed, when a transaction or script holds the key's stripe, when the
// code declined, or when it called another command or must make room first
// (errNotDirect): the script then runs as any other.
func (r *scriptRun) direct(sc *scripting.Script) (done bool, err error) {
	c, s := r.caller, r.s
	t := &s.txLocks
	slot := s.gateSlot(c)
	slot.n.Add(1)
	defer slot.n.Add(-1)
	if held := t.held.Load(); held != 0 && held&r.stripes() != 0 {
		return false, nil
	}
	sh := s.ks.Shard(r.call.Keys[0])
	sh.Lock()
	r.c.Held = sh
	r.offerDirect()
	defer func() { // deferred: a panic must not leave the shard locked
		r.clearDirect()
		r.c.Held = nil
		sh.Unlock()
	}()
	r.dirty.Store(false)
	r.lastEnd = c.Tick
	mark := len(c.W.B)
	out, done, err := s.scripts.eng.RunNative(c.W.B, sc, &r.call)
	switch {
	case err == errNotDirect && !r.dirty.Load():
		return false, nil
	case err != nil:
		return true, err
	case !done:
		return false, nil
	}
	c.W.B = out
	if r.c.mustSync {
		c.mustSync = true
		r.c.mustSync = false
	}
	if len(out) > mark && out[mark] == '-' {
		c.stat().errors.Add(1) // the script wrote its error reply itself
	}
	if r.lastEnd != c.Tick {
		c.ended = r.lastEnd // what is left, the reply, is the next command's time: one clock read less
	}
	return true, nil
}

// stripes computes the stripes of the keys the script declared (keyStripes) and returns
// them as a set (want).
func (r *scriptRun) stripes() uint64 {
	r.want, r.keyStripes = 0, r.keyStripes[:0]
	for _, k := range r.call.Keys {
		st := r.s.txStripe(k)
		r.keyStripes = append(r.keyStripes, st)
		r.want |= st
	}
	return r.want
}

// lockAll takes the stripes in set, in ascending order, waiting for each.
func (r *scriptRun) lockAll(set uint64) {
	for rest := set; rest != 0; rest &= rest - 1 {
		r.s.txLocks.stripes[bits.TrailingZeros64(rest)].Lock()
	}
	r.s.txLocks.hold(set)
	r.held |= set
}

// lock makes sure the script holds the stripes of keys before a command on them runs. A
// stripe above every one it holds is waited for (stripes are taken in ascending order, so
// that cannot deadlock); one below is taken only if free. When it is not, a script that
// has changed nothing yet stops and runs again holding it from the start; one that has
// waits for it a while (lockWait), and past that goes on without it (scripting's doc.go
// says why).
func (r *scriptRun) lock(need uint64) error {
	missing := need &^ r.held
	for rest := missing; rest != 0; rest &= rest - 1 {
		i := bits.TrailingZeros64(rest)
		bit := uint64(1) << i
		mu := &r.s.txLocks.stripes[i]
		switch {
		case r.held < bit:
			mu.Lock()
		case mu.TryLock():
		case !r.dirty.Load() && r.txHeld == 0:
			r.want = r.held | missing
			return errRestart
		case !tryLockFor(mu, lockWait):
			continue
		}
		r.s.txLocks.hold(bit)
		r.held |= bit
	}
	return nil
}

// lockWait is how long a script that has written waits for a stripe below those it holds
// before it goes on without: its holder is most often a script or EXEC that ends in
// microseconds; waiting longer could only be a wait in a cycle, or behind a slow script.
const lockWait = 10 * time.Millisecond

// tryLockFor takes mu if it comes free within d.
func tryLockFor(mu *sync.Mutex, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for pause := time.Microsecond; ; pause = min(2*pause, 200*time.Microsecond) {
		if mu.TryLock() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}

// The errors Redis gives a script before a command it calls runs.
const (
	scriptErrUnknown  = "-ERR Unknown Redis command called from script\r\n"
	scriptErrArity    = "-ERR Wrong number of args calling Redis command from script\r\n"
	scriptErrDenied   = "-ERR This Redis command is not allowed from script\r\n"
	scriptErrReadOnly = "-ERR Write commands are not allowed from read-only scripts.\r\n"
	scriptErrACLCmd   = "-ERR The user executing the script can't run this command or subcommand\r\n"
	scriptErrACLKey   = "-ERR The user executing the script can't access at least one of the keys mentioned in the command arguments\r\n"
	scriptErrACLChan  = "-ERR The user executing the script can't publish to the channel mentioned in the command\r\n"
)

// cachedCommand is a command as a script named it.
type cachedCommand struct {
	name [16]byte
	n    int // the name's length; 0 for an empty entry
	cmd  *cmdEntry
}

// command looks up the command a script names, through the cache of those it named last.
func (r *scriptRun) command(name []byte) *cmdEntry {
	for i := range r.names {
		if e := &r.names[i]; e.n == len(name) && string(e.name[:e.n]) == string(name) {
			return e.cmd
		}
	}
	cmd := r.s.commands[string(r.c.lowerName(name))]
	if cmd != nil && len(name) <= len(r.names[0].name) {
		e := &r.names[r.namesAt]
		e.n = copy(e.name[:], name)
		e.cmd = cmd
		r.namesAt = (r.namesAt + 1) % len(r.names)
	}
	return cmd
}

// stripesOf is the stripes of a command's keys: a single key the script declared is known
// without hashing it again.
func (r *scriptRun) stripesOf(cmd *cmdEntry, args [][]byte) uint64 {
	if cmd.firstKey == 1 && cmd.lastKey == 1 && cmd.keysOf == nil && len(args) > 1 {
		for i, k := range r.call.Keys {
			if bytes.Equal(k, args[1]) {
				return r.keyStripes[i]
			}
		}
	}
	return r.s.stripesOf(cmd, args)
}

// declared reports whether key is the first key the script declared.
func (r *scriptRun) declared(key []byte) bool {
	return len(r.call.Keys) > 0 && bytes.Equal(r.call.Keys[0], key)
}

// Call runs one command of the script (scripting.Host).
func (r *scriptRun) Call(dst []byte, args [][]byte, resp int) ([]byte, error) {
	s, sc := r.s, r.c
	cmd := r.command(args[0])
	if cmd == nil {
		return append(dst, scriptErrUnknown...), nil
	}
	if len(cmd.subcommands) > 0 && len(args) > 1 {
		if cmd = cmd.subcommand(args[1]); cmd == nil {
			return append(dst, scriptErrUnknown...), nil
		}
	}
	if !cmd.arityOK(len(args)) {
		return append(dst, scriptErrArity...), nil
	}
	if cmd.has(flagNoScript) {
		return append(dst, scriptErrDenied...), nil
	}
	if cmd.firstKey > 0 {
		if err := reservedKey(cmd, args); err != nil {
			return appendErrorReply(dst, err), nil
		}
	}
	if p := sc.user.Load().Perms(); !p.All {
		if err := s.checkACL(sc, p, cmd, args); err != nil {
			switch {
			case errors.Is(err, errNoPermKey):
				return append(dst, scriptErrACLKey...), nil
			case errors.Is(err, errNoPermChannel):
				return append(dst, scriptErrACLChan...), nil
			}
			return append(dst, scriptErrACLCmd...), nil
		}
	}
	changes := cmd.has(flagWrite) || cmd.name == "publish"
	if cmd.has(flagWrite) {
		if r.readOnly {
			return append(dst, scriptErrReadOnly...), nil
		}
		if s.isReplica.Load() && !cmd.has(flagRatelimit) {
			return appendErrorReply(dst, command.ErrReadOnly), nil
		}
	}
	if cmd.has(flagDenyOOM) && !r.dirty.Load() && s.mem.full.Load() {
		if sc.Held != nil {
			return dst, errNotDirect // evicting locks shards: the run starts again on the stripes
		}
		if err := s.makeRoom(); err != nil {
			return appendErrorReply(dst, err), nil
		}
	}
	if sc.Held != nil {
		if !(cmd.has(flagDirect) && r.declared(args[1]) || cmd.name == "time") {
			return dst, errNotDirect // it may lock another shard, or this one again
		}
	} else if err := r.lock(r.stripesOf(cmd, args)); err != nil {
		return dst, err
	}
	if changes && !r.dirty.Load() {
		r.dirty.Store(true)
	}
	sc.W.B, sc.W.Proto = dst, resp
	sc.Tick = r.caller.Tick // the script's commands all see the time it started at
	sc.lat = r.caller.lat   // and count their latency where the caller's commands do
	sc.Slot = r.caller.Slot // and their calls
	sc.Env = r.caller.Env   // and read the caller's clock (a benchmark's goroutine has its own)
	if cmd.has(flagRatelimit) && sc.lastCmd.Load() != cmd {
		sc.lastCmd.Store(cmd) // the rate-limit verbs count their decisions by it, as run sets it
	}
	sc.NoBlock = true                    // a blocking command answers as on its timeout
	s.callFrom(sc, cmd, args, r.lastEnd) // timed from the end of the script's command before
	r.lastEnd = sc.Tick
	if len(sc.up.calls) > 0 { // with an upstream, a rate-limit verb's reply comes from there
		if !sc.waitUpstream() {
			sc.W.B = dst
			return appendErrorReply(dst, errors.New("server is shutting down")), nil
		}
		sc.spliceUpstream()
	}
	dst = sc.W.B
	sc.W.B = nil
	return dst, nil
}

// appendErrorReply appends err as the error reply its text makes.
func appendErrorReply(dst []byte, err error) []byte {
	dst = append(dst, '-')
	dst = append(dst, command.ErrorText(err)...)
	return append(dst, '\r', '\n')
}

// Allowed reports whether the caller may run args (scripting.Host).
func (r *scriptRun) Allowed(args [][]byte) (allowed, known bool) {
	s := r.s
	cmd := s.findCommand(string(args[0]))
	if cmd == nil {
		return false, false
	}
	if len(cmd.subcommands) > 0 && len(args) > 1 {
		if sub := cmd.subcommand(args[1]); sub != nil {
			cmd = sub
		}
	}
	p := r.c.user.Load().Perms()
	return p.All || s.checkACL(r.c, p, cmd, args) == nil, true
}

// Busy registers the script as busy: it has run past busy-reply-threshold (scripting.Host).
func (r *scriptRun) Busy() {
	l := &r.s.scripts
	l.mu.Lock()
	l.busy[r] = struct{}{}
	l.nbusy.Store(int32(len(l.busy)))
	l.mu.Unlock()
	r.busy = true
	r.caller.leaveLoop() // the loop serving the caller goes on with its other clients
	r.s.log.Warn("Slow script detected: still in execution after busy-reply-threshold. You can try killing the script using the SCRIPT KILL command.",
		"ms", l.busyAfter.Load())
}

// unbusy forgets a busy script that has ended.
func (l *luaScripts) unbusy(r *scriptRun) {
	l.mu.Lock()
	delete(l.busy, r)
	l.nbusy.Store(int32(len(l.busy)))
	l.mu.Unlock()
	r.busy = false
}

// Log writes redis.log's message at its level (scripting.Host).
func (r *scriptRun) Log(level int, msg string) {
	switch level {
	case 0, 1:
		r.s.log.Debug(msg)
	case 2:
		r.s.log.Info(msg)
	default:
		r.s.log.Warn(msg)
	}
}

// infoScripting is INFO's scripting section (scripting/functions), with the busy scripts.
func (s *Server) infoScripting() [][2]string {
	return s.fn.InfoScripting(int64(s.scripts.nbusy.Load()), s.scripts.busyAfter.Load())
}

// kill is SCRIPT KILL (functions false) and FUNCTION KILL: each kills its own kind of
// busy run, and answers BUSY when only the other kind is busy, as Redis does; nil when it
// killed one (scripting/functions replies OK).
func (l *luaScripts) kill(functions bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.busy) == 0 {
		return errNotBusy
	}
	killed, mine := 0, 0
	for r := range l.busy {
		if (r.fn != nil) != functions {
			continue
		}
		mine++
		if !r.dirty.Load() {
			r.call.Kill()
			killed++
		}
	}
	switch {
	case mine == 0 && functions:
		return errBusy
	case mine == 0:
		return errBusyFunction
	case killed == 0:
		return errUnkillable
	}
	return nil
}

// running is FUNCTION STATS's view of the busy runs: the function running past
// busy-reply-threshold, nil when none is; errBusy when a script is busy, as Redis answers.
func (l *luaScripts) running() (*functions.Run, error) {
	var running *scriptRun
	l.mu.Lock()
	defer l.mu.Unlock()
	for r := range l.busy {
		if r.fn == nil {
			return nil, errBusy
		}
		running = r
	}
	if running == nil {
		return nil, nil
	}
	args := make([][]byte, len(running.args)) // the caller's buffers: its run may end after the lock
	for i, a := range running.args {
		args[i] = append([]byte(nil), a...)
	}
	return &functions.Run{Name: running.fn.Name, Args: args, Duration: time.Since(running.call.Start)}, nil
}

// busyError is the error other commands get while scripts are busy: Redis's text names
// the command that can kill the script running.
func (l *luaScripts) busyError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for r := range l.busy {
		if r.fn == nil {
			return errBusy
		}
	}
	return errBusyFunction
}
