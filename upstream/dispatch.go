package upstream

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttledhq/throttled/keyspace"
)

// casSHA is the SHA1 of casScript, for EVALSHA.
var casSHA = func() string { h := sha1.Sum([]byte(casScript)); return hex.EncodeToString(h[:]) }()

const (
	// maxBatch is the most calls one batch evaluates; the rest wait for the next.
	maxBatch = 1024
	// maxTries is how many times a call is evaluated again after conflicts before it is
	// handed back as unavailable: a key so contended that its instance never wins.
	maxTries = 200
)

// waitingCall is a call with the number of times it was sent.
type waitingCall struct {
	call  Call
	tries int
}

// slot is one key of a group: what the cache held, and the state the group's calls leave.
type slot struct {
	key   []byte // a copy: a call settled at once may be reused by its client while the batch is built
	hash  uint64
	seen  bool         // the key was in the cache: tag is what the CAS expects
	tag   [tagLen]byte // the tag seen
	cur   keyspace.Value
	buf   []byte // holds cur.Bytes
	write bool
	next  [tagLen]byte // the tag written
	enc   []byte       // the value written
}

// group is one command of a batch: a chain of one-key calls on one key, or one call over
// several keys. Its calls' decisions hold together if the command succeeds.
type group struct {
	slots  []slot
	calls  []waitingCall
	spec   bool // a call writes: later calls were evaluated on a state not on the upstream yet
	verify bool // a call's decision needs the command even without a write
	args   []any
	cmd    *redis.Cmd
}

// seen reports whether every key of g was in the cache.
func (g *group) seen() bool {
	for i := range g.slots {
		if !g.slots[i].seen {
			return false
		}
	}
	return true
}

// batch is one pipeline: built by the dispatcher, sent by a connection's goroutine.
type batch struct {
	groups []group
	n      int              // groups in use
	index  map[uint64]int32 // key hash -> group, or -1: later calls on the key wait
	cmds   []redis.Cmder
	err    error
	rtt    time.Duration
	cbuf   []byte // putCached's scratch
}

func (b *batch) reset() {
	for i := range b.groups[:b.n] {
		g := &b.groups[i]
		for j := range g.slots {
			g.slots[j] = slot{key: g.slots[j].key[:0], buf: g.slots[j].buf[:0], enc: g.slots[j].enc[:0]}
		}
		g.slots = g.slots[:0]
		clear(g.calls)
		g.calls = g.calls[:0]
		clear(g.args)
		g.args = g.args[:0]
		g.spec, g.verify, g.cmd = false, false, nil
	}
	b.n = 0
	clear(b.index)
	clear(b.cmds)
	b.cmds = b.cmds[:0]
	b.err = nil
}

// newGroup returns a fresh group of b.
func (b *batch) newGroup() (int32, *group) {
	if b.n == len(b.groups) {
		b.groups = append(b.groups, group{})
	}
	b.n++
	return int32(b.n - 1), &b.groups[b.n-1]
}

// dispatcher is the state of the dispatcher's goroutine.
type dispatcher struct {
	u        *Client
	seed     maphash.Seed
	inflight map[uint64]int32 // key hash -> batches in flight that write or check it
	streak   int              // round trips failed in a row
}

