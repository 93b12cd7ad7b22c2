package keyspace

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestTrackerLayout checks what tracker's comment promises: each tracker starts a cache
// line and its groups of fields start theirs.
func TestTrackerLayout(t *testing.T) {
	var tr tracker
	require.Equal(t, uintptr(3*64), unsafe.Sizeof(tr))
	require.Equal(t, uintptr(64), unsafe.Offsetof(tr.dirtyBits))
	require.Equal(t, uintptr(128), unsafe.Offsetof(tr.delLog))
	for _, sh := range New(256).shards {
		require.Zero(t, uintptr(unsafe.Pointer(&sh.trk[0]))%64, "a shard as New allocates it")
	}
}

// TestTrackDiskQueuedInEntry covers the DiskFeed's mark in the entry (idDirty): it moves
// with an entry that grows, a Track turned off clears it, a full rewrite clears it, and a
// key deleted while queued, its id taken over, is queued once.
func TestTrackDiskQueuedInEntry(t *testing.T) {
	ks := New(1)
	ks.Track(DiskFeed, true)
	r := &mirrorRecorder{m: map[string]Value{}}
	set(ks, "s", Value{Kind: String, Bytes: []byte("x")})
	drainInto(ks, r)

	// Written again, growing each time: the entry moves, and stays queued once.
	for i := range 20 {
		set(ks, "s", Value{Kind: String, Bytes: bytes.Repeat([]byte("y"), 100*(i+1))})
	}
	require.Equal(t, 1, ks.Pending(DiskFeed))
	r.puts = 0
	drainInto(ks, r)
	require.Equal(t, 1, r.puts)
	require.Len(t, r.m["s"].Bytes, 2000)

	// Off and on again: every key written after is queued.
	set(ks, "a", Value{Kind: GCRA, Num: 1})
	ks.Track(DiskFeed, false)
	ks.Track(DiskFeed, true)
	set(ks, "a", Value{Kind: GCRA, Num: 2})
	require.Equal(t, 1, ks.Pending(DiskFeed))
	drainInto(ks, r)
	require.Equal(t, Value{Kind: GCRA, Num: 2}, r.m["a"])

	// A full rewrite drains the queued keys: written after it, they are queued again.
	set(ks, "a", Value{Kind: GCRA, Num: 3})
	ks.DrainAll(DiskFeed, 0, r)
	set(ks, "a", Value{Kind: GCRA, Num: 4})
	require.Equal(t, 1, ks.Pending(DiskFeed))
	drainInto(ks, r)
	require.Equal(t, Value{Kind: GCRA, Num: 4}, r.m["a"])

	// Keys deleted while queued, their ids taken over by new keys, again and again.
	for i := range 1000 {
		k := "churn" + strconv.Itoa(i)
		set(ks, k, Value{Kind: GCRA, Num: int64(i)})
		if i%2 == 0 {
			del(ks, k)
		}
	}
	require.Equal(t, 500+500, ks.Pending(DiskFeed), "500 keys queued once each, 500 deletions")
	require.Equal(t, 500, len(ks.shards[0].trk[DiskFeed].dirtyIDs), "no id queued twice")
	drainInto(ks, r)
	require.Len(t, r.m, 2+500)
	require.Zero(t, ks.Pending(DiskFeed))

	// A deleted key's id, drained while free, is not taken for queued by its next key.
	set(ks, "b", Value{Kind: GCRA, Num: 1})
	del(ks, "b")
	drainInto(ks, r)
	set(ks, "c", Value{Kind: GCRA, Num: 1})
	require.Equal(t, 1, ks.Pending(DiskFeed))
	drainInto(ks, r)
	require.Equal(t, Value{Kind: GCRA, Num: 1}, r.m["c"])
}

// mirrorRecorder applies drained changes to a map. With piece > 0 it is Full after that
// many puts, until emptied.
type mirrorRecorder struct {
	m          map[string]Value
	puts, dels int
	piece, n   int
}

