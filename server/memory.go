package server

import (
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/latency"
)

// maxmemory, as Redis's: the keyspace's own accounting (keyspace.UsedMemory) is compared
// with the limit a hundred times a second by a goroutine, which evicts by the
// policy until the keyspace is under it again and, while it is over, marks the server full.
// A command that may add data (Redis's denyoom flag, the rate-limit verbs among them) on a
// full server first evicts a couple of keys itself, so that eviction keeps pace with a flood
// of new keys however fast it comes; with noeviction, or when nothing is left to evict, it
// gets Redis's OOM error instead. Commands that free memory or only read are never refused.
//
// A rate-limit decision is never refused for memory, on any door (RESP, http-port and
// grpc-port all evict the same way first): a proxy reads an error as a pass, so an OOM
// would let a flood of random subjects open every limit. Where nothing can be evicted the
// verb runs with command.Ctx.NoRoom: it answers its decision, keeps the state of a key that
// exists and creates none, and INFO's unstored_decisions counts the decisions not kept.

// memoryCheck is how often the keyspace's memory is measured while maxmemory is set: a
// flood adds at most about this long's worth of keys before eviction starts.
const memoryCheck = 10 * time.Millisecond

// Eviction's batches: the loop evicts evictBatch keys between two measures; a full server's
// denyoom command evicts evictInline keys before it runs.
const (
	evictBatch  = 128
	evictInline = 2
)

// errOOM refuses a command that may add data while the keyspace is over maxmemory and
// nothing can be evicted.
var errOOM = &command.Error{Code: "OOM", Msg: "command not allowed when used memory > 'maxmemory'."}

// memoryLimit is maxmemory's state.
type memoryLimit struct {
	max     atomic.Int64 // maxmemory in bytes; 0 for none
	policy  atomic.Int32 // a keyspace.Policy
	samples atomic.Int64 // maxmemory-samples
	full    atomic.Bool  // the keyspace was over max at the last measure
	used    atomic.Int64 // the last measure, for INFO
	done    chan struct{}
}

func (s *Server) initMemory() {
	p, _ := keyspace.ParsePolicy(s.cfg.MaxMemoryPolicy) // Validate checked it
	s.mem.max.Store(s.cfg.MaxMemory)
	s.mem.policy.Store(int32(p))
	s.mem.samples.Store(int64(s.cfg.MaxMemorySamples))
	s.mem.done = make(chan struct{})
	go s.memoryLoop()
}

// setPolicy switches maxmemory-policy.
func (s *Server) setPolicy(p keyspace.Policy) {
	s.mem.policy.Store(int32(p))
}

// memoryLoop measures the keyspace and evicts while it is over maxmemory, until shutdown.
func (s *Server) memoryLoop() {
	defer close(s.mem.done)
	t := time.NewTicker(memoryCheck)
	defer t.Stop()
	for {
		select {
		case <-s.shutdown:
			return
		case <-t.C:
		}
		s.enforceMemory()
	}
}

// enforceMemory measures the keyspace and evicts by the policy until it is under maxmemory
// or nothing is left to evict; the server stays full in that case.
func (s *Server) enforceMemory() {
	limit := s.mem.max.Load()
	if limit <= 0 || s.isReplica.Load() { // a replica holds what its primary sends, as Redis's
		s.mem.full.Store(false)
		return
	}
	used := s.ks.UsedMemory() + s.global.Bytes() // GLOBAL's allowances count too
	p := keyspace.Policy(s.mem.policy.Load())
	if used > limit {
		start := time.Now()
		defer func() { s.latencySpike(latency.EventEvictionCycle, time.Since(start)) }()
	}
	for used > limit {
		s.mem.full.Store(true)
		if s.ks.Evict(p, evictBatch, int(s.mem.samples.Load()), s.nowNano()) == 0 {
			break
		}
		used = s.ks.UsedMemory() + s.global.Bytes()
		select {
		case <-s.shutdown:
			return
		default:
		}
	}
	s.mem.used.Store(used)
	s.mem.full.Store(used > limit)
}

// makeRoom runs before a command that may add data while the server is full: it evicts a
// few keys, or returns OOM when the policy is noeviction or nothing can go.
func (s *Server) makeRoom() error {
	p := keyspace.Policy(s.mem.policy.Load())
	if s.ks.Evict(p, evictInline, int(s.mem.samples.Load()), s.nowNano()) == 0 {
		return errOOM
	}
	return nil
}

// policyName is maxmemory-policy's running value.
func (s *Server) policyName() string { return keyspace.Policy(s.mem.policy.Load()).String() }
