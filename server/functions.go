package server

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/scripting"
)

// Functions (FUNCTION, FCALL) of package scripting. The libraries are kept as policies are
// (package ratelimit): their code, as FUNCTION DUMP's payload, is one record of kind Functions at
// the reserved key functionsKey, so the disk feed makes them durable and the replication
// feed carries them to replicas, full sync included; each node loads the code into its own
// engine. A Watch on the record tells of every change, however it comes; the loaded set
// (a scripting.Libraries) is rebuilt from the record when it changed, and FCALL reads it
// without a lock. Like policies, the record is no key: SCAN, KEYS and DBSIZE leave it out,
// FLUSHALL keeps it, and eviction never takes it.

// functionsKey is the reserved key of the libraries' record.
const functionsKey = "__throttled__:functions"

// errFunctionsKey refuses a command on the libraries' record.
var errFunctionsKey = errors.New("'" + functionsKey + "' holds the function libraries: use the FUNCTION commands")

func functionCommands() []*cmdEntry {
	const fcallFlags = "noscript stale skip_monitor no_mandatory_keys movablekeys"
	return []*cmdEntry{
		{name: "fcall", holdsStripes: true, noScript: true, arity: -3, flags: fcallFlags, group: "scripting", since: "7.0.0", summary: "Invoke a function", syntax: "function numkeys [key ...] [arg ...]", handler: fcallHandler(false), keysOf: evalKeys},
		{name: "fcall_ro", holdsStripes: true, noScript: true, arity: -3, flags: "readonly " + fcallFlags, group: "scripting", since: "7.0.0", summary: "Invoke a read-only function", syntax: "function numkeys [key ...] [arg ...]", handler: fcallHandler(true), keysOf: evalKeys},
		{name: "function", noScript: true, arity: -2, group: "scripting", since: "7.0.0", summary: "A container for function commands"},
	}
}

func functionSubcommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "load", arity: -3, flags: "write denyoom noscript", group: "scripting", since: "7.0.0", summary: "Create a function with the given arguments (name, code, description)", syntax: "[REPLACE] function-code", handler: cmdFunctionLoad},
		{name: "delete", arity: 3, flags: "write noscript", group: "scripting", since: "7.0.0", summary: "Delete a function by name", syntax: "library-name", handler: cmdFunctionDelete},
		{name: "flush", arity: -2, flags: "write noscript", group: "scripting", since: "7.0.0", summary: "Deleting all functions", syntax: "[ASYNC|SYNC]", handler: cmdFunctionFlush},
		{name: "list", arity: -2, flags: "noscript", group: "scripting", since: "7.0.0", summary: "List information about all the functions", syntax: "[LIBRARYNAME library-name-pattern] [WITHCODE]", handler: cmdFunctionList},
		{name: "dump", arity: 2, flags: "noscript", group: "scripting", since: "7.0.0", summary: "Dump all functions into a serialized binary payload", handler: cmdFunctionDump},
		{name: "restore", arity: -3, flags: "write denyoom noscript", group: "scripting", since: "7.0.0", summary: "Restore all the functions on the given payload", syntax: "serialized-value [FLUSH|APPEND|REPLACE]", handler: cmdFunctionRestore},
		{name: "stats", allowBusy: true, arity: 2, flags: "noscript allow_busy", group: "scripting", since: "7.0.0", summary: "Return information about the function currently running (name, description, duration)", handler: cmdFunctionStats},
		{name: "kill", allowBusy: true, arity: 2, flags: "noscript allow_busy", group: "scripting", since: "7.0.0", summary: "Kill the function currently in execution.", handler: cmdFunctionKill},
		{name: "help", arity: 2, flags: "loading stale", group: "scripting", since: "7.0.0", summary: "Show helpful text about the different subcommands", handler: cmdFunctionHelp},
	}
}

var (
	// errFunctionNotFound is FCALL of a name no library registered.
	errFunctionNotFound = errors.New("Function not found")
	// errBadNumKeys is FCALL's numkeys that is no integer.
	errBadNumKeys = errors.New("Bad number of keys provided")
	// errBusyFunction is any other command while a function has run past busy-reply-threshold,
	// and SCRIPT KILL then.
	errBusyFunction = &command.Error{Code: "BUSY", Msg: "Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."}
)