func (r *mirrorRecorder) Delete(key []byte) { delete(r.m, string(key)); r.dels++ }

func (r *mirrorRecorder) Put(key []byte, v Value) {
	v.Bytes = bytes.Clone(v.Bytes)
	r.m[string(key)] = v
	r.puts++
	r.n++
}

func (r *mirrorRecorder) Full() bool { return r.piece > 0 && r.n >= r.piece }

// drainInto drains every shard of ks into r, piece by piece, with a full rewrite when a
// shard lost track.
func drainInto(ks *Keyspace, r *mirrorRecorder) { drainFeed(ks, DiskFeed, r) }

func drainFeed(ks *Keyspace, f Feed, r *mirrorRecorder) {
	for i := range ks.Shards() {
		for more := true; more; r.n = 0 {
			var ok bool
			if more, ok = ks.Drain(f, i, r); !ok {
				clear(r.m)
				for j := range ks.Shards() {
					ks.DrainAll(f, j, r)
				}
				return
			}
		}
	}
}

// forEachFeed runs test for each feed: the disk's queues record ids, the replicas' copies
// each change as it is written (capture.go).
func forEachFeed(t *testing.T, test func(t *testing.T, f Feed)) {
	t.Run("disk", func(t *testing.T) { test(t, DiskFeed) })
	t.Run("replica", func(t *testing.T) { test(t, ReplicaFeed) })
}

// forEachFeedAndRedo is forEachFeed and the redo log's feed, which logs every change in
// order (changelog.go): for the tests of what a copy ends with, not of how changes coalesce.
func forEachFeedAndRedo(t *testing.T, test func(t *testing.T, f Feed)) {
	forEachFeed(t, test)
	t.Run("redo", func(t *testing.T) { test(t, RedoFeed) })
}

// drain brings the model's mirror and copies up to date, a few keys at a time.
func (m *model) drain() {
	drainFeed(m.ks, DiskFeed, &mirrorRecorder{m: m.mirror, piece: 3})
	drainFeed(m.ks, ReplicaFeed, &mirrorRecorder{m: m.copies, piece: 2})
}

func TestTrackCoalescesAndOrders(t *testing.T) {
	forEachFeed(t, func(t *testing.T, f Feed) {
		ks := New(1)
		ks.Track(f, true)
		r := &mirrorRecorder{m: map[string]Value{}}
		for i := range 10000 {
			set(ks, "hot", Value{Kind: GCRA, Num: int64(i)})
		}
		set(ks, "gone", Value{Kind: String, Bytes: []byte("x")})
		del(ks, "gone")
		set(ks, "back", Value{Kind: GCRA, Num: 1})
		del(ks, "back")
		set(ks, "back", Value{Kind: GCRA, Num: 2})
		require.Equal(t, 4, ks.Pending(f), "hot, gone and two deletions: back took gone's queued record id")
		drainFeed(ks, f, r)
		require.Equal(t, map[string]Value{"hot": {Kind: GCRA, Num: 9999}, "back": {Kind: GCRA, Num: 2}}, r.m)
		require.Equal(t, 2, r.puts, "a hot key is one write per drain; a deleted key none")
		require.Equal(t, 2, r.dels)
		require.Zero(t, ks.Pending(f))

		// Nothing changed: nothing to drain.
		r.puts, r.dels = 0, 0
		drainFeed(ks, f, r)
		require.Zero(t, r.puts+r.dels)

		// Expiry, lazy and active, is a deletion too.
		set(ks, "lazy", Value{Kind: GCRA, Expire: 10})
		set(ks, "active", Value{Kind: GCRA, Expire: 10})
		drainFeed(ks, f, r)
		require.Len(t, r.m, 4)
		_, ok := get(ks, "lazy", 10)
		require.False(t, ok)
		ks.ExpireCycle(10, 1000)
		drainFeed(ks, f, r)
		require.Equal(t, map[string]Value{"hot": {Kind: GCRA, Num: 9999}, "back": {Kind: GCRA, Num: 2}}, r.m)

		// Flush forgets what was recorded: the caller clears its copy.
		set(ks, "x", Value{Kind: GCRA})
		ks.Flush()
		require.Zero(t, ks.Pending(f))
		r.puts, r.dels = 0, 0
		drainFeed(ks, f, r)
		require.Zero(t, r.puts+r.dels)
	})
}

