package global

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/upstream"
)

// Upstream is what the sync loop needs of the upstream (an *upstream.Client).
type Upstream interface {
	// Now is the shared clock in Unix ns.
	Now() int64
	// SyncGlobal sends one sync and fills its replies.
	SyncGlobal(ctx context.Context, s *upstream.GlobalSync)
}

// Config says how the registry syncs.
type Config struct {
	// Interval is global-sync-interval: how often the sync loop runs. Default 500ms.
	Interval time.Duration
	// Logger receives the loop's changes (failing, back); nil logs nothing.
	Logger *slog.Logger
}

// Interval bounds: below MinInterval the loop would be a per-decision round trip under
// another name; above MaxInterval a dead instance's share would stay away for minutes.
const (
	MinInterval     = 10 * time.Millisecond
	MaxInterval     = time.Minute
	DefaultInterval = 500 * time.Millisecond
)

// CheckInterval checks global-sync-interval.
func CheckInterval(d time.Duration) error {
	if d < MinInterval || d > MaxInterval {
		return fmt.Errorf("global-sync-interval: %v is not between %v and %v", d, MinInterval, MaxInterval)
	}
	return nil
}

// ParseInterval parses and checks a global-sync-interval (CONFIG SET).
func ParseInterval(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("global-sync-interval: %q is not a duration (500ms, 1s)", v)
	}
	return d, CheckInterval(d)
}

// evictAfter is how many syncs in a row a key may go unused before its entry goes: it
// stays long enough that a key used now and then keeps its allowance.
const evictAfter = 20

// entryBytes is what an entry costs besides its key, for maxmemory: the entry, its map
// slot, its limit and the state it last folded.
const entryBytes = 320

// Registry is an instance's global limits: the local allowance of each key (the hot path,
// Entry.Take) and the sync loop that sets them. All methods are safe for concurrent use.
type Registry struct {
	cfg      Config
	log      *slog.Logger
	id       string
	interval atomic.Int64 // ns
	seed     maphash.Seed
	shards   [64]shard
	bytes    atomic.Int64 // what the entries hold, for maxmemory

	up        Upstream
	nextSync  atomic.Int64 // when the next sync is due, Unix ns of the shared clock
	live      atomic.Int64 // live instances at the last heartbeat, at least 1
	heartbeat atomic.Int64 // ns the last heartbeat lasts
	done      chan struct{}
	wg        sync.WaitGroup
	stats     stats
}

type shard struct {
	mu sync.RWMutex // guards m
	m  map[string]*Entry
}

// stats are INFO global's counters.
type stats struct {
	syncs        atomic.Int64 // syncs run
	failedSyncs  atomic.Int64 // syncs where a key or the heartbeat failed
	keysSynced   atomic.Int64 // keys reported, over all syncs
	lastKeys     atomic.Int64 // keys reported at the last sync
	failingKeys  atomic.Int64 // keys whose last sync failed: deciding on their last allowance
	lastSync     atomic.Int64 // Unix ns (wall clock) of the last sync's start
	lastDuration atomic.Int64 // ns the last sync took
	lastLag      atomic.Int64 // ns the last sync started after it was due
	commands     atomic.Int64 // commands sent to the upstream
	evicted      atomic.Int64 // entries dropped for idleness
}

// New returns a registry; Start runs its sync loop.
func New(cfg Config) *Registry {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	rand.Read(b[:])
	r := &Registry{cfg: cfg, log: log, id: hex.EncodeToString(b[:]), seed: maphash.MakeSeed(), done: make(chan struct{})}
	r.interval.Store(int64(cfg.Interval))
	r.live.Store(1)
	for i := range r.shards {
		r.shards[i].m = make(map[string]*Entry)
	}
	return r
}

// ID is the instance's id on the upstream (its heartbeat, its demand fields).
func (r *Registry) ID() string { return r.id }

// Interval is the sync interval.
func (r *Registry) Interval() time.Duration { return time.Duration(r.interval.Load()) }

// SetInterval changes the sync interval from the next sync on (CONFIG SET).
func (r *Registry) SetInterval(d time.Duration) { r.interval.Store(int64(d)) }

// Bytes is what the registry holds, as maxmemory counts it.
func (r *Registry) Bytes() int64 {
	if r == nil {
		return 0
	}
	return r.bytes.Load()
}

// Now is the clock decisions use: the upstream's shared one once started.
func (r *Registry) Now() int64 {
	if r.up == nil {
		return time.Now().UnixNano()
	}
	return r.up.Now()
}

// Start runs the sync loop through up until Close.
func (r *Registry) Start(up Upstream) {
	r.up = up
	r.nextSync.Store(up.Now() + r.interval.Load())
	r.wg.Add(1)
	go r.loop()
}

// Close stops the sync loop.
func (r *Registry) Close() {
	close(r.done)
	r.wg.Wait()
}

func (r *Registry) shardOf(key []byte) *shard {
	return &r.shards[maphash.Bytes(r.seed, key)%uint64(len(r.shards))]
}

// Lookup returns key's entry, nil when it has none. It allocates nothing.
func (r *Registry) Lookup(key []byte) *Entry {
	sh := r.shardOf(key)
	sh.mu.RLock()
	e := sh.m[string(key)]
	sh.mu.RUnlock()
	return e
}

// Sig is what identifies a limit's parameters: a call whose Sig differs from its key's
// entry's brings new parameters (Ensure takes them). Extra is anything comparable besides
// (a time zone).
type Sig struct {
	A, B, C, D int64
	Extra      any
}

