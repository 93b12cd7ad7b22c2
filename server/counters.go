package server

import (
	"runtime"
	"sync/atomic"
)

// The counters a command's path writes (INFO stats, commandstats and throttle, /metrics) are
// kept per counter slot, not in the Server or the command table: each event loop writes the
// slot of its own, so that no call writes a cache line that another loop's calls write too,
// and a reader sums the slots. Two calls that wrote one shared counter moved its line between
// their cores at every call: on 2 cores, two goroutines made no more calls a second than one.
//
// A slot's counters stay atomic: a client that leaves its loop for a goroutine (a blocking
// command, a long script) goes on counting in its loop's slot, the clients no loop serves
// share the slots by id, and CONFIG RESETSTAT zeroes them from another goroutine. An atomic
// add to a line no other core holds costs a few cycles; it is the line's transfers that
// cost, and those are gone. Sums are exact once the calls counted have returned.

// cacheLine is what a slot's counters are kept apart by: two lines, as the adjacent-line
// prefetcher of x86 fetches lines in pairs.
const cacheLine = 128

// cmdCounts are one command's counters in one slot.
type cmdCounts struct {
	calls    atomic.Int64 // calls since start or CONFIG RESETSTAT
	nsec     atomic.Int64 // time spent running it
	rejected atomic.Int64 // calls refused before running: arity, NOAUTH, READONLY...
	failed   atomic.Int64 // calls that ran and replied an error
	allowed  atomic.Int64 // rate-limit verbs: decisions that allowed
	denied   atomic.Int64 // rate-limit verbs: decisions that denied
}

// cmdPad is how many cmdCounts keep a slot's commands off the lines of its neighbours in
// memory.
const cmdPad = (cacheLine + 47) / 48

// statSlot is one slot's counters.
type statSlot struct {
	_        [cacheLine]byte
	commands atomic.Int64 // commands processed
	errors   atomic.Int64 // error replies
	allowed  atomic.Int64 // rate-limit decisions that allowed
	denied   atomic.Int64 // rate-limit decisions that denied
	refunded atomic.Int64 // units REFUND gave back
	unstored atomic.Int64 // decisions answered without keeping their new state (memory.go)
	blocks   atomic.Int64 // penalty boxes (BLOCK) started: denials that put a key in its box
	blocked  atomic.Int64 // calls denied by a key's penalty box in force
	// byDoor counts the decisions of the edge's doors, allowed [0] and denied [1] (edge.go).
	byDoor [doors][2]atomic.Int64
	cmds   []cmdCounts // by the command's aclID
	_      [cacheLine]byte
}

// statTotals are the slots' sums.
type statTotals struct {
	commands, errors, allowed, denied, refunded, unstored, blocks, blocked int64
	byDoor                                                                 [doors][2]int64
}

// cmdTotals are one command's counters summed over the slots.
type cmdTotals struct {
	calls, nsec, rejected, failed, allowed, denied int64
}

// statSlots is how many slots a server with cfg keeps: one per event loop, and at least one
// per P, so that the clients served by goroutines of their own (io-threads 0, TLS) spread
// over as many as can run at once.
func statSlots(cfg Config) int { return max(1, cfg.IOThreads, runtime.GOMAXPROCS(0)) }

// initCounters makes the slots once the commands have their ids (openACL).
func (s *Server) initCounters(ncmds int) {
	s.slots = make([]*statSlot, statSlots(s.cfg))
	for i := range s.slots {
		cmds := make([]cmdCounts, ncmds+2*cmdPad)
		s.slots[i] = &statSlot{cmds: cmds[cmdPad : cmdPad+ncmds : cmdPad+ncmds]}
	}
}

// slotFor is the slot of the clients with id, which no event loop serves.
func (s *Server) slotFor(id int64) int { return int(uint64(id) % uint64(len(s.slots))) }

// stat is the slot c counts in.
func (c *client) stat() *statSlot { return c.s.slots[c.Slot] }

// counts is the counters of cmd in c's slot.
func (c *client) counts(cmd *cmdEntry) *cmdCounts { return &c.s.slots[c.Slot].cmds[cmd.aclID] }

// totals sums the slots.
func (s *Server) totals() statTotals {
	var t statTotals
	for _, sl := range s.slots {
		t.commands += sl.commands.Load()
		t.errors += sl.errors.Load()
		t.allowed += sl.allowed.Load()
		t.denied += sl.denied.Load()
		t.refunded += sl.refunded.Load()
		t.unstored += sl.unstored.Load()
		t.blocks += sl.blocks.Load()
		t.blocked += sl.blocked.Load()
		for d := range sl.byDoor {
			t.byDoor[d][0] += sl.byDoor[d][0].Load()
			t.byDoor[d][1] += sl.byDoor[d][1].Load()
		}
	}
	return t
}

// cmdTotals sums cmd's counters over the slots.
func (s *Server) cmdTotals(cmd *cmdEntry) cmdTotals {
	var t cmdTotals
	for _, sl := range s.slots {
		cc := &sl.cmds[cmd.aclID]
		t.calls += cc.calls.Load()
		t.nsec += cc.nsec.Load()
		t.rejected += cc.rejected.Load()
		t.failed += cc.failed.Load()
		t.allowed += cc.allowed.Load()
		t.denied += cc.denied.Load()
	}
	return t
}

// resetCounters zeroes every slot (CONFIG RESETSTAT); a call counting meanwhile may keep
// its count or lose it, as with one counter.
func (s *Server) resetCounters() {
	for _, sl := range s.slots {
		for _, v := range []*atomic.Int64{&sl.commands, &sl.errors, &sl.allowed, &sl.denied, &sl.refunded, &sl.unstored, &sl.blocks, &sl.blocked} {
			v.Store(0)
		}
		for d := range sl.byDoor {
			sl.byDoor[d][0].Store(0)
			sl.byDoor[d][1].Store(0)
		}
		for i := range sl.cmds {
			cc := &sl.cmds[i]
			for _, v := range []*atomic.Int64{&cc.calls, &cc.nsec, &cc.rejected, &cc.failed, &cc.allowed, &cc.denied} {
				v.Store(0)
			}
		}
	}
}
