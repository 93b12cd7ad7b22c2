package server

import (
	"errors"
	"hash/maphash"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/command"
)

// Transactions, as Redis's: MULTI starts queueing a client's requests, EXEC runs them one
// after the other and replies with an array of their replies, DISCARD drops them. A request
// refused while queueing (unknown, wrong arity, not allowed in a transaction) dooms the
// transaction: EXEC then replies EXECABORT and runs nothing. WATCH makes EXEC run nothing
// and reply a null array when a watched key was written, deleted or expired since.
//
// Isolation is by key, not by a global lock: EXEC locks the transaction stripes of every key
// its requests and WATCH name (a write command without keys, such as FLUSHALL or ALLOF,
// takes them all), so that transactions over common keys run one after the other and the
// others in parallel. Scripts and functions take stripes the same way (scripting.go).
//
// A plain command of another client on a key whose stripe a transaction or script holds
// waits for it to end, as on Redis, where nothing runs in between; one on other keys runs
// in parallel. That is a gate (enterGate) each plain command with keys passes, made cheap
// for the common case where no transaction holds anything: the command counts itself in
// a slot (its event loop's, so that no other core writes that cache line; a client no loop
// serves, one of the others by its id) and reads the set of stripes held; when that is
// empty, it runs. A transaction or script that takes a stripe adds it to the set and then
// waits for every slot in use to be empty, so that a command that read the set before the
// stripe was in it has ended before the first of its requests runs (sequentially
// consistent atomics: one of the two sees the other's write). The slots in use are those
// below a mark a command raises before it counts itself, so a transaction reads a few
// cache lines, one per loop, not 64. A command that finds a stripe of its keys held takes
// those stripes itself, as EXEC does, for its run. Plain commands without keys (FLUSHALL,
// CHECK, ALLOF, whose keys their arguments do not show) do not wait.

// txStripes is the number of transaction stripes: a set of them fits a uint64.
const txStripes = 64

// txLocks are the server's transaction stripes.
type txLocks struct {
	seed    maphash.Seed
	stripes [txStripes]sync.Mutex
	held    atomic.Uint64 // the stripes transactions and scripts hold (gate)
	slots   [txStripes]gateSlot
	used    atomic.Int32 // the slots below it have been used: hold waits for those
}

// gateSlot counts the plain commands in the gate of the clients it serves (Server.gateSlot).
type gateSlot struct {
	n atomic.Int64
	_ [cacheLine - 8]byte // two cache lines each: the adjacent-line prefetcher fetches pairs
}

// transaction is a client's requests queued between MULTI and EXEC.
type transaction struct {
	queued []queuedRequest
	failed bool   // a request was refused while queueing: EXEC replies EXECABORT
	bits   uint32 // the queued commands' flags but the rate limits', together (txBits)
}

type queuedRequest struct {
	cmd  *cmdEntry
	args [][]byte // copies: the request's own arguments alias the read buffer
}

// errExecAbort is EXEC's reply to a transaction whose queueing failed.
var errExecAbort = &command.Error{Code: "EXECABORT", Msg: "Transaction discarded because of previous errors."}

// errNotInMulti refuses a command flagged no-multi inside MULTI.
var errNotInMulti = errors.New("Command not allowed inside a transaction")

func multiCommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "multi", allowBusy: true, noScript: true, arity: 1, flags: "noscript loading stale fast", bits: flagNoQueue, group: "transactions", since: "1.2.0", summary: "Starts a transaction.", handler: cmdMulti},
		{name: "exec", holdsStripes: true, noScript: true, arity: 1, flags: "noscript loading stale", bits: flagNoQueue, group: "transactions", since: "1.2.0", summary: "Executes all commands in a transaction.", handler: cmdExec},
		{name: "discard", allowBusy: true, noScript: true, arity: 1, flags: "noscript loading stale fast", bits: flagNoQueue, group: "transactions", since: "2.0.0", summary: "Discards a transaction.", handler: cmdDiscard},
		{name: "watch", allowBusy: true, noScript: true, arity: -2, flags: "noscript loading stale fast", bits: flagNoQueue, firstKey: 1, lastKey: -1, group: "transactions", since: "2.2.0", summary: "Monitors changes to keys to determine the execution of a transaction.", syntax: "key [key ...]", handler: cmdWatch},
		{name: "unwatch", allowBusy: true, noScript: true, arity: 1, flags: "noscript loading stale fast", group: "transactions", since: "2.2.0", summary: "Forgets about watched keys of a transaction.", handler: cmdUnwatch},
	}
}