// functions is the server's state of its function libraries.
type functions struct {
	eng   *scripting.Engine // runs functions: interpreters of their own, without KEYS and ARGV
	mu    sync.Mutex        // serializes changes of the record and rebuilds of view
	view  atomic.Pointer[functionsView]
	watch keyspace.Watch // on functionsKey: the record changed since view was built
}

// functionsView is the libraries loaded from one version of the record.
type functionsView struct {
	version int64 // the record's Num; 0 when there is none
	libs    *scripting.Libraries
}

// initFunctions makes the functions' engine and watches their record.
func (s *Server) initFunctions() {
	s.fn.eng = scripting.New()
	key := []byte(functionsKey)
	sh := s.ks.Shard(key)
	sh.Lock()
	sh.WatchLocked(key, &s.fn.watch)
	sh.Unlock()
}

// functionsRecord returns the version of the stored record, and its bytes (copied).
func (s *Server) functionsRecord() (int64, []byte) {
	key := []byte(functionsKey)
	sh := s.ks.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	v, ok := sh.GetLocked(key, s.nowNano())
	if !ok || v.Kind != keyspace.Functions {
		return 0, nil
	}
	return v.Num, append([]byte(nil), v.Bytes...)
}

// libraries returns the loaded libraries, loaded again when the record changed.
func (s *Server) libraries() *scripting.Libraries {
	if v := s.fn.view.Load(); v != nil && !s.fn.watch.Changed() {
		return v.libs
	}
	s.fn.mu.Lock()
	defer s.fn.mu.Unlock()
	return s.rebuildFunctionsLocked().libs
}

// rebuildFunctionsLocked loads the record's libraries when it changed; s.fn.mu is held. A
// library that does not load (never one the primary or this server loaded before) is
// logged and left out.
func (s *Server) rebuildFunctionsLocked() *functionsView {
	old := s.fn.view.Load()
	if old != nil && !s.fn.watch.Changed() {
		return old
	}
	s.fn.watch.Reset() // before the read: a write after it marks the watch again
	version, b := s.functionsRecord()
	if old != nil && old.version == version {
		return old
	}
	v := &functionsView{version: version}
	if b != nil {
		codes, err := scripting.ParseDump(b)
		if err != nil {
			s.log.Error("the stored function libraries are damaged: none is loaded", "err", err)
		}
		for _, code := range codes {
			libs, _, err := s.fn.eng.LoadLibrary(code, v.libs, true, 0)
			if err != nil {
				s.log.Error("a stored function library does not load: it is left out", "err", err)
				continue
			}
			v.libs = libs
		}
	}
	s.fn.eng.LibrariesChanged()
	s.fn.view.Store(v)
	return v
}

// changeFunctions stores the libraries change returns as a new version of the record;
// change's error is returned as is, and nothing is stored.
func (s *Server) changeFunctions(change func(ls *scripting.Libraries) (*scripting.Libraries, error)) error {
	s.fn.mu.Lock()
	defer s.fn.mu.Unlock()
	cur := s.rebuildFunctionsLocked()
	next, err := change(cur.libs)
	if err != nil {
		return err
	}
	key := []byte(functionsKey)
	now := s.nowNano()
	list := next.List()
	sh := s.ks.Shard(key)
	sh.Lock()
	old, _ := sh.GetLocked(key, now)
	version := max(old.Num+1, now, cur.version+1)
	if len(list) == 0 {
		sh.DeleteLocked(key)
		version = 0
	} else {
		sh.SetLocked(key, keyspace.Value{Kind: keyspace.Functions, Num: version, Bytes: scripting.Dump(list)})
	}
	sh.Unlock()
	s.fn.watch.Reset() // what this change wrote is the view below
	s.fn.eng.LibrariesChanged()
	s.fn.view.Store(&functionsView{version: version, libs: next})
	return nil
}

// keepFunctions runs flush (FLUSHALL) and puts the libraries' record back: Redis's
// FLUSHALL keeps functions.
func (s *Server) keepFunctions(flush func() error) error {
	s.fn.mu.Lock()
	defer s.fn.mu.Unlock()
	key := []byte(functionsKey)
	sh := s.ks.Shard(key)
	sh.Lock()
	v, ok := sh.GetLocked(key, s.nowNano())
	if ok {
		v.Bytes = append([]byte(nil), v.Bytes...)
	}
	sh.Unlock()
	err := flush()
	if ok && v.Kind == keyspace.Functions {
		sh.Lock()
		sh.SetLocked(key, v)
		sh.Unlock()
	}
	return err
}