// dispatch gathers the queued calls into batches, sends each on a free connection, and
// applies what comes back.
func (u *Client) dispatch() {
	defer u.wg.Done()
	d := &dispatcher{u: u, seed: maphash.MakeSeed(), inflight: make(map[uint64]int32)}
	idle := make([]*batch, u.cfg.Conns)
	for i := range idle {
		idle[i] = &batch{index: make(map[uint64]int32)}
	}
	var waiting, spare []waitingCall
	inflight := 0
	for {
		u.mu.Lock()
		for _, c := range u.queue {
			waiting = append(waiting, waitingCall{call: c})
		}
		clear(u.queue)
		u.queue = u.queue[:0]
		u.mu.Unlock()
		if u.breaker.Load() == open {
			for _, w := range waiting {
				u.unavailable(w.call)
			}
			clear(waiting)
			waiting = waiting[:0]
		}
		for len(waiting) > 0 && len(idle) > 0 && (u.breaker.Load() != halfOpen || inflight == 0) {
			b := idle[len(idle)-1]
			before := len(waiting)
			waiting, spare = d.build(b, waiting, spare)
			if len(b.cmds) == 0 {
				b.reset()
			} else {
				select {
				case u.work <- b:
				case <-u.done:
					d.abandon(waiting)
					return
				}
				idle = idle[:len(idle)-1]
				inflight++
			}
			if len(waiting) == before {
				break // what is left waits for keys in flight
			}
		}
		select {
		case <-u.done:
			d.abandon(waiting)
			return
		case b := <-u.results:
			inflight--
			spare = d.apply(b, spare[:0])
			// Calls sent before come before those that waited.
			spare = append(spare, waiting...)
			clear(waiting)
			waiting, spare = spare, waiting[:0]
			b.reset()
			idle = append(idle, b)
		case <-u.wake:
		}
	}
}

// abandon hands back every call still waiting or queued when the client closes.
func (d *dispatcher) abandon(waiting []waitingCall) {
	for _, w := range waiting {
		d.u.unavailable(w.call)
	}
	d.u.mu.Lock()
	q := d.u.queue
	d.u.queue = nil
	d.u.mu.Unlock()
	for _, c := range q {
		d.u.unavailable(c)
	}
}

// unavailable hands c back to be decided locally.
func (u *Client) unavailable(c Call) {
	u.stats.unavail.Add(1)
	c.Done(ErrUnavailable)
}

// build evaluates the waiting calls into b's groups and commands. It returns the calls left
// for a later batch (their keys are in flight or in a command of b, or b is full), in order,
// in rest's storage, and waiting's storage emptied.
func (d *dispatcher) build(b *batch, waiting, rest []waitingCall) (left, spare []waitingCall) {
	u := d.u
	now := u.clock.now()
	rest = rest[:0]
	used := 0
	for i, w := range waiting {
		if used == maxBatch {
			rest = append(rest, waiting[i:]...)
			break
		}
		keys := w.call.Keys()
		if len(keys) == 1 {
			h := maphash.Bytes(d.seed, keys[0])
			gi, ok := b.index[h]
			if d.inflight[h] > 0 || ok && (gi < 0 || len(b.groups[gi].slots) != 1 || !bytes.Equal(b.groups[gi].slots[0].key, keys[0])) {
				b.index[h] = -1
				rest = append(rest, w)
				continue
			}
			var g *group
			if ok {
				g = &b.groups[gi]
			} else {
				gi, g = b.newGroup()
				d.addSlot(g, keys[0], h, now)
				b.index[h] = gi
			}
			d.eval(g, w, now)
			used++
			continue
		}
		blocked := false
		for _, k := range keys {
			h := maphash.Bytes(d.seed, k)
			if _, ok := b.index[h]; ok || d.inflight[h] > 0 {
				blocked = true
			}
		}
		if blocked {
			for _, k := range keys {
				b.index[maphash.Bytes(d.seed, k)] = -1
			}
			rest = append(rest, w)
			continue
		}
		_, g := b.newGroup()
		for _, k := range keys {
			d.addSlot(g, k, maphash.Bytes(d.seed, k), now)
		}
		used++
		if d.eval(g, w, now) {
			b.n-- // settled at once: the keys stay free for the calls after it
			g.slots = g.slots[:0]
			continue
		}
		for i := range g.slots {
			b.index[g.slots[i].hash] = -1
		}
	}
	for i := range b.groups[:b.n] {
		g := &b.groups[i]
		if g.spec || g.verify {
			d.command(g)
			b.cmds = append(b.cmds, g.cmd)
			for j := range g.slots {
				d.inflight[g.slots[j].hash]++
			}
		}
	}
	clear(waiting)
	return rest, waiting[:0]
}

