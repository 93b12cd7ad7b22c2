package collection

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// smallGroups makes the index's groups 2 to 4 entries, so that small sets split and merge
// them; it returns what puts them back.
func smallGroups() func() {
	ixGroup = 2
	return func() { ixGroup = 32 }
}

// ixCheck checks the index in front of b, a big set of num members: its groups cover the
// pack in order, each of 1 to 2*ixGroup entries; and, when its slots are this process's,
// they hold each member once, in its group.
func ixCheck(t *testing.T, b []byte, num int) {
	t.Helper()
	z := ZSetOf(b, true)
	x := z.ix
	require.NotZero(t, len(x), "a big set has an index")
	off, total := 0, 0
	for g := range x.ngroups() {
		o, n := x.group(g)
		require.Equal(t, off, o, "group %d starts where the one before ends", g)
		require.True(t, n >= 1 && n <= 2*ixGroup, "group %d has %d entries", g, n)
		for range n {
			k := Skip(z.Pack[off:])
			if x.hashed() {
				require.GreaterOrEqual(t, x.slotOf(memberHash(z.Pack[off:off+k]), g), 0, "group %d's member at %d has a slot", g, off)
			}
			off += zskip(z.Pack[off:])
		}
		total += n
	}
	require.Equal(t, len(z.Pack), off)
	require.Equal(t, num, total)
	if x.hashed() {
		live, gone := 0, 0
		for i := range x.nslots() {
			switch s := x.slot(i); {
			case s&slotLive != 0:
				live++
			case s == slotGone:
				gone++
			}
		}
		require.Equal(t, num, live)
		require.Equal(t, x.ngone(), gone)
		require.LessOrEqual(t, (live+gone)*4, x.nslots()*3)
	}
}

// TestZSetIndexModel runs a sliding log and random adds, updates, removals and removals of
// ranges on a set of a few thousand members, with the index's own group size, against a map;
// after each step, the index is whole and every read through it answers as a walk does.
func TestZSetIndexModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	model := map[string]float64{}
	var b, buf []byte
	big := false
	check := func() {
		ixCheck(t, b, len(model))
		z := ZSetOf(b, true)
		for i := 0; i < 50; i++ {
			m := strconv.Itoa(r.IntN(6000))
			loc := z.Find([]byte(m))
			require.Equal(t, ZFind(z.Pack, []byte(m)), loc, m)
			rank := r.IntN(len(model) + 1)
			require.Equal(t, ZSeek(z.Pack, rank), z.Seek(rank))
			lo := float64(r.IntN(6000))
			sr := ScoreRange{Min: lo, Max: lo + float64(r.IntN(500)), MinEx: r.IntN(2) == 0}
			f1, t1, n1, r1 := ZScoreSpan(z.Pack, sr)
			f2, t2, n2, r2 := z.ScoreSpan(sr)
			require.Equal(t, []any{f1, t1, n1, r1}, []any{f2, t2, n2, r2}, "%+v", sr)
		}
	}
	for step := range 20000 {
		ed := NewZEditor(ZSetOf(b, big), int64(len(model)), big, 128, 64, buf)
		m := strconv.Itoa(r.IntN(6000))
		switch op := r.IntN(10); {
		case op < 6 || step < 3000:
			s := float64(r.IntN(6000))
			if r.IntN(4) == 0 {
				s += 0.5
			}
			_, out := ed.Add([]byte(m), s, ZAddFlags{})
			if _, had := model[m]; had && model[m] != s {
				require.Equal(t, ZUpdated, out)
			}
			model[m] = s
		case op < 9:
			_, had := model[m]
			require.Equal(t, had, ed.Remove([]byte(m)))
			delete(model, m)
		default:
			lo := float64(r.IntN(6000))
			sr := ScoreRange{Min: lo, Max: lo + float64(r.IntN(60))}
			from, to, n, _ := ed.set().ScoreSpan(sr)
			for k, v := range model {
				if sr.GteMin(v) && sr.LteMax(v) {
					delete(model, k)
				}
			}
			ed.DeleteSpan(from, to, n)
		}
		require.Equal(t, int64(len(model)), ed.Num)
		if ed.Changed() {
			b, buf = slices.Clone(ed.Bytes()), ed.Buf()[:0]
		}
		big = ed.Big
		if big && step%500 == 0 {
			check()
		}
	}
	require.True(t, big)
	check()
	// Read by another process (a restart, a replica), the index finds members by walking,
	// and the next write gives it slots of its own.
	b[0] ^= 0x80
	require.False(t, ZSetOf(b, true).ix.hashed())
	check()
	ed := NewZEditor(ZSetOf(b, true), int64(len(model)), true, 128, 64, nil)
	ed.Add([]byte("new"), 1, ZAddFlags{})
	model["new"] = 1
	b = ed.Bytes()
	require.True(t, ZSetOf(b, true).ix.hashed())
	check()
}