// hasFunctionsRecord reports whether the libraries' record is stored (DBSIZE leaves it out).
func (s *Server) hasFunctionsRecord() bool {
	v, _ := s.functionsRecord()
	return v != 0
}

// fcallHandler makes FCALL and FCALL_RO.
func fcallHandler(readOnly bool) handler {
	return func(c *client, args [][]byte) error {
		c.monitorScript(args)
		s := c.s
		f := s.libraries().Function(args[1])
		if f == nil {
			return errFunctionNotFound
		}
		if f.Flags&scripting.NoWrites == 0 && s.isReplica.Load() {
			return command.ErrReadOnly
		}
		numkeys, ok := command.ParseInt(args[2])
		switch {
		case !ok:
			return errBadNumKeys
		case numkeys > int64(len(args)-3):
			return command.ErrKeysTooMany
		case numkeys < 0:
			return errKeysNegative
		}
		if err := s.checkScriptFlags(f.Flags, readOnly); err != nil {
			return err
		}
		return c.runScript(nil, f, args, args[3:3+numkeys], args[3+numkeys:], readOnly || f.Flags&scripting.NoWrites != 0)
	}
}

// FUNCTION LOAD [REPLACE] function-code
func cmdFunctionLoad(c *client, args [][]byte) error {
	replace := false
	i := 2
	for ; i < len(args)-1; i++ {
		if !strings.EqualFold(string(args[i]), "replace") {
			return errors.New("Unknown option given: " + command.Truncate(args[i], 128))
		}
		replace = true
	}
	var name string
	err := c.s.changeFunctions(func(ls *scripting.Libraries) (*scripting.Libraries, error) {
		next, lib, err := c.s.fn.eng.LoadLibrary(args[i], ls, replace, scripting.LoadTimeout)
		if err == nil {
			name = lib.Name
		}
		return next, err
	})
	if err != nil {
		return err
	}
	c.W.BulkString(name)
	return nil
}