// addSlot adds key to g with the state the cache holds for it.
func (d *dispatcher) addSlot(g *group, key []byte, h uint64, now int64) {
	if len(g.slots) < cap(g.slots) {
		g.slots = g.slots[:len(g.slots)+1]
	} else {
		g.slots = append(g.slots, slot{})
	}
	s := &g.slots[len(g.slots)-1]
	*s = slot{key: append(s.key[:0], key...), hash: h, buf: s.buf[:0], enc: s.enc[:0]}
	sh := d.u.cache.Shard(key)
	sh.Lock()
	if e, ok := getCached(sh, key, now); ok {
		s.seen, s.tag = true, e.tag
		s.setCur(e.state(now))
	}
	sh.Unlock()
}

// setCur makes v the slot's state, copying its bytes.
func (s *slot) setCur(v keyspace.Value) {
	s.buf = append(s.buf[:0], v.Bytes...)
	s.cur = v
	s.cur.Bytes = nil
	if len(s.buf) > 0 {
		s.cur.Bytes = s.buf
	}
}

// eval evaluates w on g's current states and adds it to g, or settles it at once (true).
func (d *dispatcher) eval(g *group, w waitingCall, now int64) bool {
	st := w.call.States()
	for i := range g.slots {
		st[i] = State{Cur: g.slots[i].cur}
	}
	switch w.call.Eval(now) {
	case Write:
		for i := range g.slots {
			if st[i].Write {
				g.slots[i].setCur(st[i].Next)
				g.slots[i].write = true
			}
		}
		g.spec = true
	case Verify:
		g.verify = true
	case Settled:
		if !g.spec && g.seen() {
			d.u.stats.local.Add(1)
			w.call.Done(nil)
			return true
		}
		g.verify = true
	}
	g.calls = append(g.calls, w)
	return false
}

// command builds g's EVALSHA of the CAS script.
func (d *dispatcher) command(g *group) {
	args := append(g.args[:0], "evalsha", casSHA, strconv.Itoa(len(g.slots)))
	for i := range g.slots {
		args = append(args, string(g.slots[i].key)) // a string: the Cluster client routes by it
	}
	for i := range g.slots {
		s := &g.slots[i]
		var want []byte
		if s.seen {
			want = s.tag[:]
		}
		switch {
		case !s.write:
			args = append(args, want, "", "0")
		case s.cur.Kind == keyspace.None:
			args = append(args, want, "-", "0")
		default:
			binary.LittleEndian.PutUint64(s.next[:], rand.Uint64())
			s.enc = encode(s.enc[:0], s.next, s.cur)
			args = append(args, want, s.enc, pxat(s.cur.Expire))
		}
	}
	g.args = args
	g.cmd = redis.NewCmd(context.Background(), args...)
}

// roundTrips is a connection's goroutine: it sends each batch as one pipeline.
func (u *Client) roundTrips() {
	defer u.wg.Done()
	pipe := u.rdb.Pipeline()
	ctx := context.Background()
	for {
		var b *batch
		select {
		case <-u.done:
			return
		case b = <-u.work:
		}
		start := time.Now()
		for _, c := range b.cmds {
			pipe.Process(ctx, c)
		}
		if _, b.err = pipe.Exec(ctx); b.err != nil {
			// A connection that could not be had sets no command's error.
			for _, c := range b.cmds {
				if c := c.(*redis.Cmd); c.Err() == nil && c.Val() == nil {
					c.SetErr(b.err)
				}
			}
		}
		b.rtt = time.Since(start)
		u.stats.roundTrips.Add(1)
		u.stats.commands.Add(int64(len(b.cmds)))
		u.results <- b // buffered for every batch there is
	}
}