// TestTrackFeedsApart: each feed sees every change, drained at its own pace; turning one
// off leaves the other's record alone.
func TestTrackFeedsApart(t *testing.T) {
	ks := New(4)
	ks.Track(DiskFeed, true)
	ks.Track(ReplicaFeed, true)
	disk := &mirrorRecorder{m: map[string]Value{}}
	repl := &mirrorRecorder{m: map[string]Value{}}
	for i := range 100 {
		set(ks, strconv.Itoa(i), Value{Kind: GCRA, Num: int64(i)})
		if i%10 == 0 {
			drainFeed(ks, ReplicaFeed, repl)
		}
		if i%3 == 0 {
			del(ks, strconv.Itoa(i/2))
		}
	}
	require.NotZero(t, ks.Pending(DiskFeed))
	drainFeed(ks, DiskFeed, disk)
	require.Zero(t, ks.Pending(DiskFeed))
	require.NotZero(t, ks.Pending(ReplicaFeed), "the disk's drain leaves the replicas' changes queued")
	drainFeed(ks, ReplicaFeed, repl)
	require.Equal(t, disk.m, repl.m)
	require.Len(t, disk.m, ks.Len())

	set(ks, "late", Value{Kind: GCRA})
	ks.Track(DiskFeed, false)
	require.Zero(t, ks.Pending(DiskFeed))
	require.Equal(t, 1, ks.Pending(ReplicaFeed))
	set(ks, "later", Value{Kind: GCRA})
	drainFeed(ks, ReplicaFeed, repl)
	require.Contains(t, repl.m, "later")
	require.Contains(t, repl.m, "late")
}

// TestTrackDrainInPieces drains a burst a few keys at a time while keys are written,
// deleted and written again between the pieces: the copy ends equal to the keyspace.
func TestTrackDrainInPieces(t *testing.T) {
	forEachFeed(t, func(t *testing.T, f Feed) {
		ks := New(1)
		ks.Track(f, true)
		for i := range 100 {
			set(ks, "k"+strconv.Itoa(i), Value{Kind: GCRA, Num: int64(i)})
		}
		r := &mirrorRecorder{m: map[string]Value{}, piece: 10}
		more, ok := ks.Drain(f, 0, r)
		require.True(t, ok)
		require.True(t, more)
		require.Equal(t, 10, r.puts, "the first piece")
		require.Equal(t, 90, ks.Pending(f))

		del(ks, "k3")                                   // drained already
		del(ks, "k50")                                  // not yet
		set(ks, "k50", Value{Kind: GCRA, Num: 500})     // back, under a new record id
		set(ks, "k99", Value{Kind: GCRA, Num: 990})     // queued already: still once
		set(ks, "k5", Value{Kind: TokenBucket, Num: 5}) // drained, changed again
		set(ks, "new", Value{Kind: String, Bytes: []byte("v")})
		pieces := 1
		for more {
			r.n = 0
			more, ok = ks.Drain(f, 0, r)
			require.True(t, ok)
			pieces++
		}
		require.Equal(t, 11, pieces)
		require.Zero(t, ks.Pending(f))
		require.Equal(t, 2, r.dels)
		want := map[string]Value{}
		ks.Scan(0, 1000, 0, func(key []byte, v Value) { want[string(key)] = v })
		require.Len(t, want, 100)
		require.Equal(t, want, r.m)
	})
}

func TestTrackOffRecordsNothing(t *testing.T) {
	ks := New(2)
	set(ks, "a", Value{Kind: GCRA})
	del(ks, "a")
	require.Zero(t, ks.Pending(DiskFeed))
	r := &mirrorRecorder{m: map[string]Value{}}
	drainInto(ks, r)
	require.Zero(t, r.puts+r.dels)

	ks.Track(DiskFeed, true)
	set(ks, "b", Value{Kind: GCRA})
	ks.Track(DiskFeed, false)
	require.Zero(t, ks.Pending(DiskFeed), "turning tracking off drops what it recorded")
}

