// Package functions is the family of the scripting management commands: FUNCTION (LOAD,
// DELETE, FLUSH, LIST, DUMP, RESTORE, STATS, KILL, HELP) with the function libraries it
// keeps, and SCRIPT (LOAD, EXISTS, FLUSH, KILL, DEBUG, HELP) on the server's script cache,
// and the scripting fields of INFO. Running a script or a function (EVAL, EVALSHA, FCALL)
// is the server's: it locks the keys a script reaches, and reads Libraries and Engine here.
//
// A request's path: the server finds the subcommand's literal among Family.Commands and
// calls its handler with the connection's command.Ctx. A FUNCTION command that changes the
// libraries loads the new code into the family's engine and stores the result through
// change: the libraries are kept as the policies are (package ratelimit), their code, as
// FUNCTION DUMP's payload, in one record of kind Functions at the reserved key Key, so
// the disk feed makes them durable and the replication feed carries them to replicas,
// full sync included; each node loads the code into its own engine. A Watch on the record
// tells of every change, however it comes (a command here, a primary's write, a load from
// disk): the loaded set (a scripting.Libraries) is rebuilt from the record when it changed,
// and FCALL reads it without a lock. Like the policies, the record is no key: SCAN, KEYS
// and DBSIZE leave it out (HasRecord), FLUSHALL keeps it (Keep), and eviction never takes
// it. SCRIPT's commands work on the engine EVAL runs (Config.Scripts); what the family
// needs of the running scripts (FUNCTION STATS, the KILLs) it asks the server through
// Config.
package functions

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/scripting"
)

// Key is the reserved key of the libraries' record.
const Key = "__throttled__:functions"

// Config is what the family reads of the server.
type Config struct {
	Keys *keyspace.Keyspace // where the libraries' record lives
	Now  func() int64       // the server's clock, Unix ns
	Log  *slog.Logger
	// Scripts is the engine EVAL runs scripts on: SCRIPT LOAD, EXISTS and FLUSH work on its
	// cache, INFO reads its figures.
	Scripts *scripting.Engine
	// Kill kills the runs past busy-reply-threshold that have not written: those of
	// functions (FUNCTION KILL) or of scripts (SCRIPT KILL). Its error is the reply when it
	// killed none: NOTBUSY with none busy, BUSY when only the other kind is, UNKILLABLE when
	// all have written.
	Kill func(functions bool) error
	// Running returns the function running past busy-reply-threshold (FUNCTION STATS); nil
	// when none is. Its error is the reply when a script is the one busy.
	Running func() (*Run, error)
}

// Run is a function running past busy-reply-threshold, as FUNCTION STATS shows it.
type Run struct {
	Name     string        // the function's
	Args     [][]byte      // the command that called it: a copy of its own
	Duration time.Duration // how long it has run
}

// Family is the FUNCTION and SCRIPT commands, with the function libraries.
type Family struct {
	cfg   Config
	eng   *scripting.Engine // runs functions: interpreters of their own, without KEYS and ARGV
	mu    sync.Mutex        // serializes changes of the record and rebuilds of view
	view  atomic.Pointer[view]
	watch keyspace.Watch // on Key: the record changed since view was built
}

// view is the libraries loaded from one version of the record.
type view struct {
	version int64 // the record's Num; 0 when there is none
	libs    *scripting.Libraries
}

// New returns the family of cfg, with its functions' engine, watching the libraries'
// record: its libraries are the record's from their first read.
func New(cfg Config) *Family {
	f := &Family{cfg: cfg, eng: scripting.New()}
	key := []byte(Key)
	sh := cfg.Keys.Shard(key)
	sh.Lock()
	sh.WatchLocked(key, &f.watch)
	sh.Unlock()
	return f
}

// Commands are the family's commands, each one literal: the FUNCTION and SCRIPT
// containers with their subcommands.
func (f *Family) Commands() []*command.Spec {
	return []*command.Spec{
		{Name: "function", Arity: -2, Group: "scripting", Since: "7.0.0", Summary: "A container for function commands", Subcommands: f.functionCommands()},
		{Name: "script", Arity: -2, Group: "scripting", Since: "2.6.0", Summary: "A container for Lua scripts management commands", Subcommands: f.scriptCommands()},
	}
}

// Engine is the engine that runs the functions (FCALL).
func (f *Family) Engine() *scripting.Engine { return f.eng }

// record returns the version of the stored record, and its bytes (copied).
func (f *Family) record() (int64, []byte) {
	key := []byte(Key)
	sh := f.cfg.Keys.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	v, ok := sh.GetLocked(key, f.cfg.Now())
	if !ok || v.Kind != keyspace.Functions {
		return 0, nil
	}
	return v.Num, append([]byte(nil), v.Bytes...)
}

// HasRecord reports whether the libraries' record is stored (DBSIZE leaves it out).
func (f *Family) HasRecord() bool {
	v, _ := f.record()
	return v != 0
}

// Libraries returns the loaded libraries, loaded again when the record changed.
func (f *Family) Libraries() *scripting.Libraries {
	if v := f.view.Load(); v != nil && !f.watch.Changed() {
		return v.libs
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rebuildLocked().libs
}

// rebuildLocked loads the record's libraries when it changed; f.mu is held. A library
// that does not load (never one the primary or this server loaded before) is logged and
// left out.
func (f *Family) rebuildLocked() *view {
	old := f.view.Load()
	if old != nil && !f.watch.Changed() {
		return old
	}
	f.watch.Reset() // before the read: a write after it marks the watch again
	version, b := f.record()
	if old != nil && old.version == version {
		return old
	}
	v := &view{version: version}
	if b != nil {
		codes, err := scripting.ParseDump(b)
		if err != nil {
			f.cfg.Log.Error("the stored function libraries are damaged: none is loaded", "err", err)
		}
		for _, code := range codes {
			libs, _, err := f.eng.LoadLibrary(code, v.libs, true, 0)
			if err != nil {
				f.cfg.Log.Error("a stored function library does not load: it is left out", "err", err)
				continue
			}
			v.libs = libs
		}
	}
	f.eng.LibrariesChanged()
	f.view.Store(v)
	return v
}

// change stores the libraries change returns as a new version of the record; change's
// error is returned as is, and nothing is stored.
func (f *Family) change(change func(ls *scripting.Libraries) (*scripting.Libraries, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.rebuildLocked()
	next, err := change(cur.libs)
	if err != nil {
		return err
	}
	key := []byte(Key)
	now := f.cfg.Now()
	list := next.List()
	sh := f.cfg.Keys.Shard(key)
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
	f.watch.Reset() // what this change wrote is the view below
	f.eng.LibrariesChanged()
	f.view.Store(&view{version: version, libs: next})
	return nil
}

// Keep runs flush (FLUSHALL) and puts the libraries' record back: Redis's FLUSHALL keeps
// functions.
func (f *Family) Keep(flush func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := []byte(Key)
	sh := f.cfg.Keys.Shard(key)
	sh.Lock()
	v, ok := sh.GetLocked(key, f.cfg.Now())
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
