package collection

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// members returns the set s's members in order, as strings.
func members(s Set) []string {
	var out []string
	for m := range s.Members() {
		out = append(out, string(m.Append(nil)))
	}
	return out
}

// setFrom builds a set by SADD of ms, one after the other, under lim.
func setFrom(lim SetLimits, ms ...string) SetEditor {
	e := NewSet(lim, nil)
	for _, m := range ms {
		e.Add([]byte(m))
	}
	return e
}

var redisSetLimits = SetLimits{IntsetEntries: 512, ListpackEntries: 128, ListpackValue: 64}

func TestSetEncodings(t *testing.T) {
	long := string(make([]byte, 65))
	for _, tc := range []struct {
		name    string
		lim     SetLimits
		members []string
		enc     SetEncoding
		want    []string
	}{
		{"integers: an intset, in order", redisSetLimits, []string{"3", "-1", "1732512345123", "3", "0"}, Intset, []string{"-1", "0", "3", "1732512345123"}},
		{"an integer's look-alike is a string", redisSetLimits, []string{"1", "01"}, SmallSet, []string{"1", "01"}},
		{"-0 is no integer", redisSetLimits, []string{"-0"}, SmallSet, []string{"-0"}},
		{"strings in the order they came", redisSetLimits, []string{"b", "a", "2", "b"}, SmallSet, []string{"b", "a", "2"}},
		{"a string after integers keeps their order", redisSetLimits, []string{"2", "1", "x", "0"}, SmallSet, []string{"1", "2", "x", "0"}},
		{"past the intset's limit", SetLimits{IntsetEntries: 2, ListpackEntries: 128, ListpackValue: 64}, []string{"3", "2", "1"}, SmallSet, []string{"1", "2", "3"}},
		{"past the intset's limit and the small set's", SetLimits{IntsetEntries: 2, ListpackEntries: 2, ListpackValue: 64}, []string{"3", "2", "1"}, BigSet, []string{"1", "2", "3"}},
		{"past the small set's limit", SetLimits{IntsetEntries: 512, ListpackEntries: 2, ListpackValue: 64}, []string{"a", "b", "c"}, BigSet, []string{"a", "b", "c"}},
		{"a long member", redisSetLimits, []string{"a", long}, BigSet, []string{"a", long}},
		{"an intset given a long member", redisSetLimits, []string{"1", long}, BigSet, []string{"1", long}},
		{"an intset of 0 entries at most", SetLimits{IntsetEntries: 0, ListpackEntries: 128, ListpackValue: 64}, []string{"1"}, SmallSet, []string{"1"}},
		{"the empty member", redisSetLimits, []string{""}, SmallSet, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setFrom(tc.lim, tc.members...)
			require.Equal(t, tc.enc, e.Enc)
			require.Equal(t, int64(len(tc.want)), e.Num)
			s := SetOf(e.Bytes(), e.Enc)
			require.Equal(t, tc.want, members(s))
			for _, m := range tc.want {
				require.True(t, s.Has([]byte(m)), m)
			}
			for _, m := range []string{"nope", "01", "-0", "99"} {
				require.Equal(t, slices.Contains(tc.want, m), s.Has([]byte(m)), m)
			}
		})
	}
}

// TestSetEditorCopyOnWrite: an editor never writes into the bytes it started from, and an
// add or removal that changes nothing leaves it unchanged.
func TestSetEditorCopyOnWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		lim  SetLimits
		ms   []string
	}{
		{"intset", redisSetLimits, []string{"1", "2", "3"}},
		{"small", redisSetLimits, []string{"a", "b", "c"}},
		{"big", SetLimits{IntsetEntries: 1, ListpackEntries: 1, ListpackValue: 64}, []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built := setFrom(tc.lim, tc.ms...)
			b, enc := slices.Clone(built.Bytes()), built.Enc
			orig := slices.Clone(b)
			e := NewSetEditor(SetOf(b, enc), 3, tc.lim, nil)
			require.False(t, e.Add([]byte(tc.ms[0])))
			require.False(t, e.Remove([]byte("zz")))
			require.False(t, e.Changed())
			require.True(t, e.Remove([]byte(tc.ms[1])))
			require.True(t, e.Add([]byte("d")))
			require.True(t, e.Changed())
			require.Equal(t, orig, b)
			require.ElementsMatch(t, []string{tc.ms[0], tc.ms[2], "d"}, members(SetOf(e.Bytes(), e.Enc)))
		})
	}
}

