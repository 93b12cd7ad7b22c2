package topk

import (
	"hash/maphash"
	"sort"
	"sync"
)

// MaxKeyLen is the longest key a Top keeps; a longer key is counted under its first
// MaxKeyLen bytes.
const MaxKeyLen = 128

// shards is how many independently locked parts a Top has.
const shards = 16

// Entry is one key's estimated count: its true count over the window is between
// Count-Error and Count.
type Entry struct {
	Key   string
	Count int64
	Error int64
}

// Top counts keys in fixed memory over a recent window. Its methods may be called from any
// goroutine.
type Top struct {
	seed   maphash.Seed
	period int64 // ns
	per    int   // counters per shard and period, fixed at New: Capacity reads it without a lock
	shards [shards]shard
}

// shard is one part of a Top.
type shard struct {
	mu        sync.Mutex // guards the rest
	cur, prev summary
	rotateAt  int64 // ns: when cur becomes prev
	_         [64]byte
}

// summary is one period's Space-Saving counters.
type summary struct {
	slots []slot  // the counters; a slot keeps its index while it counts a key
	heap  []int32 // indexes into slots, a min-heap by count: the root is the smallest counter
	table []int32 // open addressing by hash: 1 + an index into slots, 0 when free
	keys  []byte  // MaxKeyLen bytes per slot
	total int64   // recordings this period
}

// slot is one counter.
type slot struct {
	hash   uint64
	keyLen int32
	pos    int32 // its place in heap
	count  int64
	err    int64
}

// New returns a Top that keeps about k counters per period and a window of period
// nanoseconds (rounded to whole periods: a query sees between one and two).
func New(k int, period int64) *Top {
	per := max(4, (k+shards-1)/shards)
	t := &Top{seed: maphash.MakeSeed(), period: period, per: per}
	for i := range t.shards {
		t.shards[i].cur.init(per)
		t.shards[i].prev.init(per)
	}
	return t
}

// Capacity is the number of counters of one period, across shards.
func (t *Top) Capacity() int { return t.per * shards }

func (s *summary) init(k int) {
	s.slots = make([]slot, 0, k)
	s.heap = make([]int32, 0, k)
	size := 1
	for size < 2*k {
		size <<= 1
	}
	s.table = make([]int32, size)
	s.keys = make([]byte, k*MaxKeyLen)
}

func (s *summary) reset() {
	s.slots = s.slots[:0]
	s.heap = s.heap[:0]
	clear(s.table)
	s.total = 0
}

// Record counts one occurrence of key at now (ns).
func (t *Top) Record(key []byte, now int64) { t.RecordN(key, 1, now) }

// RecordN counts n occurrences of key at now (ns), as n Records would, under one lock: a
// caller that sees one key many times in a row (a hot key's pipeline) adds them at once.
// Space-Saving with weights: a key counted adds n; a new key takes over the smallest counter
// and counts from its value plus n.
func (t *Top) RecordN(key []byte, n, now int64) {
	if n <= 0 {
		return
	}
	if len(key) > MaxKeyLen {
		key = key[:MaxKeyLen]
	}
	h := maphash.Bytes(t.seed, key)
	sh := &t.shards[h%shards]
	sh.mu.Lock()
	sh.rotateLocked(now, t.period)
	sh.cur.add(key, h, n)
	sh.mu.Unlock()
}

// rotateLocked starts a new period once now has reached its time; after more than one period
// without a rotation, both periods are empty.
func (sh *shard) rotateLocked(now, period int64) {
	if now < sh.rotateAt {
		return
	}
	if sh.rotateAt != 0 && now < sh.rotateAt+period {
		sh.prev, sh.cur = sh.cur, sh.prev
	} else {
		sh.prev.reset()
	}
	sh.cur.reset()
	sh.rotateAt = now - now%period + period
}

// find returns the index in slots of the key with hash h, or -1, and the table position
// where it is or would go.
func (s *summary) find(key []byte, h uint64) (int, int) {
	mask := len(s.table) - 1
	for p := int(h) & mask; ; p = (p + 1) & mask {
		i := int(s.table[p]) - 1
		if i < 0 {
			return -1, p
		}
		if s.slots[i].hash == h && string(s.key(i)) == string(key) {
			return i, p
		}
	}
}

func (s *summary) key(i int) []byte {
	return s.keys[i*MaxKeyLen : i*MaxKeyLen+int(s.slots[i].keyLen)]
}

