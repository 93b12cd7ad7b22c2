package server

import (
	"errors"
	"strings"

	"throttled/keyspace"
)

// directOps is scripting.Direct for a native script's direct run (scriptRun.direct): the
// commands on its key, on the shard the run holds, each counted as the command it is
// (commandstats, latency, SLOWLOG, MONITOR: timed, from the end of the one before) and
// making the run dirty when it writes, as scriptRun.Call would. A command that fails is
// neither run nor counted: the native declines, and the interpreter runs it.
type directOps struct {
	r   *scriptRun
	sh  *keyspace.Shard
	key []byte
}

// offerDirect sets the run's Direct when no check of scriptRun.Call could refuse one of
// its commands on key, held in sh; clearDirect takes it back.
func (r *scriptRun) offerDirect(sh *keyspace.Shard, key []byte) {
	s := r.s
	if r.readOnly || !r.c.user.Load().Perms().All || s.isReplica.Load() || s.mem.full.Load() ||
		s.replCfg.minToWrite.Load() > 0 || string(key) == policiesKey || string(key) == functionsKey {
		return
	}
	r.ops = directOps{r: r, sh: sh, key: key}
	r.c.tick, r.c.lat = r.caller.tick, r.caller.lat // as Call sets them for each command
	r.call.Direct = &r.ops
}

func (r *scriptRun) clearDirect() {
	r.call.Direct = nil
	r.ops = directOps{}
}

// done counts the command args ran, a write when write.
func (d *directOps) done(args [][]byte, write bool) {
	r := d.r
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
	s.stats.commands.Add(1)
	s.timed(sc, cmd, args, r.lastEnd)
	r.lastEnd = sc.tick
}

func (d *directOps) Time(args [][]byte) (sec, usec int64) {
	now := d.r.s.now()
	d.done(args, false)
	return now.Unix(), int64(now.Nanosecond() / 1000)
}

func (d *directOps) Get(args [][]byte) (val []byte, found, ok bool) {
	v, found := d.sh.GetLocked(d.key, d.r.c.now())
	if found && v.Kind != keyspace.String {
		return nil, true, false
	}
	d.sh.CountLookup(found)
	d.done(args, false)
	return v.Bytes, found, true
}

func (d *directOps) PTTL(args [][]byte) int64 {
	now := d.r.c.now()
	v, ok := d.sh.PeekLocked(d.key, now)
	d.sh.CountLookup(ok)
	d.done(args, false)
	return ttlOf(v, ok, now, 1e6, false)
}

func (d *directOps) Set(args [][]byte, val []byte, ms int64, nx bool) (bool, error) {
	now := d.r.c.now()
	when, fits := expireAt(ms, 1e6, false, now)
	if !fits {
		return false, errors.New("ERR invalid expire time in '" + strings.ToLower(string(args[0])) + "' command")
	}
	if nx {
		if _, exists := d.sh.GetLocked(d.key, now); exists {
			d.done(args, true)
			return false, nil
		}
	}
	d.sh.SetLocked(d.key, keyspace.Value{Kind: keyspace.String, Bytes: val, Expire: when})
	d.done(args, true)
	return true, nil
}

func (d *directOps) IncrBy(args [][]byte, by int64) (int64, error) {
	n, err := incrLocked(d.sh, d.key, by, d.r.c.now())
	if err != nil {
		return 0, errors.New(errorText(err)) // the reply's text
	}
	d.done(args, true)
	return n, nil
}

func (d *directOps) Expire(args [][]byte, seconds int64) (bool, error) {
	now := d.r.c.now()
	when, fits := expireTime(seconds, 1e9, false, now)
	if !fits {
		return false, errors.New("ERR invalid expire time in '" + strings.ToLower(string(args[0])) + "' command")
	}
	if _, ok := d.sh.GetLocked(d.key, now); !ok {
		d.done(args, true)
		return false, nil
	}
	d.r.c.setExpireLocked(d.sh, d.key, when, now)
	d.done(args, true)
	return true, nil
}