// TestSetNth: Nth, Offsets and At find every member of each encoding, a big set's through
// its index's groups.
func TestSetNth(t *testing.T) {
	defer smallGroups()()
	for _, lim := range []SetLimits{redisSetLimits, {IntsetEntries: 0, ListpackEntries: 1000, ListpackValue: 64}, {IntsetEntries: 0, ListpackEntries: 0, ListpackValue: 64}} {
		var ms []string
		for i := range 100 {
			ms = append(ms, strconv.Itoa(i*7%100))
		}
		e := setFrom(lim, ms...)
		s := e.Set()
		want := members(s)
		require.Len(t, want, 100)
		offs := s.Offsets(nil)
		require.Len(t, offs, 100)
		for i, m := range want {
			require.Equal(t, m, string(s.Nth(i).Append(nil)))
			require.Equal(t, m, string(s.At(offs[i]).Append(nil)))
		}
	}
}

// FuzzSet applies random SADD, SREM and SPOP to a set and to a model (the members in
// order, and the encoding the limits call for), under limits small enough to cross, and
// requires the same members in the same order, the same encoding, and a sound index.
func FuzzSet(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5}, uint64(1), uint8(3), uint8(4))
	f.Add([]byte{0x10, 0x20, 0x31, 0x42, 0xe0, 0x03}, uint64(7), uint8(0), uint8(0))
	f.Add([]byte{0xe0, 0xe0, 0xe2, 0xf1, 0x02}, uint64(3), uint8(200), uint8(2))
	f.Fuzz(func(t *testing.T, ops []byte, seed uint64, intset, entries uint8) {
		defer smallGroups()()
		lim := SetLimits{IntsetEntries: int64(intset % 40), ListpackEntries: int64(entries % 40), ListpackValue: 8}
		r := rand.New(rand.NewPCG(seed, uint64(len(ops))))
		names := []string{"a", "b", "", "01", "-0", "9223372036854775807", "-9223372036854775808", "longer than eight"}
		for i := range 60 {
			names = append(names, strconv.Itoa(i-10))
		}
		var b []byte
		enc, num := Intset, int64(0)
		var order []string // the model's members, in the set's order
		menc := Intset
		for _, op := range ops {
			e := NewSetEditor(SetOf(b, enc), num, lim, nil)
			n := 1 + int(op>>4)%3
			if op&0xe0 == 0xe0 {
				n = 20 + int(op&0x0f)
			}
			switch op % 3 {
			case 0:
				for range n {
					m := names[r.IntN(len(names))]
					if r.IntN(3) != 0 {
						m = names[8+r.IntN(60)] // integers, mostly
					}
					_, isInt := canonicalInt([]byte(m))
					had := slices.Contains(order, m)
					require.Equal(t, !had, e.Add([]byte(m)), "add %q", m)
					if had {
						continue
					}
					if menc == Intset && (!isInt || int64(len(order)+1) > lim.IntsetEntries) {
						menc = SmallSet
						if int64(len(order)+1) > lim.ListpackEntries || slices.ContainsFunc(append(order, m), func(s string) bool { return int64(len(s)) > lim.ListpackValue }) {
							menc = BigSet
						}
						if !isInt {
							order = append(order, m)
						}
					} else if menc == SmallSet && (int64(len(order)+1) > lim.ListpackEntries || int64(len(m)) > lim.ListpackValue) {
						menc = BigSet
						order = append(order, m)
						continue
					} else if menc != Intset {
						order = append(order, m)
						continue
					}
					if isInt {
						order = sortedInsert(order, m)
					}
				}
			case 1:
				for range n {
					m := names[r.IntN(len(names))]
					had := slices.Contains(order, m)
					require.Equal(t, had, e.Remove([]byte(m)), "remove %q", m)
					order = slices.DeleteFunc(order, func(s string) bool { return s == m })
				}
			case 2:
				for ; n > 0 && e.Num > 0; n-- {
					i := r.IntN(int(e.Num))
					m := e.Pop(i, nil)
					require.Equal(t, order[i], string(m))
					order = slices.Delete(order, i, i+1)
				}
			}
			require.Equal(t, menc, e.Enc)
			require.Equal(t, int64(len(order)), e.Num)
			if e.Changed() {
				b, enc, num = slices.Clone(e.Bytes()), e.Enc, e.Num
			}
			if num == 0 { // the key is deleted: a set made anew next
				b, enc, menc, order = nil, Intset, Intset, nil
			}
			s := SetOf(b, enc)
			require.Equal(t, order, members(s))
			for _, m := range order {
				require.True(t, s.Has([]byte(m)), "has %q", m)
			}
			if enc == BigSet && num > 0 { // its bytes form: an index of nothing, which readers walk past
				z := ZSetOf(b, true)
				require.Zero(t, z.ix.ngroups())
				require.False(t, z.ix.hashed())
				require.Equal(t, 2*int(num), Count(z.Pack))
			}
		}
	})
}

