package global

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/throttledhq/throttled/upstream"
)

// job is one key of a sync: its entry and what the sync reports of it.
type job struct {
	e           *Entry
	admitted, d int64
}

// syncer is the loop's reused state.
type syncer struct {
	s      upstream.GlobalSync
	jobs   []job
	dead   []*Entry
	live   map[string]bool // the live instances at the last heartbeat that went through
	failed bool            // the last sync had failing keys
	// late is how long after they were due the syncs have ended of late (their heartbeats
	// reached the upstream by then): the last sync's, or more when a recent one's was. It
	// decays by a thirty-second a sync, slowly: a loaded machine's timers are late in bursts,
	// and a heartbeat that runs out before the next one lands drops a live instance from
	// the others' split. The heartbeat covers it.
	late time.Duration
}

// loop runs a sync every interval until Close, on the local monotonic clock (the shared
// clock may stand still in tests). A sync is due an interval after the last was due; one
// that falls behind by more than an interval starts the schedule again. The instances'
// syncs fall at moments of their own: aligned, they all decided on one snapshot at once,
// and their allowances swung together from too much to nothing.
func (r *Registry) loop() {
	defer r.wg.Done()
	var sy syncer
	due := time.Now().Add(time.Duration(r.interval.Load()))
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
		}
		r.stats.lastLag.Store(int64(max(0, time.Since(due))))
		interval := time.Duration(r.interval.Load())
		was := due
		if due = due.Add(interval); time.Until(due) <= 0 {
			due = time.Now().Add(interval)
		}
		start, began := r.up.Now(), time.Now()
		r.nextSync.Store(start + int64(time.Until(due)))
		r.sync(&sy, start)
		r.stats.lastSync.Store(began.UnixNano())
		r.stats.lastDuration.Store(int64(time.Since(began)))
		sy.late = max(time.Since(was), sy.late-sy.late/32)
		t.Reset(time.Until(due))
	}
}

// sync reports every key used since the last sync, and sets each one's allowance from the
// upstream's answer. With no key used it sends nothing, not even the heartbeat: an instance
// is alive, for the others, on the keys it uses.
func (r *Registry) sync(sy *syncer, now int64) {
	interval := r.interval.Load()
	sy.jobs, sy.dead = sy.jobs[:0], sy.dead[:0]
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		for _, e := range sh.m {
			d, n := e.demand.Swap(0), e.admitted.Swap(0)
			if d == 0 && n == 0 {
				e.fold = nil // another instance folds the state
				if e.idle++; e.idle > evictAfter {
					sy.dead = append(sy.dead, e)
				}
				continue
			}
			e.idle = 0
			sy.jobs = append(sy.jobs, job{e: e, admitted: n, d: d})
		}
		sh.mu.RUnlock()
	}
	r.evict(sy.dead)
	if len(sy.jobs) == 0 {
		return // nothing to report: no heartbeat either, and an idle instance costs the upstream nothing
	}

	s := &sy.s
	s.ID, s.Now, s.Commands = r.id, now, 0
	hb := aliveFor(time.Duration(interval), sy.late)
	r.heartbeat.Store(int64(hb))
	s.Heartbeat, s.Stale = hb, 2*time.Duration(interval)
	s.Reports = s.Reports[:0]
	for _, j := range sy.jobs {
		e := j.e
		ttl := e.ttl
		if ttl == 0 {
			ttl = 4 * time.Duration(interval)
		}
		s.Reports = append(s.Reports, upstream.GlobalReport{Key: []byte(e.key), Admitted: j.admitted, Demand: j.d,
			Fold: e.fold, FoldFrom: e.foldFrom, FoldP: e.foldP, FoldT: e.foldT, At: now - interval, Grant: e.grant, TTL: ttl})
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(time.Duration(interval), 50*time.Millisecond))
	r.up.SyncGlobal(ctx, s)
	cancel()
	r.stats.syncs.Add(1)
	r.stats.commands.Add(int64(s.Commands))
	r.stats.keysSynced.Add(int64(len(sy.jobs)))
	r.stats.lastKeys.Store(int64(len(sy.jobs)))

	if s.HeartbeatErr == nil {
		clear(sy.live)
		if sy.live == nil {
			sy.live = make(map[string]bool)
		}
		for _, id := range s.Live {
			sy.live[id] = true
		}
		sy.live[r.id] = true
		r.live.Store(int64(len(sy.live)))
	}
	failing := int64(0)
	for i, j := range sy.jobs {
		if !r.apply(sy, j, &s.Replies[i], now, interval) {
			failing++
		}
	}
	r.stats.failingKeys.Store(failing)
	if failing > 0 || s.HeartbeatErr != nil {
		r.stats.failedSyncs.Add(1)
	}
	switch {
	case failing > 0 && !sy.failed:
		r.log.Warn("global: sync failing; deciding global keys on their last allowances", "keys", failing, "err", firstErr(s))
	case failing == 0 && sy.failed:
		r.log.Info("global: sync back; allowances agree through the upstream again")
	}
	sy.failed = failing > 0
}