func (s *summary) add(key []byte, h uint64, n int64) {
	s.total += n
	i, p := s.find(key, h)
	switch {
	case i >= 0:
		s.slots[i].count += n
	case len(s.slots) < cap(s.slots):
		i = len(s.slots)
		s.slots = append(s.slots, slot{hash: h, keyLen: int32(len(key)), pos: int32(len(s.heap)), count: n})
		s.heap = append(s.heap, int32(i))
		copy(s.keys[i*MaxKeyLen:], key)
		s.table[p] = int32(i + 1)
		s.up(len(s.heap) - 1)
		return
	default:
		// Take over the smallest counter, the heap's root.
		i = int(s.heap[0])
		old := s.slots[i]
		s.remove(old.hash, s.key(i))
		_, p = s.find(key, h)
		s.slots[i] = slot{hash: h, keyLen: int32(len(key)), pos: 0, count: old.count + n, err: old.count}
		copy(s.keys[i*MaxKeyLen:], key)
		s.table[p] = int32(i + 1)
	}
	s.down(int(s.slots[i].pos))
}

// remove frees the table position of a key, moving later entries of its run back so that
// lookups still find them (linear probing's deletion).
func (s *summary) remove(h uint64, key []byte) {
	_, p := s.find(key, h)
	mask := len(s.table) - 1
	s.table[p] = 0
	for q := (p + 1) & mask; s.table[q] != 0; q = (q + 1) & mask {
		i := s.table[q] - 1
		home := int(s.slots[i].hash) & mask
		// Move q's entry to p when its home is not in (p, q] cyclically.
		if (q > p && (home <= p || home > q)) || (q < p && home <= p && home > q) {
			s.table[p] = s.table[q]
			s.table[q] = 0
			p = q
		}
	}
}

func (s *summary) count(pos int) int64 { return s.slots[s.heap[pos]].count }

func (s *summary) swap(a, b int) {
	s.heap[a], s.heap[b] = s.heap[b], s.heap[a]
	s.slots[s.heap[a]].pos = int32(a)
	s.slots[s.heap[b]].pos = int32(b)
}

func (s *summary) up(pos int) {
	for pos > 0 {
		parent := (pos - 1) / 2
		if s.count(parent) <= s.count(pos) {
			return
		}
		s.swap(pos, parent)
		pos = parent
	}
}

func (s *summary) down(pos int) {
	n := len(s.heap)
	for {
		least := pos
		if l := 2*pos + 1; l < n && s.count(l) < s.count(least) {
			least = l
		}
		if r := 2*pos + 2; r < n && s.count(r) < s.count(least) {
			least = r
		}
		if least == pos {
			return
		}
		s.swap(pos, least)
		pos = least
	}
}

// Top returns the n keys with the highest estimated counts over the window at now, highest
// first (ties by key), and the number of recordings the window holds.
func (t *Top) Top(n int, now int64) ([]Entry, int64) {
	var all []Entry
	var total int64
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		sh.rotateLocked(now, t.period)
		total += sh.cur.total + sh.prev.total
		all = sh.mergeLocked(all)
		sh.mu.Unlock()
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Count != all[j].Count {
			return all[i].Count > all[j].Count
		}
		return all[i].Key < all[j].Key
	})
	if len(all) > n {
		all = all[:n]
	}
	return all, total
}

// mergeLocked appends the keys of both periods with their counts added. A key counted in one
// period only may have had up to that other period's smallest counter there, which its error
// then includes.
func (sh *shard) mergeLocked(out []Entry) []Entry {
	floor := func(s *summary) int64 {
		if len(s.slots) < cap(s.slots) || len(s.slots) == 0 {
			return 0 // never full: every key of the period has its counter
		}
		return s.count(0)
	}
	curFloor, prevFloor := floor(&sh.cur), floor(&sh.prev)
	for i := range sh.cur.slots {
		sl := sh.cur.slots[i]
		key := sh.cur.key(i)
		e := Entry{Key: string(key), Count: sl.count, Error: sl.err}
		if j, _ := sh.prev.find(key, sl.hash); j >= 0 {
			e.Count += sh.prev.slots[j].count
			e.Error += sh.prev.slots[j].err
		} else {
			e.Count += prevFloor
			e.Error += prevFloor
		}
		out = append(out, e)
	}
	for j := range sh.prev.slots {
		sl := sh.prev.slots[j]
		key := sh.prev.key(j)
		if i, _ := sh.cur.find(key, sl.hash); i >= 0 {
			continue
		}
		out = append(out, Entry{Key: string(key), Count: sl.count + curFloor, Error: sl.err + curFloor})
	}
	return out
}

// Reset forgets every count.
func (t *Top) Reset() {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		sh.cur.reset()
		sh.prev.reset()
		sh.mu.Unlock()
	}
}