// spec is an entry's limit.
type spec struct {
	sig   Sig
	limit Limit
	units int64
}

// Ensure returns key's entry with limit l of parameters sig, making it (with a first
// allowance: an equal part of the limit's burst among the live instances) or giving it
// the new parameters.
func (r *Registry) Ensure(key []byte, sig Sig, l Limit) *Entry {
	sp := &spec{sig: sig, limit: l, units: l.Units()}
	sh := r.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.m[string(key)]; e != nil {
		e.spec.Store(sp)
		return e
	}
	e := &Entry{key: string(key)}
	e.spec.Store(sp)
	first := sp.units / max(r.live.Load(), 1)
	e.allowance.Store(first)
	e.grant = first
	e.grantSeen.Store(first)
	sh.m[e.key] = e
	r.bytes.Add(int64(len(key)) + entryBytes)
	return e
}

// Keys is how many keys have an entry.
func (r *Registry) Keys() int {
	n := 0
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

// Entry is one global key on this instance: what it may still admit before the next sync,
// and what it admitted and was asked since the last. Take is the hot path: a few atomic
// operations on the entry, no lock, no allocation.
type Entry struct {
	key       string
	spec      atomic.Pointer[spec]
	allowance atomic.Int64 // units this instance may still admit until the next sync
	admitted  atomic.Int64 // units admitted since the last sync
	demand    atomic.Int64 // units asked since the last sync
	resetAt   atomic.Int64 // Unix ns when the key is idle, as of the last sync
	grantSeen atomic.Int64 // grant, for INFO

	// The sync loop's own.
	grant    int64   // the allowance of the last sync (fail-soft renews it)
	carry    float64 // the fraction of a unit owed
	idle     int     // syncs in a row without a call
	fold     []byte  // the state to fold in at the next sync
	foldFrom []byte  // the tag it was computed from
	foldP    int64
	foldT    float64
	ttl      time.Duration
	failing  bool
}

// Sig returns the parameters of the entry's limit.
func (e *Entry) Sig() Sig { return e.spec.Load().sig }

// Decision is a global call's decision: times in ns.
type Decision struct {
	Limited    bool
	Limit      int64 // the global limit's units
	Remaining  int64 // what this instance may still admit before its next sync
	RetryAfter int64 // until the next sync, when limited; -1 when the cost can never pass
	ResetAfter int64 // until the key is idle, as of the last sync
}

// Take decides a call of cost units at now (the registry's clock) from the entry's
// allowance; peek decides as if, and changes nothing. Remaining is at most the limit (an
// allowance may hold more: a burst and an interval's refill).
func (r *Registry) Take(e *Entry, cost int64, peek bool, now int64) Decision {
	d := r.take(e, cost, peek, now)
	d.Remaining = min(d.Remaining, d.Limit)
	return d
}

func (r *Registry) take(e *Entry, cost int64, peek bool, now int64) Decision {
	d := Decision{Limit: e.spec.Load().units, RetryAfter: -1, ResetAfter: max(0, e.resetAt.Load()-now)}
	if cost > d.Limit {
		d.Limited = true
		d.Remaining = max(0, e.allowance.Load())
		return d
	}
	if peek || cost == 0 {
		a := max(0, e.allowance.Load())
		d.Remaining = max(0, a-cost)
		if a < cost {
			d.Limited, d.RetryAfter = true, max(1, r.nextSync.Load()-now)
		}
		return d
	}
	e.demand.Add(cost)
	for {
		a := e.allowance.Load()
		if a < cost {
			d.Limited, d.Remaining, d.RetryAfter = true, max(0, a), max(1, r.nextSync.Load()-now)
			return d
		}
		if e.allowance.CompareAndSwap(a, a-cost) {
			e.admitted.Add(cost)
			d.Remaining = a - cost
			return d
		}
	}
}

// Give hands back cost units a Take of e admitted, for a decision of several limits that
// another limit denied (CHECK, all or nothing): they go back to the allowance and come off
// what the next sync reports as admitted (when a sync came between the take and the give,
// it reported them: the next one reports that many fewer). When the next report holds fewer
// units than cost, they stay spent. The demand stays, for they were asked.
func (r *Registry) Give(e *Entry, cost int64) {
	for {
		n := e.admitted.Load()
		if n < cost {
			return
		}
		if e.admitted.CompareAndSwap(n, n-cost) {
			e.allowance.Add(cost)
			return
		}
	}
}

// Allowance reports key's allowance now and the one of the last sync; ok false when the
// key has no entry.
func (r *Registry) Allowance(key []byte) (left, grant int64, ok bool) {
	e := r.Lookup(key)
	if e == nil {
		return 0, 0, false
	}
	return e.allowance.Load(), e.grantSeen.Load(), true
}

// Fresh is the decision of a call of cost at now on a key of units with no entry, kept
// nowhere: as a new entry's first call (a PEEK of a key not used here yet, or no room).
func (r *Registry) Fresh(units, cost, now int64) Decision {
	first := units / max(r.live.Load(), 1)
	d := Decision{Limit: units, Remaining: max(0, first-cost), RetryAfter: -1}
	if cost > first {
		d.Limited, d.Remaining = true, first
		if cost <= units {
			d.RetryAfter = max(1, r.nextSync.Load()-now)
		}
	}
	return d
}
