package collection

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// check verifies b's invariants: every chunk holds entries and its ref says how many and
// its first score, seqs rise, the counts add up, and every entry's slot names its chunk.
func (b *Big) check(t testing.TB) {
	t.Helper()
	n, bytes := 0, 0
	for i, r := range b.refs {
		require.Greater(t, r.n, 0, "chunk %d is empty", i)
		require.Equal(t, r.n, Count(r.c.pack)/2, "chunk %d's count", i)
		require.LessOrEqual(t, r.n, chunkMax(), "chunk %d", i)
		require.Equal(t, r.seq, r.c.seq)
		require.Same(t, r.c, b.byID[r.c.id])
		if i > 0 {
			require.Less(t, b.refs[i-1].seq, r.seq)
		}
		if b.sorted {
			_, s, _ := ZNext(r.c.pack)
			require.Equal(t, s, r.first, "chunk %d's first score", i)
		}
		for at := 0; at < len(r.c.pack); at += zskip(r.c.pack[at:]) {
			if k := Skip(r.c.pack[at:]); b.slotOf(memberHash(r.c.pack[at:at+k]), r.c.id) < 0 {
				t.Fatalf("chunk %d, offset %d: no slot", i, at)
			}
		}
		n += r.n
		bytes += len(r.c.pack)
	}
	require.Equal(t, n, b.used)
	require.Equal(t, bytes, b.bytes)
	live := 0
	for _, s := range b.slots {
		if s&bigLive != 0 {
			live++
		}
	}
	require.Equal(t, n, live)
}

// TestBigZSetAsPack drives a big sorted set and the small set's editor with the same
// random writes, with small chunks so that they split and merge all the time: the big
// one's pack stays the small one's, byte for byte.
func TestBigZSetAsPack(t *testing.T) {
	for _, group := range []int{2, 32} {
		t.Run(fmt.Sprint(group), func(t *testing.T) {
			ixGroup = group
			defer func() { ixGroup = 32 }()
			rng := rand.New(rand.NewPCG(1, uint64(group)))
			small := NewZEditor(ZSet{}, 0, false, 1<<30, 1<<30, nil)
			b := NewBig(nil, true)
			member := func() []byte {
				if rng.IntN(4) == 0 {
					return []byte(strconv.Itoa(rng.IntN(2000)))
				}
				return fmt.Appendf(nil, "m%d%s", rng.IntN(2000), make([]byte, rng.IntN(3)*100))
			}
			for step := range 10000 {
				switch op := rng.IntN(10); {
				case op < 6:
					m, s := member(), float64(rng.IntN(300))-100
					if rng.IntN(3) == 0 {
						s += 0.5
					}
					f := ZAddFlags{Incr: rng.IntN(8) == 0, GT: rng.IntN(10) == 0}
					ws, wo := small.Add(m, s, f)
					gs, gor := b.ZAdd(m, s, f)
					require.Equal(t, wo, gor, "step %d", step)
					require.Equal(t, ws, gs, "step %d", step)
				case op < 8:
					m := member()
					require.Equal(t, small.Remove(m), b.ZRemove(m), "step %d", step)
				case op < 9:
					lo := float64(rng.IntN(300)) - 100
					r := ScoreRange{Min: lo, Max: lo + float64(rng.IntN(20)), MinEx: rng.IntN(2) == 0, MaxEx: rng.IntN(2) == 0}
					from, to, n, rank := small.set().ScoreSpan(r)
					grank, gn := b.ZScoreRank(r)
					require.Equal(t, int(n), gn, "step %d: count of %+v", step, r)
					if n > 0 {
						require.Equal(t, rank, grank, "step %d: rank of %+v", step, r)
					}
					require.Equal(t, gn, b.ZCount(r))
					if rng.IntN(2) == 0 {
						small.DeleteSpan(from, to, n)
						require.Equal(t, int(n), b.ZDeleteScores(r))
					}
				default:
					first, n := rng.IntN(int(small.Num)+1), rng.IntN(group*3)
					n = min(n, int(small.Num)-first)
					from := ZSeek(small.Z, first)
					to := from + ZSeek(small.Z[from:], n)
					small.DeleteSpan(from, to, int64(n))
					require.Equal(t, n, b.DeleteRanks(first, n))
				}
				require.Equal(t, int(small.Num), b.Len(), "step %d", step)
				if step%97 == 0 || step < 3000 && group == 2 {
					b.check(t)
					require.Equal(t, string(small.Z), string(b.AppendEncoded(nil)), "step %d", step)
				}
				if step%1000 == 999 {
					m := member()
					want := ZFind(small.Z, m)
					s, rank, ok := b.ZFind(m)
					require.Equal(t, want.Found, ok)
					if ok {
						require.Equal(t, want.Score, s)
						require.Equal(t, want.Rank, rank)
					}
				}
			}
		})
	}
}

