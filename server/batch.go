package server

import (
	"bytes"

	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/topk"
)

// A hot key (a flash sale's merchant, one attacker's address) brings every connection's
// pipeline to one shard, and each request there took the shard's lock and gave it back:
// the lock's line crossed cores once a request. An event loop that finds several requests
// of one read on one shard runs them under one acquisition instead, in order, each still
// a command of its own (checked, timed, counted and answered as ever): the lock is taken
// before the first (hold), kept while the next request, already read, is a batchable
// command on the same shard, and let go before anything else (letGo).
//
// Nothing that may wait runs while a pipeline holds a shard, or a wait could close a cycle
// (a script holding a stripe that wants the shard, a command holding the shard that wants
// the stripe). So the lock is let go before the loop reads or writes the socket, before a
// request that is not batchable or is on another shard, and, in dispatch, before a command
// waits: for CLIENT PAUSE, for eviction (which locks shards), at the gate of a transaction
// or script holding its key's stripe. A request inside MULTI, with a script busy or in
// upstream mode is not batched at all. Only commands whose one key is args[1] and whose
// handler takes its shard with LockShard are batchable (cmdEntry.batch): GET, SET, INCR and
// the commands a native script runs directly, and the rate-limit verbs of one key.

// hold makes c hold the shard args's command runs on, when it may run under a held lock
// and more of the pipeline is already read: it keeps the shard c holds when it is that one,
// and lets go of it otherwise.
func (s *Server) hold(c *client, args [][]byte) {
	if c.held == nil && c.rd.End <= c.rd.Start {
		return // the read's last request (a pipeline of one): no other to share a lock with
	}
	sh := s.batchShard(c, args)
	if sh == c.held {
		if sh != nil {
			sh.EndLoans() // the request before is done with the bytes it read
		}
		return
	}
	c.letGo()
	if sh != nil && c.rd.End > c.rd.Start { // another request follows: worth holding
		sh.Lock()
		c.held, c.Held = sh, sh
	}
}

// batchShard is the shard of args's key, when its command may run under a lock c holds for
// its pipeline; nil when not.
func (s *Server) batchShard(c *client, args [][]byte) *keyspace.Shard {
	if len(args) < 2 || c.tx != nil || s.up != nil || !c.authed && s.passwordSet() {
		return nil // (a client yet to authenticate locks nothing)
	}
	cmd := s.lookup(c, args[0])
	if cmd == nil || !cmd.batch || !cmd.arityOK(len(args)) {
		return nil
	}
	if s.pause.mode.Load() != pauseNone || s.mem.full.Load() || s.scripts.nbusy.Load() > 0 || s.txLocks.held.Load() != 0 {
		return nil // it may wait, or evict (dispatch lets go too, for what changes meanwhile)
	}
	return s.ks.Shard(args[1])
}

// letGo unlocks the shard c holds for its pipeline, if any, and adds the denials it ran
// up to TOPDENIED.
func (c *client) letGo() {
	if sh := c.held; sh != nil {
		c.held, c.Held = nil, nil
		sh.Unlock()
		c.flushDenied()
	}
}

// deniedRun is the denials of one key that c's pipeline ran in a row under a held shard:
// TOPDENIED's shard lock, which every denial of a key takes, is taken once for them all
// (topk.RecordN) when the run ends, before c's replies are written.
type deniedRun struct {
	key    []byte // a copy: the request's bytes are gone by then; at most topk.MaxKeyLen
	n, now int64
}

// recordDenied counts a denial of key at now for TOPDENIED: at once, or, while c holds a
// shard for its pipeline, in its run of denials of that key.
func (c *client) recordDenied(key []byte, now int64) {
	if c.held == nil {
		c.s.obs.denied.Record(key, now)
		return
	}
	key = key[:min(len(key), topk.MaxKeyLen)]
	d := &c.deniedRun
	if d.n > 0 && !bytes.Equal(d.key, key) {
		c.flushDenied()
	}
	if d.n == 0 {
		d.key = append(d.key[:0], key...)
	}
	d.n++
	d.now = now
}

// flushDenied records c's run of denials, if any.
func (c *client) flushDenied() {
	if d := &c.deniedRun; d.n > 0 {
		c.s.obs.denied.RecordN(d.key, d.n, d.now)
		d.n = 0
	}
}