func firstErr(s *upstream.GlobalSync) error {
	for i := range s.Replies[:len(s.Reports)] {
		if s.Replies[i].Err != nil {
			return s.Replies[i].Err
		}
	}
	return s.HeartbeatErr
}

// apply sets a key's allowance from its reply; false when its sync failed, and the key goes
// on with its last allowance (fail-soft): the units it admitted are reported at the next
// sync that goes through, up to one allowance's worth.
func (r *Registry) apply(sy *syncer, j job, rep *upstream.GlobalReply, now, interval int64) bool {
	e := j.e
	if rep.Err != nil {
		e.allowance.Store(e.grant)
		e.admitted.Add(min(j.admitted, e.grant))
		e.fold, e.failing = nil, true
		return false
	}
	st, from, err := decodeState(rep.State)
	if err != nil { // not a state we can read: ours replaces it at the next sync
		st, from = State{}, rep.State[:min(tagLen, len(rep.State))]
	}
	l := e.spec.Load().limit
	// The pending units are taken at their mean time of admission, not now: taken later
	// than they came they would waste what the limit admitted meanwhile (a GCRA or a bucket
	// banks no more than its burst).
	at := now
	if rep.Pending > 0 {
		at = min(now, int64(rep.PendingT/float64(rep.Pending))*1e6)
	}
	cur := fold(l, st, rep.Pending, at)
	left, next := avail(l, cur, now, interval)
	nowMs, staleMs := now/1e6, 2*interval/1e6
	total, inflight := int64(0), 0.0
	for _, dm := range rep.Demands {
		if dm.Broken || dm.Stamp < nowMs-staleMs || sy.live != nil && !sy.live[dm.ID] && dm.ID != r.id {
			continue
		}
		total = addSat(total, dm.Units)
		if dm.ID != r.id {
			inflight += unreported(dm, nowMs, interval/1e6)
		}
	}
	// What is left now is less what the others admitted and have not reported; what the
	// interval adds is the same whenever an instance syncs, and split by demand alone.
	av := next + max(0, left-int64(inflight))
	grant, carry := share(av, j.d, total, int(r.live.Load()), e.carry)
	e.grant, e.carry, e.failing = grant, carry, false
	e.allowance.Store(grant)
	e.grantSeen.Store(grant)

	var tag [tagLen]byte
	binary.LittleEndian.PutUint64(tag[:], rand.Uint64())
	e.fold = encodeState(e.fold[:0], tag, cur)
	e.foldFrom = append(e.foldFrom[:0], from...)
	if from == nil {
		e.foldFrom = nil
	}
	e.foldP, e.foldT = rep.Pending, rep.PendingT
	idle := now
	if cur.V.Expire > now {
		idle = cur.V.Expire
	}
	e.resetAt.Store(idle)
	e.ttl = time.Duration(idle-now) + 4*time.Duration(interval)
	return true
}

// aliveFor is how long an instance's heartbeat lasts: until its next sync is due, and twice
// as long again as its syncs have taken to end after they were due (they start late on a
// loaded machine, and take a round trip), at least a quarter of an interval and at most a
// whole one. An instance that dies is counted out of each key's split (its demand
// stops counting, and its share goes to the others) at the others' first syncs past its
// heartbeat: within two intervals and a quarter of its last sync while the syncs start on
// time and take little, three at most. A live instance counted out by a sync later still only changes the
// others' split for one sync: each allowance stays at most avail, and the bound holds.
func aliveFor(interval, late time.Duration) time.Duration {
	return interval + min(interval, max(interval/4, 2*late))
}

