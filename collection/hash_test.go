package collection

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// hashOf builds a hash by HSET of pairs, one after the other.
func hashOf(pairs ...string) []byte {
	var h []byte
	for i := 0; i+1 < len(pairs); i += 2 {
		h, _ = HashSet(nil, h, [][]byte{[]byte(pairs[i]), []byte(pairs[i+1])})
	}
	return h
}

// flat returns the hash h's pairs in order.
func flat(h []byte) []string {
	var out []string
	for f, v := range HashPairs(h) {
		out = append(out, string(f.Append(nil)), string(v.Append(nil)))
	}
	return out
}

func args(s ...string) [][]byte {
	b := make([][]byte, len(s))
	for i, a := range s {
		b[i] = []byte(a)
	}
	return b
}

func TestHashSet(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     []string
		pairs []string
		want  []string
		added int
	}{
		{"new hash", nil, []string{"tokens", "10", "last_refill", "1732512345123"}, []string{"tokens", "10", "last_refill", "1732512345123"}, 2},
		{"update keeps its place", []string{"a", "1", "b", "2"}, []string{"a", "x"}, []string{"a", "x", "b", "2"}, 0},
		{"new goes last", []string{"a", "1", "b", "2"}, []string{"c", "3", "a", "0"}, []string{"a", "0", "b", "2", "c", "3"}, 1},
		{"twice in one call: the last value, the first place", nil, []string{"a", "1", "b", "2", "a", "3"}, []string{"a", "3", "b", "2"}, 2},
		{"integer fields", []string{"1", "x", "01", "y"}, []string{"1", "z", "-0", "w"}, []string{"1", "z", "01", "y", "-0", "w"}, 1},
		{"empty field and value", nil, []string{"", ""}, []string{"", ""}, 1},
		{"long value", []string{"a", "1"}, []string{"a", string(make([]byte, 300))}, []string{"a", string(make([]byte, 300))}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, added := HashSet(nil, hashOf(tc.h...), args(tc.pairs...))
			require.Equal(t, tc.added, added)
			require.Equal(t, tc.want, flat(got))
		})
	}
}

// TestHashSetMany: past the 64 pairs HashSet keeps a bit for, fields are looked up.
func TestHashSetMany(t *testing.T) {
	h := hashOf("f0", "old", "f100", "old", "f64", "old")
	var pairs, want []string
	for i := range 130 {
		pairs = append(pairs, "f"+strconv.Itoa(i), strconv.Itoa(i))
	}
	want = []string{"f0", "0", "f100", "100", "f64", "64"}
	for i := range 130 {
		if i != 0 && i != 100 && i != 64 {
			want = append(want, "f"+strconv.Itoa(i), strconv.Itoa(i))
		}
	}
	got, added := HashSet(nil, h, args(pairs...))
	require.Equal(t, 127, added)
	require.Equal(t, want, flat(got))
}

func TestHashGet(t *testing.T) {
	h := hashOf("a", "1", "10", "x", "-0", "y", "", "empty", "big", "9223372036854775807")
	for _, tc := range []struct {
		field, want string
		ok          bool
	}{
		{"a", "1", true}, {"10", "x", true}, {"-0", "y", true}, {"", "empty", true},
		{"big", "9223372036854775807", true}, {"0", "", false}, {"010", "", false}, {"b", "", false},
	} {
		t.Run(tc.field, func(t *testing.T) {
			v, ok := HashGet(h, []byte(tc.field))
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, string(v.Append(nil)))
		})
	}
	_, ok := HashGet(nil, []byte("a"))
	require.False(t, ok)
}

func TestHashDel(t *testing.T) {
	h := hashOf("a", "1", "b", "2", "c", "3")
	for _, tc := range []struct {
		name    string
		fields  []string
		want    []string
		removed int
	}{
		{"middle", []string{"b"}, []string{"a", "1", "c", "3"}, 1},
		{"named twice", []string{"a", "a"}, []string{"b", "2", "c", "3"}, 1},
		{"missing", []string{"x"}, []string{"a", "1", "b", "2", "c", "3"}, 0},
		{"all", []string{"c", "b", "a"}, nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, removed := HashDel(nil, h, args(tc.fields...))
			require.Equal(t, tc.removed, removed)
			require.Equal(t, tc.want, flat(got))
		})
	}
}

func TestHashOffsets(t *testing.T) {
	h := hashOf("a", "1", "20", "2", "c", string(make([]byte, 200)))
	offs := HashOffsets(nil, h)
	require.Len(t, offs, 3)
	var got []string
	for _, off := range offs {
		f, v := HashPairAt(h, off)
		got = append(got, string(f.Append(nil)), string(v.Append(nil)))
	}
	require.Equal(t, flat(h), got)
}

// TestHashAllocs: the hot path, HSET of two fields and HGET of each, into a reused buffer.
func TestHashAllocs(t *testing.T) {
	h := hashOf("tokens", "10", "last_refill", "1732512345123")
	pairs := args("tokens", "9", "last_refill", "1732512345999")
	scratch := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		scratch, _ = HashSet(scratch[:0], h, pairs)
		HashGet(scratch, pairs[0])
		HashGet(scratch, pairs[2])
		for range HashPairs(scratch) {
		}
	})
	require.Zero(t, allocs)
}

// FuzzHash applies random HSET and HDEL to a hash and to a model (a map and the order the
// fields came in) and requires the same pairs in the same order.
func FuzzHash(f *testing.F) {
	f.Add([]byte("set a 1; set b 2; del a"), uint64(1))
	f.Add([]byte{0, 1, 2, 3, 4, 5}, uint64(7))
	f.Add([]byte{0xe0, 0xef, 0xe1, 0xf3}, uint64(3))
	f.Fuzz(func(t *testing.T, ops []byte, seed uint64) {
		r := rand.New(rand.NewPCG(seed, uint64(len(ops))))
		names := []string{"a", "b", "1", "-1", "01", "", "1732512345123", string(make([]byte, 200))}
		for i := range 70 {
			names = append(names, "f"+strconv.Itoa(i))
		}
		var h []byte
		model := map[string]string{}
		var order []string
		for _, op := range ops {
			n := 1 + int(op>>4)%3
			if op&0xe0 == 0xe0 {
				n = 60 + int(op&0x0f) // past the 64 pairs HashSet keeps a bit for
			}
			var list []string
			for range n {
				list = append(list, names[r.IntN(len(names))])
			}
			if op&1 == 0 {
				var pairs []string
				added := 0
				for _, f := range list {
					v := names[r.IntN(len(names))]
					pairs = append(pairs, f, v)
					if _, ok := model[f]; !ok {
						order = append(order, f)
						added++
					}
					model[f] = v
				}
				var got int
				h, got = HashSet(nil, h, args(pairs...))
				require.Equal(t, added, got)
			} else {
				removed := 0
				for _, f := range list {
					if _, ok := model[f]; ok {
						delete(model, f)
						order = slices.DeleteFunc(order, func(s string) bool { return s == f })
						removed++
					}
				}
				var got int
				h, got = HashDel(nil, h, args(list...))
				require.Equal(t, removed, got)
			}
			var want []string
			for _, f := range order {
				want = append(want, f, model[f])
				v, ok := HashGet(h, []byte(f))
				require.True(t, ok)
				require.Equal(t, model[f], string(v.Append(nil)))
			}
			require.Equal(t, want, flat(h))
			require.Len(t, HashOffsets(nil, h), len(order))
		}
	})
}
