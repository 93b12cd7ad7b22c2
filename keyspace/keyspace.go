package keyspace

import (
	"cmp"
	"errors"
	"hash/maphash"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// Kind says which kind of state a key holds.
type Kind uint8

// The kinds of state. The numbers are stored, never reorder them.
const (
	None           Kind = iota // no key
	String                     // a Redis string: Value.Bytes
	GCRA                       // GCRA (CL.THROTTLE, GCRA, THROTTLE): Value.Num is the TAT in Unix ns
	TokenBucket                // TOKENBUCKET; the other rate-limit kinds' fields are algorithms.State's
	LeakyBucket                // LEAKYBUCKET
	SlidingLog                 // SLIDE: the exact log of admissions, in Bytes
	SlidingCounter             // SLIDE ... APPROX: the weighted two-window counter
	FixedWindow                // WINDOW
	Concurrency                // CONCURRENCY.ACQUIRE: the holders and their leases, in Bytes
	Policies                   // the server's policies (package policy's record, in Bytes; Num its version), at one reserved key
	Hash                       // a Redis hash: Num the fields, Bytes package collection's pack of fields and values
	ZSet                       // a Redis sorted set: Num the members, Bytes the pack of members and scores in order
	List                       // a Redis list: Num the elements, Bytes the pack of elements
	Functions                  // the server's function libraries (FUNCTION DUMP's payload, in Bytes; Num its version), at one reserved key
	Set                        // a Redis set: Num the members, Bytes package collection's pack of members
)

// maxKind is the largest Kind an entry header can hold.
const maxKind = hdrKind

// String returns the name Redis's TYPE replies for k.
func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case String:
		return "string"
	case GCRA:
		return "gcra"
	case TokenBucket:
		return "tokenbucket"
	case LeakyBucket:
		return "leakybucket"
	case SlidingLog:
		return "slidinglog"
	case SlidingCounter:
		return "slidingcounter"
	case FixedWindow:
		return "fixedwindow"
	case Concurrency:
		return "concurrency"
	case Policies:
		return "policies"
	case Hash:
		return "hash"
	case ZSet:
		return "zset"
	case List:
		return "list"
	case Functions:
		return "functions"
	case Set:
		return "set"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is the state held at a key.
type Value struct {
	Kind Kind
	// Chunks says that Bytes are a Chunked object's chunk form, as DecodeValue reads it
	// from the store or a primary: Keyspace.Objectify turns such a value into its Obj
	// before it is stored.
	Chunks bool
	Expire int64 // Unix ns at which the key expires; 0 means never
	Num    int64 // GCRA: the TAT in Unix ns; fixed-size states use Num and Num2
	Num2   int64
	// Bytes is the value of a String, or the encoding of a variable-size state. From
	// GetLocked it aliases the keyspace's memory and is valid only until the shard's lock is
	// released or the key is written (writes to other keys leave it alone); an empty value
	// comes back nil. SetLocked copies it.
	Bytes []byte
	// Obj, when not nil, is the state held by reference instead of Bytes: a big
	// collection, which its commands change in place under the shard's lock rather than
	// rebuild. SetLocked stores the reference, not a copy: a value read from one key and
	// set at another must not share it (COPY stores Obj's bytes form instead). Outside the
	// process (Encode) it takes its bytes form, which DecodeValue gives back as Bytes.
	Obj Object
}

// Object is a state the keyspace holds by reference (Value.Obj).
type Object interface {
	// EncodedLen returns the length of the bytes AppendEncoded appends.
	EncodedLen() int
	// AppendEncoded appends the object's bytes form to dst and returns it.
	AppendEncoded(dst []byte) []byte
	// Footprint returns the bytes of heap memory the object holds.
	Footprint() int
}

// Chunked is an Object that goes outside the process chunk by chunk (a big sorted set,
// hash or set: collection.Big), so that a write to it costs the store and the replicas the
// chunks it changed, not the whole: the feeds that support it (a Recorder that is a
// Patcher) get, for such a value, only its changes since they last took it. Its methods
// run under its shard's lock.
//
// The chunk form (AppendChunks) is entries back to back, each a chunk's seq (8 bytes,
// little-endian), its length (uvarint) and its bytes; seqs rise along the object
// (NextChunk reads one). The store keeps each chunk under its seq. The changes for a feed
// that is no log (the disk: Feeds) are ChangedChunks and such entries, an empty one for a
// chunk gone; the changes for a log are the object's own.
type Chunked interface {
	Object
	// ChunksLen returns the length of the bytes AppendChunks appends.
	ChunksLen() int
	// AppendChunks appends the object's chunk form: what Encode writes for it, and what
	// Objectify reads back.
	AppendChunks(dst []byte) []byte
	// AppendChanges appends the changes since feed f last took them (in a form that
	// ApplyChanges reads), and forgets them; or, appending nothing, reports whole when
	// the feed must take the whole object (AppendChunks) instead.
	AppendChanges(dst []byte, f int) (out []byte, whole bool)
	// ApplyChanges applies changes appended by AppendChanges.
	ApplyChanges(changes []byte) error
	// Rewrite makes every feed take the whole object at its next AppendChanges.
	Rewrite()
	// Feeds says which feeds track changes (a bit per Feed), and which of them are logs
	// replayed in order (the redo log, the replication stream), where the object's
	// changes may be its own operations rather than chunks; the object records changes
	// for those feeds only. It is told at each write.
	Feeds(tracked, logs uint8)
}

// ErrWrongType is what callers return when a key holds another kind of state than the
// command works on; the server maps it to Redis's WRONGTYPE text.
var ErrWrongType = errors.New("keyspace: wrong kind of value")

// maxShards bounds New's argument: Scan's cursor keeps the shard in 32 bits.
const maxShards = 1 << 20

// Keyspace is the in-memory store: keys spread over lock-striped shards by a hash of the key.
// All methods are safe for concurrent use.
type Keyspace struct {
	seed   maphash.Seed // hashes keys, to their shard (low bits) and in a shard's index (high bits)
	mask   uint64       // len(shards) - 1
	shards []*Shard
	ready  readyList // the keys written that clients wait on (blocked.go)

	// changed is, for each capturing feed, a bit set of the shards that recorded a change
	// since Changed last took them (see Changed).
	changed [feeds][]atomic.Uint64

	// highs counts, for each feed, the shards whose log of deleted keys is half full or
	// more (DeletionsHigh).
	highs [feeds]atomic.Int32

	expiry expiry

	// objectify turns a value read in its chunk form (Value.Chunks) into its object
	// (SetObjectify); set before the keyspace is used.
	objectify func(Value) (Value, error)

	// clock is the access clock: the second, modulo 2^24, that reads and writes note in
	// an entry as its last access (SetClock).
	clock atomic.Uint32
}

// expiry is where active expiry stands between calls of ExpireStep.
type expiry struct {
	mu    sync.Mutex  // guards the fields below: one ExpireStep at a time
	next  int         // the shard the round goes on with
	left  int         // the shards the round has still to visit, next included; 0 once complete
	shard expireRound // next's part in the round
}

// New returns an empty keyspace with shards shards, rounded up to a power of two
// (at least 1, at most 1<<20). The server uses 256.
func New(shards int) *Keyspace {
	n := shardCount(shards)
	ks := &Keyspace{seed: maphash.MakeSeed(), mask: uint64(n - 1), shards: make([]*Shard, n)}
	for f := range ks.changed {
		ks.changed[f] = make([]atomic.Uint64, (n+63)/64)
	}
	for i := range ks.shards {
		s := newShard(ks.seed, i, &ks.clock, &ks.ready)
		for f := range s.trk {
			s.trk[f].changed, s.trk[f].bit = &ks.changed[f][i/64], uint8(i%64)
			s.trk[f].highs = &ks.highs[f]
		}
		ks.shards[i] = s
	}
	return ks
}

// shardCount is the number of shards New makes for shards: a power of two, from 1 to
// maxShards.
func shardCount(shards int) int {
	shards = max(1, min(shards, maxShards))
	return 1 << bits.Len(uint(shards-1))
}

// Shard returns the shard that holds key. It is not locked.
func (ks *Keyspace) Shard(key []byte) *Shard {
	return ks.shards[maphash.Bytes(ks.seed, key)&ks.mask]
}

// Shards returns the number of shards.
func (ks *Keyspace) Shards() int { return len(ks.shards) }

// LockKeys locks the distinct shards of keys in ascending shard order, so that concurrent
// callers over several keys never deadlock, appends them to buf and returns buf. The caller
// must not hold any shard lock. UnlockShards(returned[len(buf):]) unlocks them; when buf is
// empty, that is UnlockShards(returned).
func (ks *Keyspace) LockKeys(keys [][]byte, buf []*Shard) []*Shard {
	start := len(buf)
	for _, k := range keys {
		buf = append(buf, ks.Shard(k))
	}
	locked := buf[start:]
	slices.SortFunc(locked, func(a, b *Shard) int { return cmp.Compare(a.ord, b.ord) })
	locked = slices.Compact(locked)
	for _, s := range locked {
		s.mu.Lock()
	}
	return buf[:start+len(locked)]
}

// UnlockShards unlocks shards locked by LockKeys.
func UnlockShards(shards []*Shard) {
	for i := len(shards) - 1; i >= 0; i-- {
		shards[i].Unlock()
	}
}

// Len returns the number of keys stored. Like Redis's DBSIZE it counts keys that have
// expired but were not removed yet.
func (ks *Keyspace) Len() int {
	n := int64(0)
	for _, s := range ks.shards {
		n += s.keys.Load()
	}
	return int(n)
}

// Expires returns the number of keys that have an expiry (INFO keyspace expires=).
func (ks *Keyspace) Expires() int {
	n := int64(0)
	for _, s := range ks.shards {
		n += s.expires.Load()
	}
	return int(n)
}

// ExpiredTotal returns the number of keys removed because they expired, lazily or by
// ExpireCycle, since New (INFO stats expired_keys). Flush does not reset it.
func (ks *Keyspace) ExpiredTotal() int64 {
	n := int64(0)
	for _, s := range ks.shards {
		n += s.expired.Load()
	}
	return n
}

// Flush removes every key and releases the memory (FLUSHALL).
func (ks *Keyspace) Flush() {
	for _, s := range ks.shards {
		s.mu.Lock()
		s.resetLocked()
		s.Unlock()
	}
}

// MemoryUsage returns the bytes the keyspace's structures take on the heap: indexes, arenas,
// record ids and values. It locks each shard in turn. The Go runtime's own overhead and
// garbage not yet collected come on top.
func (ks *Keyspace) MemoryUsage() int64 {
	n := int64(0)
	for _, s := range ks.shards {
		s.mu.Lock()
		n += s.memoryLocked()
		s.Unlock()
	}
	return n
}

// Scan calls fn for the live keys of a slice of the keyspace and returns the cursor to pass
// next, 0 when the iteration is complete; cursor 0 starts one. It visits about count keys
// per call (10 when count <= 0), and at most 10*count record ids, so a call may return few
// keys or none before the iteration is complete. A key present for the whole iteration is
// returned at least once, whatever other callers write meanwhile; a key written during the
// iteration may be returned or not, and a key is returned twice only if it was deleted and
// set again. A bad or stale cursor never panics: a cursor past the end completes the iteration.
//
// fn runs under the shard's lock: key and v.Bytes are valid only during the call, and fn
// must not lock a shard itself. Expired keys are skipped.
func (ks *Keyspace) Scan(cursor uint64, count int, now int64, fn func(key []byte, v Value)) uint64 {
	if count <= 0 {
		count = 10
	}
	budget := 10 * count
	si, id := cursor>>32, uint32(cursor)
	emitted, visited := 0, 0
	for si < uint64(len(ks.shards)) && emitted < count && visited < budget {
		s := ks.shards[si]
		s.mu.Lock()
		next, e, v := s.scanLocked(id, now, count-emitted, budget-visited, fn)
		s.Unlock()
		id, emitted, visited = next, emitted+e, visited+v
		if next == scanDone {
			si, id = si+1, 0
			visited++
		}
	}
	if si >= uint64(len(ks.shards)) {
		return 0
	}
	return si<<32 | uint64(id)
}

// ExpireStep is a step of active expiry, in the style of Redis's: the caller, who has the
// clock, calls it in steps of maxWork while its time budget lasts, or until it reports the
// round complete. A round visits every shard once, in order, and each call goes on where the
// previous one stopped, even in the middle of a shard. In a shard, active expiry walks the
// index from where it left off, in samples of 20 keys with an expiry, removes those that have
// expired, and takes another sample while more than a tenth of the last one had expired. The
// index is in hash order, so that a sample is a fair one of the shard, as Redis's of its hash
// table: a shard mostly expired is cleaned in the round, whatever its size, while a shard with
// few expired keys costs one sample. A round walks a shard's index once at most: it then
// removes every key that had expired when the shard's turn came, unless the shard was written
// meanwhile. Shards without keys that expire cost nothing.
//
// Work is counted in keys examined, expiring or not; a sample ends after 400 keys all the
// same, so that keys without an expiry cost little. A call does at most maxWork of it and
// holds a shard's lock for at most 1000 keys at a time, so that clients wait little for a
// shard being cleaned. ExpireStep returns the number of keys removed and whether the round is
// complete: then the next call starts a new one.
func (ks *Keyspace) ExpireStep(now int64, maxWork int) (removed int, done bool) {
	e := &ks.expiry
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.left == 0 {
		e.left, e.shard = len(ks.shards), expireRound{}
	}
	work := 0
	for e.left > 0 {
		s := ks.shards[e.next]
		if s.expires.Load() != 0 {
			if work >= maxWork {
				return removed, false
			}
			s.mu.Lock()
			r, w, finished := s.expireLocked(now, min(maxWork-work, lockWork), &e.shard)
			s.Unlock()
			removed, work = removed+r, work+w
			if !finished {
				continue
			}
		}
		e.next = (e.next + 1) & int(ks.mask)
		e.left--
		e.shard = expireRound{}
	}
	return removed, true
}

// ExpireCycle is ExpireStep for callers that need not know whether the round is complete.
func (ks *Keyspace) ExpireCycle(now int64, maxWork int) int {
	removed, _ := ks.ExpireStep(now, maxWork)
	return removed
}

// SetObjectify sets the function that Objectify calls.
func (ks *Keyspace) SetObjectify(fn func(Value) (Value, error)) { ks.objectify = fn }

// ErrNoObjectify is Objectify's error for a value in its chunk form when SetObjectify was
// never called.
var ErrNoObjectify = errors.New("keyspace: no objectify function for a value in chunk form")

// Objectify returns v as the keyspace stores it: a value in its chunk form (Value.Chunks,
// from DecodeValue) turned into its Chunked object, any other value as it is. Whoever
// stores a decoded value calls it first.
func (ks *Keyspace) Objectify(v Value) (Value, error) {
	if !v.Chunks {
		return v, nil
	}
	if ks.objectify == nil {
		return v, ErrNoObjectify
	}
	return ks.objectify(v)
}

// Patch applies changes, a Patcher's, to the Chunked object at key, and stores head as its
// Kind, Expire, Num and Num2, a write noted as any other. A key that is missing or holds
// no such object is left alone: the state it had in the feed's stream was replaced since
// (a full copy taken meanwhile), and what comes next in the stream sets it right.
func (ks *Keyspace) Patch(key []byte, head Value, changes []byte) error {
	sh := ks.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	_, off, ok := sh.find(key, sh.hash(key))
	if !ok {
		return nil
	}
	v := sh.value(sh.entry(off))
	c, ok := v.Obj.(Chunked)
	if !ok || head.Kind != v.Kind {
		return nil
	}
	if err := c.ApplyChanges(changes); err != nil {
		return err
	}
	head.Obj, head.Bytes, head.Chunks = v.Obj, nil, false
	sh.SetLocked(key, head)
	return nil
}