// unreported estimates what another instance admitted since its last sync, which the
// global state does not hold yet: asked at the rate of its last demand, up to its
// allowance. Without it, an instance that syncs just before another would count the
// other's admissions as still available, and the shares would depend on the order of the
// syncs.
func unreported(dm upstream.GlobalDemand, nowMs, intervalMs int64) float64 {
	f := min(1, max(0, float64(nowMs-dm.Stamp)/float64(max(intervalMs, 1))))
	return min(float64(dm.Grant), f*float64(dm.Units))
}

// evict drops the entries of keys unused for evictAfter syncs.
func (r *Registry) evict(dead []*Entry) {
	for _, e := range dead {
		sh := r.shardOf([]byte(e.key))
		sh.mu.Lock()
		if e.demand.Load() == 0 && e.admitted.Load() == 0 && sh.m[e.key] == e {
			delete(sh.m, e.key)
			r.bytes.Add(-int64(len(e.key)) - entryBytes)
			r.stats.evicted.Add(1)
		}
		sh.mu.Unlock()
	}
}

// Stats is a snapshot of the registry, for INFO global and the metrics.
type Stats struct {
	Interval     time.Duration
	Instances    int64         // live instances at the last heartbeat
	Heartbeat    time.Duration // how long the last heartbeat lasts (aliveFor)
	Keys         int           // keys with an entry
	Syncs        int64
	FailedSyncs  int64
	KeysSynced   int64 // over all syncs
	LastKeys     int64 // at the last sync
	FailingKeys  int64 // deciding on their last allowance
	LastSyncAge  time.Duration
	LastDuration time.Duration
	LastLag      time.Duration
	Commands     int64
	Evicted      int64
	Bytes        int64
}

// Stats returns the registry's counters.
func (r *Registry) Stats() Stats {
	st := Stats{Interval: r.Interval(), Instances: r.live.Load(), Heartbeat: time.Duration(r.heartbeat.Load()), Keys: r.Keys(),
		Syncs: r.stats.syncs.Load(), FailedSyncs: r.stats.failedSyncs.Load(), KeysSynced: r.stats.keysSynced.Load(),
		LastKeys: r.stats.lastKeys.Load(), FailingKeys: r.stats.failingKeys.Load(),
		LastDuration: time.Duration(r.stats.lastDuration.Load()), LastLag: time.Duration(r.stats.lastLag.Load()),
		Commands: r.stats.commands.Load(), Evicted: r.stats.evicted.Load(), Bytes: r.bytes.Load()}
	if last := r.stats.lastSync.Load(); last > 0 {
		st.LastSyncAge = time.Duration(max(0, time.Now().UnixNano()-last))
	}
	return st
}

// Info is INFO's global section.
func (r *Registry) Info() [][2]string {
	st := r.Stats()
	status := "ok"
	if st.FailingKeys > 0 {
		status = "degraded"
	}
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	return [][2]string{
		{"global_mode", "upstream"},
		{"global_status", status},
		{"global_instance_id", r.id},
		{"global_sync_interval_ms", i(st.Interval.Milliseconds())},
		{"global_instances", i(st.Instances)},
		{"global_heartbeat_ms", i(st.Heartbeat.Milliseconds())},
		{"global_keys", i(int64(st.Keys))},
		{"global_syncs", i(st.Syncs)},
		{"global_failed_syncs", i(st.FailedSyncs)},
		{"global_keys_synced", i(st.KeysSynced)},
		{"global_last_sync_keys", i(st.LastKeys)},
		{"global_last_sync_age_ms", i(st.LastSyncAge.Milliseconds())},
		{"global_last_sync_duration_us", i(st.LastDuration.Microseconds())},
		{"global_last_sync_lag_us", i(st.LastLag.Microseconds())},
		{"global_failing_keys", i(st.FailingKeys)},
		{"global_upstream_commands", i(st.Commands)},
		{"global_evicted_keys", i(st.Evicted)},
		{"global_memory", i(st.Bytes)},
	}
}