// sortedInsert puts the integer m among the integers of order, in ascending order, where
// order is an intset's members (the model applies it only while integers alone are there).
func sortedInsert(order []string, m string) []string {
	n, _ := strconv.ParseInt(m, 10, 64)
	i := 0
	for i < len(order) {
		x, err := strconv.ParseInt(order[i], 10, 64)
		if err != nil || x > n {
			break
		}
		i++
	}
	return slices.Insert(order, i, m)
}

// BenchmarkSetHas: SISMEMBER of a big set costs the same whatever its size (the index's
// slots name the member's group), and a small set's walk stays short.
func BenchmarkSetHas(b *testing.B) {
	for _, n := range []int{100, 10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			e := setFrom(SetLimits{IntsetEntries: 0, ListpackEntries: 128, ListpackValue: 64})
			for i := range n {
				e.Add([]byte("user:" + strconv.Itoa(i)))
			}
			s := e.Set()
			probe := [][]byte{[]byte("user:" + strconv.Itoa(n/2)), []byte("user:nope")}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				s.Has(probe[i&1])
			}
		})
	}
}

// TestSetPack: a set's members alone, in every encoding, make the same set again; a pack
// that is no set is refused.
func TestSetPack(t *testing.T) {
	small := SetLimits{IntsetEntries: 4, ListpackEntries: 4, ListpackValue: 64}
	for _, ms := range [][]string{{"3", "1", "2"}, {"a", "1", "b"}, {"a", "b", "c", "d", "e", "f"}, {"1", "2", "3", "4", "5"}} {
		e := setFrom(small, ms...)
		pack := SetPack(nil, e.Set())
		got, ok := SetFromPack(pack, e.Enc == Intset, small)
		require.True(t, ok, ms)
		require.Equal(t, e.Enc, got.Enc, ms)
		require.Equal(t, members(e.Set()), members(got.Set()), ms)
	}
	for _, tc := range []struct {
		name   string
		pack   []byte
		intset bool
	}{
		{"empty", nil, false},
		{"cut short", []byte{5, 'a'}, false},
		{"a member twice", AppendString(AppendString(nil, []byte("a")), []byte("a")), false},
		{"an integer twice", AppendInt(AppendInt(nil, 7), 7), false},
		{"an intset out of order", AppendInt(AppendInt(nil, 7), 1), true},
		{"an intset with a string", AppendString(AppendInt(nil, 1), []byte("a")), true},
		{"a float", AppendScore(nil, 1.5), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ok := SetFromPack(tc.pack, tc.intset, redisSetLimits)
			require.False(t, ok)
		})
	}
}