// queue keeps a copy of a request for EXEC and replies QUEUED.
func (s *Server) queue(c *client, cmd *cmdEntry, args [][]byte) {
	if cmd.has(flagNoMulti) {
		s.reject(c, cmd, errNotInMulti)
		return
	}
	size := 0
	for _, a := range args {
		size += len(a)
	}
	buf := make([]byte, 0, size)
	copied := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		copied[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	c.tx.queued = append(c.tx.queued, queuedRequest{cmd: cmd, args: copied})
	if cmd.bits&flagRatelimit == 0 { // a decision is answered all the same (memory.go)
		c.tx.bits |= cmd.bits
	}
	c.multi.Store(int32(len(c.tx.queued)) + 1)
	c.W.Simple("QUEUED")
}

// txBits are the flags inside MULTI that Redis checks a request by beyond its own: every
// request queued may use memory; EXEC has those of the commands it queued.
func (c *client) txBits(cmd *cmdEntry) uint32 {
	switch {
	case c.tx == nil || cmd.bits&flagRatelimit != 0:
		return 0
	case cmd.name == "exec":
		return c.tx.bits
	case cmd.bits&flagNoQueue == 0:
		return flagDenyOOM
	}
	return 0
}

// MULTI
func cmdMulti(c *client, args [][]byte) error {
	if c.tx != nil {
		return errors.New("MULTI calls can not be nested")
	}
	c.tx = &transaction{}
	c.multi.Store(1)
	c.W.OK()
	return nil
}

// EXEC
func cmdExec(c *client, args [][]byte) error {
	tx := c.tx
	if tx == nil {
		return errors.New("EXEC without MULTI")
	}
	c.endMulti()
	if tx.failed {
		c.unwatchAll()
		return errExecAbort
	}
	if tx.bits&flagWrite != 0 && !c.s.isReplica.Load() { // too few replicas since queueing
		if err := c.s.checkWrite(c, nil); err != nil { // a primary's check reads no command
			c.unwatchAll()
			return command.ExecAbort(err)
		}
	}
	s := c.s
	locked := s.lockTx(c, tx)
	c.txHeld = locked // a script inside takes only the stripes EXEC does not hold
	defer func() {
		c.txHeld = 0
		s.unlockTx(locked)
	}()
	changed := c.watchChanged()
	c.unwatchAll()
	if changed {
		c.W.NullArray()
		return nil
	}
	c.W.Array(len(tx.queued))
	c.NoBlock = true // a blocking command answers as on its timeout
	for _, q := range tx.queued {
		s.call(c, q.cmd, q.args)
	}
	c.NoBlock = false
	return nil
}

// DISCARD
func cmdDiscard(c *client, args [][]byte) error {
	if c.tx == nil {
		return errors.New("DISCARD without MULTI")
	}
	c.endMulti()
	c.unwatchAll()
	c.W.OK()
	return nil
}

// WATCH key [key ...]
func cmdWatch(c *client, args [][]byte) error {
	if c.tx != nil {
		return errors.New("WATCH inside MULTI is not allowed")
	}
	now := c.Now()
	if c.watched == nil {
		c.watched = make(map[string]struct{})
	}
	for _, key := range args[1:] {
		if _, ok := c.watched[string(key)]; ok {
			continue
		}
		sh := c.s.ks.Shard(key)
		sh.Lock()
		sh.GetLocked(key, now) // a key already expired goes before the watch starts
		sh.WatchLocked(key, &c.watch)
		sh.Unlock()
		c.watched[string(key)] = struct{}{}
	}
	c.W.OK()
	return nil
}

// UNWATCH
func cmdUnwatch(c *client, args [][]byte) error {
	c.unwatchAll()
	c.W.OK()
	return nil
}

// endMulti leaves MULTI, dropping the queued requests.
func (c *client) endMulti() {
	c.tx = nil
	c.multi.Store(0)
}

// watchChanged reports whether a watched key changed since WATCH. A key that expired since
// counts as changed, as in Redis: reading it removes it, which marks the watch.
func (c *client) watchChanged() bool {
	now := c.Now()
	for k := range c.watched {
		key := []byte(k)
		sh := c.s.ks.Shard(key)
		sh.Lock()
		sh.GetLocked(key, now)
		sh.Unlock()
	}
	return c.watch.Changed()
}

// unwatchAll forgets every watched key (UNWATCH, EXEC, DISCARD, RESET, disconnection).
func (c *client) unwatchAll() {
	for k := range c.watched {
		key := []byte(k)
		sh := c.s.ks.Shard(key)
		sh.Lock()
		sh.UnwatchLocked(key, &c.watch)
		sh.Unlock()
		delete(c.watched, k)
	}
	c.watch.Reset()
}

// lockTx takes the transaction stripes tx and c's watched keys need, in ascending order, and
// returns them for unlockTx.
func (s *Server) lockTx(c *client, tx *transaction) uint64 {
	var set uint64
	for k := range c.watched {
		set |= s.txStripe([]byte(k))
	}
	for _, q := range tx.queued {
		keys := commandKeys(q.cmd, q.args)
		if len(keys) == 0 && q.cmd.has(flagWrite) {
			set = ^uint64(0) // its keys are not known from its arguments: lock them all
			break
		}
		for _, k := range keys {
			set |= s.txStripe(k)
		}
	}
	for rest := set; rest != 0; rest &= rest - 1 {
		s.txLocks.stripes[bits.TrailingZeros64(rest)].Lock()
	}
	s.txLocks.hold(set)
	return set
}

func (s *Server) unlockTx(set uint64) {
	s.txLocks.held.And(^set)
	s.unlockStripes(set)
}

// hold marks the stripes in set, just locked, as held, and waits until every plain command
// that passed the gate before has ended.
func (t *txLocks) hold(set uint64) {
	if set == 0 {
		return
	}
	t.held.Or(set)
	for i := range int(t.used.Load()) {
		for spin := 0; t.slots[i].n.Load() != 0; spin++ {
			if spin < 100 {
				runtime.Gosched()
			} else {
				time.Sleep(time.Microsecond)
			}
		}
	}
}

// enterGate lets c's plain command cmd on args run: at once, counted in c's slot, when no
// transaction or script holds a stripe of its keys (leaveGate ends that), or else once it
// holds those stripes itself, which it returns for leaveGate to release. It gives up with
// BUSY when a script holding them has run past busy-reply-threshold.
func (s *Server) enterGate(c *client, cmd *cmdEntry, args [][]byte) (slot *gateSlot, own uint64, err error) {
	t := &s.txLocks
	slot = s.gateSlot(c)
	slot.n.Add(1)
	held := t.held.Load()
	if held == 0 {
		return slot, 0, nil
	}
	need := s.stripesOf(cmd, args)
	if need&held == 0 || need == ^uint64(0) {
		return slot, 0, nil
	}
	slot.n.Add(-1)
	c.letGo() // it waits: not holding a shard that the stripes' holder may want (batch.go)
	for rest := need; rest != 0; rest &= rest - 1 {
		mu := &t.stripes[bits.TrailingZeros64(rest)]
		for pause := time.Microsecond; !mu.TryLock(); pause = min(2*pause, 200*time.Microsecond) {
			if s.scripts.nbusy.Load() > 0 && !cmd.has(flagAllowBusy) {
				s.unlockStripes(need &^ rest)
				return nil, 0, s.scripts.busyError()
			}
			time.Sleep(pause)
		}
	}
	return nil, need, nil
}

// gateSlot returns the gate's slot of c's commands, counted among those in use: its event
// loop's, or one of the slots after the loops' by its id.
func (s *Server) gateSlot(c *client) *gateSlot {
	t := &s.txLocks
	i := c.loopID()
	if n := min(s.cfg.IOThreads, txStripes-1); i < 0 || i >= n {
		i = n + int(c.id%int64(txStripes-n))
	}
	for u := t.used.Load(); int(u) <= i; u = t.used.Load() {
		if t.used.CompareAndSwap(u, int32(i+1)) {
			break
		}
	}
	return &t.slots[i]
}

// leaveGate ends what enterGate began.
func (s *Server) leaveGate(slot *gateSlot, own uint64) {
	if slot != nil {
		slot.n.Add(-1)
	}
	s.unlockStripes(own)
}

func (s *Server) unlockStripes(set uint64) {
	for ; set != 0; set &= set - 1 {
		s.txLocks.stripes[bits.TrailingZeros64(set)].Unlock()
	}
}

// stripesOf is the set of stripes a command touches: its keys', or all of them for a write
// whose keys its arguments do not show (FLUSHALL, ALLOF), as EXEC takes them.
func (s *Server) stripesOf(cmd *cmdEntry, args [][]byte) uint64 {
	var set uint64
	if cmd.keysOf == nil && cmd.firstKey > 0 { // commandKeys without its slice
		last := cmd.lastKey
		if last < 0 {
			last += len(args)
		}
		for i := cmd.firstKey; i <= last && i < len(args); i += cmd.keyStep {
			set |= s.txStripe(args[i])
		}
	} else {
		for _, k := range commandKeys(cmd, args) {
			set |= s.txStripe(k)
		}
	}
	if set == 0 && cmd.has(flagWrite) {
		return ^uint64(0)
	}
	return set
}

// txStripe is the stripe of key, as a one-bit set.
func (s *Server) txStripe(key []byte) uint64 {
	return 1 << (maphash.Bytes(s.txLocks.seed, key) % txStripes)
}