// FUNCTION DELETE library-name
func cmdFunctionDelete(c *client, args [][]byte) error {
	err := c.s.changeFunctions(func(ls *scripting.Libraries) (*scripting.Libraries, error) {
		next, ok := ls.Without(string(args[2]))
		if !ok {
			return nil, errors.New("Library not found")
		}
		return next, nil
	})
	if err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// FUNCTION FLUSH [ASYNC|SYNC]
func cmdFunctionFlush(c *client, args [][]byte) error {
	switch {
	case len(args) > 3:
		return subcommandSyntax(args[1], "FUNCTION")
	case len(args) == 3 && !strings.EqualFold(string(args[2]), "sync") && !strings.EqualFold(string(args[2]), "async"):
		return errors.New("FUNCTION FLUSH only supports SYNC|ASYNC option")
	}
	err := c.s.changeFunctions(func(*scripting.Libraries) (*scripting.Libraries, error) { return nil, nil })
	if err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// FUNCTION LIST [LIBRARYNAME library-name-pattern] [WITHCODE]
func cmdFunctionList(c *client, args [][]byte) error {
	withCode := false
	var pattern []byte
	for i := 2; i < len(args); i++ {
		switch a := string(args[i]); {
		case !withCode && strings.EqualFold(a, "withcode"):
			withCode = true
		case pattern == nil && strings.EqualFold(a, "libraryname"):
			if i == len(args)-1 {
				return errors.New("library name argument was not given")
			}
			i++
			pattern = []byte(strings.ToLower(string(args[i])))
		default:
			return errors.New("Unknown argument " + command.Truncate(args[i], 128))
		}
	}
	var libs []*scripting.Library
	for _, l := range c.s.libraries().List() {
		if pattern == nil || glob.Match(pattern, []byte(strings.ToLower(l.Name))) {
			libs = append(libs, l)
		}
	}
	fields := 3
	if withCode {
		fields++ // library_code
	}
	w := &c.W
	w.Array(len(libs))
	for _, l := range libs {
		w.Map(fields)
		w.BulkString("library_name")
		w.BulkString(l.Name)
		w.BulkString("engine")
		w.BulkString("LUA")
		w.BulkString("functions")
		w.Array(len(l.Functions))
		for _, f := range l.Functions {
			w.Map(3)
			w.BulkString("name")
			w.BulkString(f.Name)
			w.BulkString("description")
			if f.HasDesc {
				w.BulkString(f.Description)
			} else {
				w.Null()
			}
			w.BulkString("flags")
			var names []string
			for _, fl := range scripting.FlagNames {
				if f.Flags&fl.Flag != 0 {
					names = append(names, fl.Name)
				}
			}
			w.SetHeader(len(names))
			for _, n := range names {
				w.Simple(n)
			}
		}
		if withCode {
			w.BulkString("library_code")
			w.BulkString(l.Code)
		}
	}
	return nil
}

// FUNCTION DUMP: Redis's payload (scripting/dump.go), which Redis restores too.
func cmdFunctionDump(c *client, args [][]byte) error {
	c.W.Bulk(scripting.Dump(c.s.libraries().List()))
	return nil
}

// FUNCTION RESTORE serialized-value [FLUSH|APPEND|REPLACE]
func cmdFunctionRestore(c *client, args [][]byte) error {
	if len(args) > 4 {
		return subcommandSyntax(args[1], "FUNCTION")
	}
	policy := "append"
	if len(args) == 4 {
		policy = strings.ToLower(string(args[3]))
		if policy != "append" && policy != "replace" && policy != "flush" {
			return errors.New("Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
		}
	}
	codes, err := scripting.ParseDump(args[2])
	if err != nil {
		return err
	}
	var loaded *scripting.Libraries
	for _, code := range codes {
		if loaded, _, err = c.s.fn.eng.LoadLibrary(code, loaded, false, 0); err != nil {
			return err
		}
	}
	err = c.s.changeFunctions(func(ls *scripting.Libraries) (*scripting.Libraries, error) {
		if policy == "flush" {
			return loaded, nil
		}
		return ls.Join(loaded.List(), policy == "replace")
	})
	if err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// FUNCTION STATS: the function running past busy-reply-threshold, if any, and the engine's
// libraries and functions.
func cmdFunctionStats(c *client, args [][]byte) error {
	l := &c.s.scripts
	var running *scriptRun
	l.mu.Lock()
	defer l.mu.Unlock()
	for r := range l.busy {
		if r.fn == nil {
			return errBusy // an EVAL is busy: Redis answers so
		}
		running = r
	}
	w := &c.W
	w.Map(2)
	w.BulkString("running_script")
	if running == nil {
		w.Null()
	} else {
		w.Map(3)
		w.BulkString("name")
		w.BulkString(running.fn.Name)
		w.BulkString("command")
		w.Array(len(running.args))
		for _, a := range running.args {
			w.Bulk(a)
		}
		w.BulkString("duration_ms")
		w.Int(time.Since(running.call.Start).Milliseconds())
	}
	libs, funcs := c.s.libraries().Len()
	w.BulkString("engines")
	w.Map(1)
	w.BulkString("LUA")
	w.Map(2)
	w.BulkString("libraries_count")
	w.Int(int64(libs))
	w.BulkString("functions_count")
	w.Int(int64(funcs))
	return nil
}

// FUNCTION KILL: SCRIPT KILL's twin for functions (cmdScriptKill).
func cmdFunctionKill(c *client, args [][]byte) error { return c.s.scripts.kill(c, true) }

// FUNCTION HELP
func cmdFunctionHelp(c *client, args [][]byte) error {
	c.WriteHelp("FUNCTION", []string{
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
		"      libraries with the new libraries (notice that even on this option there is a chance of failure",
		"      in case of functions name collision with another library).",
	})
	return nil
}

// infoFunctionMemory is Redis 7.0's functions fields of INFO memory: the functions'
// interpreters (an estimate, as for scripts), the libraries and functions.
func (s *Server) infoFunctionMemory() (vm, code int64, fields [][2]string) {
	st := s.fn.eng.Stats()
	libs := s.libraries()
	for _, l := range libs.List() {
		code += int64(len(l.Code))
	}
	nlibs, nfuncs := libs.Len()
	return st.StateBytes, code, [][2]string{
		{"number_of_functions", itoa(int64(nfuncs))},
		{"number_of_libraries", itoa(int64(nlibs))},
		{"used_memory_vm_functions", itoa(st.StateBytes)},
	}
}