// hundredDrained is a keyspace of one shard whose feed f keeps 64 bytes of deletions, with
// 100 keys set and drained into r.
func hundredDrained(f Feed) (*Keyspace, *mirrorRecorder) {
	ks := New(1)
	ks.Track(f, true)
	ks.shards[0].trk[f].maxLog = 64
	r := &mirrorRecorder{m: map[string]Value{}}
	for i := range 100 {
		set(ks, "k"+strconv.Itoa(i), Value{Kind: GCRA, Num: int64(i)})
	}
	drainFeed(ks, f, r)
	return ks, r
}

func TestTrackLostDeletionsAskForRewrite(t *testing.T) {
	forEachFeedAndRedo(t, func(t *testing.T, f Feed) {
		ks, r := hundredDrained(f)
		require.Len(t, r.m, 100)
		for i := range 50 {
			del(ks, "k"+strconv.Itoa(i))
		}
		_, ok := ks.Drain(f, 0, r)
		require.False(t, ok, "64 bytes hold a few deletions, not 50")
		require.Len(t, r.m, 100, "a shard that lost track reports nothing")
		drainFeed(ks, f, r)
		require.Len(t, r.m, 50)
		_, ok = ks.Drain(f, 0, r)
		require.True(t, ok)
	})
}

// TestTrackDeletionsHigh: a shard's log of deletions half full says so until a drain (or a
// full rewrite, after it overflowed) empties it.
func TestTrackDeletionsHigh(t *testing.T) {
	forEachFeed(t, func(t *testing.T, f Feed) {
		ks, r := hundredDrained(f)
		require.False(t, ks.DeletionsHigh(f))
		del(ks, "k0")
		require.False(t, ks.DeletionsHigh(f), "3 bytes of 64")
		for i := 1; i < 50; i++ {
			del(ks, "k"+strconv.Itoa(i))
		}
		require.True(t, ks.DeletionsHigh(f))
		drainFeed(ks, f, r)
		require.False(t, ks.DeletionsHigh(f), "drained, overflowed or not")
		for i := 50; i < 60; i++ {
			del(ks, "k"+strconv.Itoa(i))
		}
		require.True(t, ks.DeletionsHigh(f))
		ks.Track(f, false)
		require.False(t, ks.DeletionsHigh(f), "turned off")
	})
}