// TestBigZWalk walks a big set both ways from every rank.
func TestBigZWalk(t *testing.T) {
	ixGroup = 2
	defer func() { ixGroup = 32 }()
	var pack []byte
	for i := range 50 {
		pack = AppendScore(AppendString(pack, fmt.Appendf(nil, "m%02d", i)), float64(i))
	}
	b := NewBig(pack, true)
	b.check(t)
	for first := range 50 {
		var fwd, back []float64
		b.ZWalk(first, false, func(_ Elem, s float64) bool { fwd = append(fwd, s); return true })
		b.ZWalk(first, true, func(_ Elem, s float64) bool { back = append(back, s); return true })
		require.Len(t, fwd, 50-first)
		require.Len(t, back, 50-first)
		require.Equal(t, float64(first), fwd[0])
		require.Equal(t, float64(49-first), back[0])
		require.Equal(t, float64(0), back[len(back)-1])
	}
}

// TestBigHashAsPack drives a big hash and the small hash's functions with the same random
// writes: the big one's pack stays the small one's, values of 1 byte to 10 KB included.
func TestBigHashAsPack(t *testing.T) {
	for _, group := range []int{2, 32} {
		t.Run(fmt.Sprint(group), func(t *testing.T) {
			ixGroup = group
			defer func() { ixGroup = 32 }()
			rng := rand.New(rand.NewPCG(2, uint64(group)))
			var small []byte
			num := 0
			b := NewBig(nil, false)
			field := func() []byte { return []byte(strconv.Itoa(rng.IntN(400) - 100)) }
			value := func() []byte { return make([]byte, []int{1, 5, 70, 300, 1, 5, 70, 300, 10000}[rng.IntN(9)]) }
			for step := range 2500 {
				if rng.IntN(3) > 0 {
					f, v := field(), value()
					var added int
					small, added = HashSet(nil, small, [][]byte{f, v})
					num += added
					require.Equal(t, added == 1, b.HashSet(f, v), "step %d", step)
				} else {
					f := field()
					var removed int
					small, removed = HashDel(nil, small, [][]byte{f})
					num -= removed
					require.Equal(t, removed == 1, b.HashDel(f), "step %d", step)
				}
				require.Equal(t, num, b.Len())
				if step%101 == 0 || group == 2 && step%17 == 0 {
					b.check(t)
					require.Equal(t, string(small), string(b.AppendEncoded(nil)), "step %d", step)
					f := field()
					want, wok := HashGet(small, f)
					got, gok := b.HashGet(f)
					require.Equal(t, wok, gok)
					require.Equal(t, want, got)
				}
			}
			// Built from its pack, the same hash.
			c := NewBig(small, false)
			c.check(t)
			require.Equal(t, string(small), string(c.AppendEncoded(nil)))
		})
	}
}

// BenchmarkBigZAdd is ZADD of one new member at a random score into a set of 1M members.
func BenchmarkBigZAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var pack []byte
	for i := range 1_000_000 {
		pack = AppendScore(AppendString(pack, strconv.AppendInt(nil, int64(i), 10)), float64(i))
	}
	big := NewBig(pack, true)
	m := []byte("n")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m = strconv.AppendInt(m[:1], int64(i), 10)
		big.ZAdd(m, float64(rng.IntN(1_000_000)), ZAddFlags{})
	}
}