// TestZSetSlidingLogIndex: a log past the listpack limit, each step adding the newest
// timestamp and removing the oldest, keeps its groups few and full.
func TestZSetSlidingLogIndex(t *testing.T) {
	var b, buf []byte
	num, big := int64(0), false
	for ts := 1732512345000; ts < 1732512345000+20000; ts++ {
		ed := NewZEditor(ZSetOf(b, big), num, big, 128, 64, buf)
		m := []byte(strconv.Itoa(ts))
		ed.Add(m, float64(ts), ZAddFlags{})
		if ed.Num > 1000 {
			from, to, n, _ := ed.set().ScoreSpan(ScoreRange{Min: 0, Max: float64(ts - 1000), MaxEx: false})
			ed.DeleteSpan(from, to, n)
		}
		b, buf, num, big = slices.Clone(ed.Bytes()), ed.Buf()[:0], ed.Num, ed.Big
	}
	require.Equal(t, int64(1000), num)
	ixCheck(t, b, int(num))
	x := ZSetOf(b, true).ix
	require.LessOrEqual(t, x.ngroups(), 1000/ixGroup+2)
	require.LessOrEqual(t, x.nslots(), 4096)
}

// BenchmarkZSetLogStep is one step of a sliding log of n members: ZADD of the newest
// timestamp and ZREMRANGEBYSCORE of the oldest, the set copied back as the keyspace
// stores it; indexed past 128 members as Redis's listpack limit, or "flat", one pack
// whatever its size.
func BenchmarkZSetLogStep(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, flat := range []bool{false, true} {
			name := strconv.Itoa(n)
			if flat {
				name += "/flat"
			}
			b.Run(name, func(b *testing.B) {
				limit := int64(128)
				if flat {
					limit = 1 << 40
				}
				var set, buf []byte
				num, big := int64(0), false
				ts := 1732512345000
				step := func() {
					ed := NewZEditor(ZSetOf(set, big), num, big, limit, 64, buf)
					var m [20]byte
					ed.Add(strconv.AppendInt(m[:0], int64(ts), 10), float64(ts), ZAddFlags{})
					if ed.Num > int64(n) {
						from, to, k, _ := ed.set().ScoreSpan(ScoreRange{Min: math.Inf(-1), Max: float64(ts - n), MaxEx: false})
						ed.DeleteSpan(from, to, k)
					}
					set = append(set[:0], ed.Bytes()...)
					buf, num, big = ed.Buf(), ed.Num, ed.Big
					ts++
				}
				for range n {
					step()
				}
				b.ReportAllocs()
				for b.Loop() {
					step()
				}
			})
		}
	}
}

// TestHashIndexModel sets and deletes random fields of a big hash, through the index, with
// small groups and with the index's own, against a map and the order fields came in; after
// each step the index is whole, and the pack holds the model's pairs in order.
func TestHashIndexModel(t *testing.T) {
	defer func() { ixGroup = 32 }()
	for _, group := range []int{2, 32} {
		ixGroup = group
		r := rand.New(rand.NewPCG(3, 4))
		model := map[string]string{}
		var order []string
		b := IndexHash(nil, 0)
		var buf []byte
		for step := range 10000 {
			e := NewHashEditor(HashOf(b, true), int64(len(model)), buf)
			f := strconv.Itoa(r.IntN(3000))
			if r.IntN(3) == 0 {
				f = "f" + f
			}
			if op := r.IntN(10); op < 6 || step < 2000 {
				v := strconv.Itoa(r.IntN(1 << (1 + r.IntN(40))))
				if r.IntN(5) == 0 {
					v = string(make([]byte, r.IntN(300)))
				}
				_, had := model[f]
				require.Equal(t, !had, e.Set([]byte(f), []byte(v)))
				if !had {
					order = append(order, f)
				}
				model[f] = v
			} else {
				_, had := model[f]
				require.Equal(t, had, e.Del([]byte(f)))
				if had {
					delete(model, f)
					order = slices.DeleteFunc(order, func(s string) bool { return s == f })
				}
			}
			require.Equal(t, int64(len(model)), e.Num)
			if e.Changed() {
				b, buf = slices.Clone(e.Bytes()), e.Buf()[:0]
			}
			if step%1000 == 0 || step == 9999 {
				ixCheck(t, b, len(model))
				h := HashOf(b, true)
				i := 0
				for f, v := range HashPairs(h.Pack) {
					require.Equal(t, order[i], string(f.Append(nil)))
					require.Equal(t, model[order[i]], string(v.Append(nil)))
					i++
				}
				require.Equal(t, len(order), i)
				for range 100 {
					f := strconv.Itoa(r.IntN(3000))
					v, ok := h.Get([]byte(f))
					want, had := model[f]
					require.Equal(t, had, ok, f)
					if had {
						require.Equal(t, want, string(v.Append(nil)))
					}
				}
			}
		}
		// Another process's index: read by walking, indexed anew at the next write.
		b[0] ^= 0x80
		h := HashOf(b, true)
		require.False(t, h.ix.hashed())
		v, ok := h.Get([]byte(order[0]))
		require.True(t, ok)
		require.Equal(t, model[order[0]], string(v.Append(nil)))
		e := NewHashEditor(h, int64(len(model)), nil)
		require.True(t, e.Del([]byte(order[0])))
		ixCheck(t, e.Bytes(), len(model)-1)
		require.True(t, HashOf(e.Bytes(), true).ix.hashed())
	}
}