// TestTrackConcurrent drains while writers write (run it with -race): after the writers
// stop, one more drain makes the copy equal to the keyspace.
func TestTrackConcurrent(t *testing.T) {
	forEachFeedAndRedo(t, func(t *testing.T, f Feed) {
		ks := New(8)
		ks.Track(f, true)
		r := &mirrorRecorder{m: map[string]Value{}}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 20000 {
					key := fmt.Sprintf("k%d", (i*7+w)%500)
					switch i % 5 {
					case 0:
						del(ks, key)
					default:
						set(ks, key, Value{Kind: GCRA, Num: int64(i), Expire: int64(1000 + i%100)})
					}
					if i%1000 == 0 {
						get(ks, key, int64(1000+i%100))
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		for drained := false; !drained; {
			select {
			case <-done:
				drained = true
			default:
			}
			drainFeed(ks, f, r)
		}
		drainFeed(ks, f, r)
		want := map[string]Value{}
		ks.Scan(0, 0, 0, func(key []byte, v Value) {}) // exercise Scan alongside
		for cursor := uint64(0); ; {
			cursor = ks.Scan(cursor, 100, 0, func(key []byte, v Value) { want[string(key)] = v })
			if cursor == 0 {
				break
			}
		}
		require.Equal(t, want, r.m)
	})
}

// BenchmarkSetTracked is BenchmarkSet's hot path with tracking on, drained now and then.
func BenchmarkSetTracked(b *testing.B) {
	for _, track := range []bool{false, true} {
		b.Run(fmt.Sprintf("track=%v", track), func(b *testing.B) {
			ks := New(256)
			ks.Track(DiskFeed, track)
			keys := make([][]byte, 100000)
			for i := range keys {
				keys[i] = []byte("bench:" + strconv.Itoa(i))
			}
			var r countRecorder
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := keys[i%len(keys)]
				s := ks.Shard(k)
				s.Lock()
				s.SetLocked(k, Value{Kind: GCRA, Num: int64(i), Expire: int64(i)})
				s.Unlock()
				if i%100000 == 99999 {
					b.StopTimer()
					for j := range ks.Shards() {
						ks.Drain(DiskFeed, j, &r)
					}
					b.StartTimer()
				}
			}
		})
	}
}

// countRecorder counts what it is handed.
type countRecorder struct{ puts, dels int }

func (r *countRecorder) Delete(key []byte)       { r.dels++ }
func (r *countRecorder) Put(key []byte, v Value) { r.puts++ }
func (r *countRecorder) Full() bool              { return false }

// TestChangedShards: Changed returns the shards a capturing feed recorded changes in since
// it last returned them, once; a Drain that leaves changes behind marks its shard again.
func TestChangedShards(t *testing.T) {
	ks := New(64)
	ks.Track(RedoFeed, true)
	require.Empty(t, ks.Changed(RedoFeed, nil))
	want := map[int]bool{}
	for i := range 20 {
		k := "k" + strconv.Itoa(i)
		set(ks, k, Value{Kind: GCRA, Num: int64(i)})
		want[ks.Shard([]byte(k)).ord] = true
	}
	del(ks, "k0")
	got := map[int]bool{}
	r := &mirrorRecorder{m: map[string]Value{}}
	for _, i := range ks.Changed(RedoFeed, nil) {
		got[i] = true
		more, ok := ks.Drain(RedoFeed, i, r)
		require.True(t, ok)
		require.False(t, more)
	}
	require.Equal(t, want, got)
	require.Zero(t, ks.Pending(RedoFeed))
	require.Len(t, r.m, 19)
	require.Empty(t, ks.Changed(RedoFeed, nil), "nothing changed since")

	// A Drain that stops early marks its shard again.
	ks = New(1)
	ks.Track(RedoFeed, true)
	for i := range 10 {
		set(ks, "k"+strconv.Itoa(i), Value{Kind: GCRA, Num: int64(i)})
	}
	require.Equal(t, []int{0}, ks.Changed(RedoFeed, nil))
	more, ok := ks.Drain(RedoFeed, 0, &mirrorRecorder{m: map[string]Value{}, piece: 3})
	require.True(t, ok)
	require.True(t, more)
	require.Equal(t, []int{0}, ks.Changed(RedoFeed, nil))
}

// orderRecorder writes down what it is handed, in order.
type orderRecorder struct{ ops []string }

func (r *orderRecorder) Delete(key []byte) { r.ops = append(r.ops, "del "+string(key)) }

func (r *orderRecorder) Put(key []byte, v Value) {
	r.ops = append(r.ops, fmt.Sprintf("put %s %d %d", key, v.Num, len(v.Bytes)))
}

func (r *orderRecorder) Full() bool { return false }

// logRecorder takes an appending feed's log as it is.
type logRecorder struct {
	orderRecorder
	log []byte
}

func (r *logRecorder) Log(changes []byte) { r.log = append(r.log, changes...) }

// TestAppendingFeedFromEntry: a value that the appending feed copies from its entry as it
// lies (appendEntry: no bytes, or bytes in the entry) is logged as AppendLogPut writes it,
// whatever fields it has, with a key kept in the entry or out of it, a byte value with room
// after it or without; one whose copy would pass maxCaptured is queued by record id.
func TestAppendingFeedFromEntry(t *testing.T) {
	long := strings.Repeat("k", maxInlineKey+1)
	for _, key := range []string{"k", long} {
		for fields := range 8 {
			for _, val := range []string{"", "1", strings.Repeat("v", 60), strings.Repeat("w", maxCaptured)} {
				v := Value{Kind: GCRA, Bytes: []byte(val)}
				if val != "" {
					v.Kind = String
				}
				if fields&1 != 0 {
					v.Expire = 1e18 + 1
				}
				if fields&2 != 0 {
					v.Num = -2
				}
				if fields&4 != 0 {
					v.Num2 = 1 << 40
				}
				for _, kind := range []Kind{v.Kind, maxKind} {
					v.Kind = kind
					ks := New(1)
					set(ks, key, Value{Kind: String, Bytes: []byte("before")})
					ks.Track(RedoFeed, true)
					set(ks, key, v) // over an entry of another layout
					set(ks, key, Value{Kind: String, Bytes: []byte("1234567")})
					set(ks, key, v) // grown into its room, or shrunk leaving room
					lr := &logRecorder{}
					_, ok := ks.Drain(RedoFeed, 0, lr)
					require.True(t, ok)
					want := AppendLogPut(nil, []byte(key), v)
					seven := AppendLogPut(nil, []byte(key), Value{Kind: String, Bytes: []byte("1234567")})
					what := fmt.Sprintf("fields %03b kind %d value %q", fields, kind, val)
					if EncodedLen(v) > maxCaptured {
						require.Equal(t, seven, lr.log, what)
						require.Equal(t, []string{fmt.Sprintf("put %s %d %d", key, v.Num, len(val))}, lr.ops, what)
						continue
					}
					require.Equal(t, slices.Concat(want, seven, want), lr.log, what)
					require.Empty(t, lr.ops, what)
				}
			}
		}
	}
}

// TestAppendingFeed: the redo log's feed hands over every change in order, a key written
// twice twice, and a value it does not copy (a long one) with its state at the drain, after
// the log; a deletion unqueues such a value, and a key deleted and set again ends set. A
// LogRecorder takes the log as it is, in the change log form.
func TestAppendingFeed(t *testing.T) {
	ks := New(1)
	ks.Track(RedoFeed, true)
	long := bytes.Repeat([]byte("x"), 2*maxCaptured)
	set(ks, "a", Value{Kind: GCRA, Num: 1})
	set(ks, "a", Value{Kind: GCRA, Num: 2})
	set(ks, "b", Value{Kind: String, Bytes: long})
	set(ks, "c", Value{Kind: String, Bytes: long})
	del(ks, "c")
	set(ks, "d", Value{Kind: GCRA, Num: 4})
	del(ks, "d")
	set(ks, "d", Value{Kind: GCRA, Num: 5})
	set(ks, "b", Value{Kind: String, Bytes: long[:len(long)-1]})
	require.Equal(t, []int{0}, ks.Changed(RedoFeed, nil))
	r := &orderRecorder{}
	more, ok := ks.Drain(RedoFeed, 0, r)
	require.True(t, ok)
	require.False(t, more)
	require.Equal(t, []string{"put a 1 0", "put a 2 0", "del c", "put d 4 0", "del d", "put d 5 0",
		fmt.Sprintf("put b 0 %d", len(long)-1)}, r.ops)
	require.Zero(t, ks.Pending(RedoFeed))
	require.Empty(t, ks.Changed(RedoFeed, nil))

	set(ks, "a", Value{Kind: GCRA, Num: 3})
	del(ks, "a")
	set(ks, "b", Value{Kind: String, Bytes: long})
	lr := &logRecorder{}
	more, ok = ks.Drain(RedoFeed, 0, lr)
	require.True(t, ok)
	require.False(t, more)
	require.Equal(t, AppendLogDelete(AppendLogPut(nil, []byte("a"), Value{Kind: GCRA, Num: 3}), []byte("a")), lr.log)
	require.Equal(t, []string{fmt.Sprintf("put b 0 %d", len(long))}, lr.ops, "the long value after the log")
}