// apply takes a batch's replies: the cache learns the states, the calls are done or wait
// again (appended to again, returned).
func (d *dispatcher) apply(b *batch, again []waitingCall) []waitingCall {
	u := d.u
	now := u.clock.now()
	var failure error
	for i := range b.groups[:b.n] {
		g := &b.groups[i]
		if g.cmd == nil {
			continue
		}
		for j := range g.slots {
			h := g.slots[j].hash
			if d.inflight[h]--; d.inflight[h] <= 0 {
				delete(d.inflight, h)
			}
		}
		v, err := g.cmd.Result()
		switch {
		case err == nil && v == int64(1):
			b.cbuf = d.learnWrites(g, now, b.cbuf)
			for _, w := range g.calls {
				w.call.Done(nil)
			}
		case err == nil:
			u.stats.conflicts.Add(1)
			vals, _ := v.([]any)
			if bad := d.learnCurrent(g, vals, now, b); bad != nil {
				for _, w := range g.calls {
					w.call.Done(bad)
				}
				continue
			}
			again = d.retry(g, again)
		case redis.HasErrorPrefix(err, "NOSCRIPT"):
			ctx, cancel := context.WithTimeout(context.Background(), u.cfg.Timeout)
			u.loadScript(ctx)
			cancel()
			again = d.retry(g, again)
		case redis.HasErrorPrefix(err, "WRONGTYPE"):
			for _, w := range g.calls {
				w.call.Done(ErrForeignValue)
			}
		case redis.HasErrorPrefix(err, "TRYAGAIN"), redis.HasErrorPrefix(err, "MOVED"), redis.HasErrorPrefix(err, "ASK"):
			again = d.retry(g, again)
		default:
			// Failed or timed out: a write may or may not have been made, so the cache
			// forgets the keys written.
			failure = err
			d.forgetWrites(g)
			for _, w := range g.calls {
				u.unavailable(w.call)
			}
		}
	}
	if failure != nil {
		d.streak++
		u.failed(d.streak, failure)
	} else {
		d.streak = 0
		u.succeeded(b.rtt)
	}
	return again
}

// retry queues g's calls again, or hands back those tried too often.
func (d *dispatcher) retry(g *group, again []waitingCall) []waitingCall {
	for _, w := range g.calls {
		w.tries++
		if w.tries >= maxTries {
			d.u.unavailable(w.call)
			continue
		}
		again = append(again, w)
	}
	return again
}

// learnWrites puts the states g wrote into the cache.
func (d *dispatcher) learnWrites(g *group, now int64, buf []byte) []byte {
	for i := range g.slots {
		s := &g.slots[i]
		if !s.write {
			continue
		}
		sh := d.u.cache.Shard(s.key)
		sh.Lock()
		if s.cur.Kind == keyspace.None {
			sh.DeleteLocked(s.key)
		} else {
			buf = putCached(sh, s.key, &cached{tag: s.next, v: s.cur}, now, buf)
		}
		sh.Unlock()
	}
	return buf
}

// forgetWrites drops from the cache the keys g tried to write.
func (d *dispatcher) forgetWrites(g *group) {
	for i := range g.slots {
		if s := &g.slots[i]; s.write {
			sh := d.u.cache.Shard(s.key)
			sh.Lock()
			sh.DeleteLocked(s.key)
			sh.Unlock()
		}
	}
}

// learnCurrent puts the values a failed CAS handed back into the cache; an error when one is
// not throttled's.
func (d *dispatcher) learnCurrent(g *group, vals []any, now int64, b *batch) error {
	if len(vals) != len(g.slots) {
		return ErrForeignValue
	}
	for i := range g.slots {
		s := &g.slots[i]
		sh := d.u.cache.Shard(s.key)
		sh.Lock()
		switch x := vals[i].(type) {
		case nil:
			sh.DeleteLocked(s.key)
		case string:
			e, err := decode([]byte(x))
			if err != nil {
				sh.DeleteLocked(s.key)
				sh.Unlock()
				return err
			}
			b.cbuf = putCached(sh, s.key, &e, now, b.cbuf)
		default:
			sh.Unlock()
			return ErrForeignValue
		}
		sh.Unlock()
	}
	return nil
}
