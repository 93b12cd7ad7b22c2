package server

import (
	"errors"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/datatype"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
	"github.com/throttledhq/throttled/ratelimit"
)

// directOps is scripting.Direct for a native script's direct run (scriptRun.direct): the
// commands on its key (the run's Keys[0]), on the shard the run holds (its client's held),
// each counted as the command it is (commandstats, latency, SLOWLOG, MONITOR: timed, from
// the end of the one before) and making the run dirty when it writes, as scriptRun.Call
// would. A command that fails is neither run nor counted: the native declines, and the
// interpreter runs it.
type directOps scriptRun

// offerDirect sets the run's Direct when no check of scriptRun.Call could refuse one of
// its commands on its key; clearDirect takes it back.
func (r *scriptRun) offerDirect() {
	s, key := r.s, r.call.Keys[0]
	if r.readOnly || !r.c.user.Load().Perms().All || s.isReplica.Load() || s.mem.full.Load() ||
		s.replCfg.minToWrite.Load() > 0 || string(key) == ratelimit.PoliciesKey || string(key) == functionsKey {
		return
	}
	r.c.Tick, r.c.lat = r.caller.Tick, r.caller.lat // as Call sets them for each command
	r.c.Slot, r.c.Env = r.caller.Slot, r.caller.Env
	r.call.Direct = (*directOps)(r)
}

func (r *scriptRun) clearDirect() { r.call.Direct = nil }

// on returns the run, its key's shard and its key.
func (d *directOps) on() (*scriptRun, *keyspace.Shard, []byte) {
	r := (*scriptRun)(d)
	return r, r.c.Held, r.call.Keys[0]
}

// done counts the command args ran, a write when write.
func (d *directOps) done(args [][]byte, write bool) {
	r := (*scriptRun)(d)
	s, sc := r.s, r.c
	cmd := r.command(args[0])
	if cmd == nil {
		return // no such command: the native named one that it does not run
	}
	if write {
		if !r.dirty.Load() {
			r.dirty.Store(true)
		}
		if s.syncWrites() {
			sc.mustSync = true
		}
	}
	sc.stat().commands.Add(1)
	s.timed(sc, cmd, args, r.lastEnd)
	r.lastEnd = sc.Tick
}

// replyError is err as the Direct methods return it: the text of its error reply.
func replyError(err error) error { return errors.New(command.ErrorText(err)) }

func (d *directOps) Time(args [][]byte) (sec, usec int64) {
	now := (*scriptRun)(d).c.clock()
	d.done(args, false)
	return now.Unix(), int64(now.Nanosecond() / 1000)
}

func (d *directOps) Get(args [][]byte) (val []byte, found, ok bool) {
	r, sh, key := d.on()
	v, found := sh.GetLocked(key, r.c.Now())
	if found && v.Kind != keyspace.String {
		return nil, true, false
	}
	r.c.CountLookup(sh, key, found)
	d.done(args, false)
	return v.Bytes, found, true
}

func (d *directOps) PTTL(args [][]byte) int64 {
	r, sh, key := d.on()
	now := r.c.Now()
	v, ok := sh.PeekLocked(key, now)
	r.c.CountLookup(sh, key, ok)
	d.done(args, false)
	return datatype.TTLOf(v, ok, now, 1e6, false)
}

func (d *directOps) Set(args [][]byte, val []byte, ms int64, nx bool) (bool, error) {
	r, sh, key := d.on()
	now := r.c.Now()
	when, fits := datatype.ExpireAt(ms, 1e6, false, now)
	if !fits {
		return false, replyError(datatype.ErrInvalidExpire(string(args[0])))
	}
	if nx {
		if _, exists := sh.GetLocked(key, now); exists {
			d.done(args, true)
			return false, nil
		}
	}
	sh.SetLocked(key, keyspace.Value{Kind: keyspace.String, Bytes: val, Expire: when})
	r.c.Notify(notify.String, "set", key)
	r.c.Notify(notify.Generic, "expire", key) // PX ms, always
	d.done(args, true)
	return true, nil
}

func (d *directOps) IncrBy(args [][]byte, by int64) (int64, error) {
	r, sh, key := d.on()
	n, err := datatype.IncrLocked(sh, key, by, r.c.Now())
	if err != nil {
		return 0, replyError(err)
	}
	r.c.Notify(notify.String, "incrby", key)
	d.done(args, true)
	return n, nil
}

func (d *directOps) Expire(args [][]byte, seconds int64) (bool, error) {
	r, sh, key := d.on()
	now := r.c.Now()
	when, fits := datatype.ExpireTime(seconds, 1e9, false, now)
	if !fits {
		return false, replyError(datatype.ErrInvalidExpire(string(args[0])))
	}
	if _, ok := sh.GetLocked(key, now); !ok {
		d.done(args, true)
		return false, nil
	}
	datatype.SetExpireLocked(&r.c.Ctx, sh, key, when, now)
	r.c.Notify(notify.Generic, "expire", key)
	d.done(args, true)
	return true, nil
}
