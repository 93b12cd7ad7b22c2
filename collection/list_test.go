package collection

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// listOf returns the pack of a list of elems.
func listOf(elems ...string) []byte {
	return ListPush(nil, nil, false, bytesOf(elems))
}

func bytesOf(elems []string) [][]byte {
	out := make([][]byte, len(elems))
	for i, e := range elems {
		out[i] = []byte(e)
	}
	return out
}

// elemsOf reads a list's pack back, failing on a damaged one.
func elemsOf(t testing.TB, pack []byte) []string {
	out := []string{}
	for len(pack) > 0 {
		e, n := Read(pack)
		require.NotZero(t, n, "a damaged pack")
		out = append(out, string(e.Append(nil)))
		pack = pack[n:]
	}
	return out
}

func TestListPush(t *testing.T) {
	for _, tc := range []struct {
		name  string
		list  []string
		head  bool
		elems []string
		want  []string
	}{
		{"tail of empty", nil, false, []string{"a", "b"}, []string{"a", "b"}},
		{"head of empty: the last ends first", nil, true, []string{"a", "b", "c"}, []string{"c", "b", "a"}},
		{"tail", []string{"x"}, false, []string{"1", "01"}, []string{"x", "1", "01"}},
		{"head", []string{"x"}, true, []string{"-0", ""}, []string{"", "-0", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ListPush([]byte("junk")[:0], listOf(tc.list...), tc.head, bytesOf(tc.elems))
			require.Equal(t, tc.want, elemsOf(t, got))
		})
	}
	raw := listOf("r", "s")
	require.Equal(t, []string{"r", "s", "a"}, elemsOf(t, ListPushRaw(nil, listOf("a"), true, raw)))
	require.Equal(t, []string{"a", "r", "s"}, elemsOf(t, ListPushRaw(nil, listOf("a"), false, raw)))
}

func TestIndexRange(t *testing.T) {
	for _, tc := range []struct {
		n, start, stop int64
		from, to       int64
		ok             bool
	}{
		{5, 0, -1, 0, 4, true},
		{5, -100, 100, 0, 4, true},
		{5, 2, 1, 0, 0, false},
		{5, 5, 10, 0, 0, false},
		{5, -2, -1, 3, 4, true},
		{5, -1, -2, 0, 0, false},
		{5, 4, 4, 4, 4, true},
		{5, -6, -6, 0, 0, false},
		{5, 1, -9, 0, 0, false},
		{0, 0, -1, 0, 0, false},
		{5, math.MaxInt64, math.MinInt64, 0, 0, false},
		{5, math.MinInt64, math.MaxInt64, 0, 4, true},
	} {
		t.Run(strconv.FormatInt(tc.start, 10)+".."+strconv.FormatInt(tc.stop, 10), func(t *testing.T) {
			from, to, ok := IndexRange(tc.n, tc.start, tc.stop)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, [2]int64{tc.from, tc.to}, [2]int64{from, to})
		})
	}
}

func TestListIndexAndOffsets(t *testing.T) {
	list := []string{"a", "1732512345123", "", "-5", "long " + string(make([]byte, 300))}
	pack := listOf(list...)
	n := int64(len(list))
	for i := range n {
		e, ok := ListIndex(pack, n, i)
		require.True(t, ok)
		require.Equal(t, list[i], string(e.Append(nil)))
		e, ok = ListIndex(pack, n, i-n)
		require.True(t, ok)
		require.Equal(t, list[i], string(e.Append(nil)))
	}
	for _, i := range []int64{n, -n - 1, math.MaxInt64, math.MinInt64} {
		_, ok := ListIndex(pack, n, i)
		require.False(t, ok, i)
	}
	require.Equal(t, 0, ListOffset(pack, 0))
	require.Equal(t, len(pack), ListOffset(pack, n))
	require.Equal(t, len(pack), ListOffset(pack, n+10))
	offs := ListOffsets(pack, nil)
	require.Len(t, offs, len(list))
	for i, off := range offs {
		require.Equal(t, ListOffset(pack, int64(i)), off)
	}
}

func TestListSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		i    int64
		want []string
		ok   bool
	}{
		{"first", 0, []string{"z", "b", "c"}, true},
		{"last by a negative index", -1, []string{"a", "b", "z"}, true},
		{"middle", 1, []string{"a", "z", "c"}, true},
		{"past the tail", 3, nil, false},
		{"before the head", -4, nil, false},
		{"-2^63", math.MinInt64, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ListSet(nil, listOf("a", "b", "c"), 3, tc.i, []byte("z"))
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.want, elemsOf(t, got))
			}
		})
	}
}

func TestListInsert(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before bool
		pivot  string
		want   []string
		found  bool
	}{
		{"before the first match", true, "b", []string{"a", "z", "b", "c", "b"}, true},
		{"after the first match", false, "b", []string{"a", "b", "z", "c", "b"}, true},
		{"after the tail", false, "b ", nil, false},
		{"an integer pivot", true, "7", []string{"a", "b", "c", "b"}, false},
		{"at the head", true, "a", []string{"z", "a", "b", "c", "b"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found := ListInsert(nil, listOf("a", "b", "c", "b"), tc.before, []byte(tc.pivot), []byte("z"))
			require.Equal(t, tc.found, found)
			if found {
				require.Equal(t, tc.want, elemsOf(t, got))
			} else {
				require.Empty(t, got)
			}
		})
	}
	got, found := ListInsert(nil, listOf("01", "1", "x"), false, []byte("1"), []byte("2"))
	require.True(t, found)
	require.Equal(t, []string{"01", "1", "2", "x"}, elemsOf(t, got), "the integer 1 is not the string 01")
}

func TestListRemove(t *testing.T) {
	list := []string{"a", "b", "a", "c", "a", "1"}
	for _, tc := range []struct {
		count   int64
		elem    string
		want    []string
		removed int64
	}{
		{0, "a", []string{"b", "c", "1"}, 3},
		{2, "a", []string{"b", "c", "a", "1"}, 2},
		{-2, "a", []string{"a", "b", "c", "1"}, 2},
		{-1, "a", []string{"a", "b", "a", "c", "1"}, 1},
		{-3, "a", []string{"b", "c", "1"}, 3},
		{-10, "a", []string{"b", "c", "1"}, 3},
		{math.MinInt64, "a", []string{"b", "c", "1"}, 3},
		{math.MaxInt64, "a", []string{"b", "c", "1"}, 3},
		{0, "z", list, 0},
		{-1, "z", list, 0},
		{0, "1", []string{"a", "b", "a", "c", "a"}, 1},
		{0, "01", list, 0},
	} {
		t.Run(strconv.FormatInt(tc.count, 10)+" "+tc.elem, func(t *testing.T) {
			got, removed := ListRemove(nil, listOf(list...), tc.count, []byte(tc.elem))
			require.Equal(t, tc.removed, removed)
			require.Equal(t, tc.want, elemsOf(t, got))
		})
	}
}

func TestListPos(t *testing.T) {
	// indices:              0    1    2    3    4    5    6
	pack := listOf("a", "b", "a", "c", "a", "b", "a")
	for _, tc := range []struct {
		name                string
		elem                string
		rank, count, maxlen int64
		want                []int64
	}{
		{"first", "a", 1, 1, 0, []int64{0}},
		{"all", "a", 1, 0, 0, []int64{0, 2, 4, 6}},
		{"from the second", "a", 2, 0, 0, []int64{2, 4, 6}},
		{"two from the second", "a", 2, 2, 0, []int64{2, 4}},
		{"the last", "a", -1, 1, 0, []int64{6}},
		{"all from the tail", "a", -1, 0, 0, []int64{6, 4, 2, 0}},
		{"two from the second last", "a", -2, 2, 0, []int64{4, 2}},
		{"rank past the matches", "a", 5, 0, 0, nil},
		{"rank past the matches from the tail", "a", -5, 0, 0, nil},
		{"huge ranks", "a", math.MaxInt64, 0, 0, nil},
		{"huge ranks from the tail", "a", -math.MaxInt64, 0, 0, nil},
		{"huge count", "a", 3, math.MaxInt64, 0, []int64{4, 6}},
		{"maxlen from the head", "a", 1, 0, 3, []int64{0, 2}},
		{"maxlen from the tail", "a", -1, 0, 3, []int64{6, 4}},
		{"maxlen past the list", "a", -1, 0, 100, []int64{6, 4, 2, 0}},
		{"none", "z", 1, 0, 0, nil},
		{"none from the tail", "z", -1, 0, 0, nil},
		{"maxlen 1 from the tail", "b", -1, 0, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ListPos(pack, 7, []byte(tc.elem), tc.rank, tc.count, tc.maxlen, nil)
			require.Equal(t, tc.want, got)
		})
	}
	require.Equal(t, []int64{99, 6, 4}, ListPos(pack, 7, []byte("a"), -1, 2, 0, []int64{99}), "appends to dst, reversing only its own")
}

// FuzzList runs random operations on a list against a slice.
func FuzzList(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{0, 0, 0, 1, 1, 1, 9, 3, 200, 7, 250, 8, 2, 6, 255, 5, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		values := []string{"a", "b", "1", "01", "-7", "", "1732512345123", string(make([]byte, 200))}
		var pack []byte
		var model []string
		next := func() byte {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return b
		}
		index := func() int64 { return int64(int8(next())) % 12 }
		for len(ops) > 0 {
			op, arg := next(), next()
			v := values[int(arg)%len(values)]
			n := int64(len(model))
			switch op % 9 {
			case 0: // RPUSH, LPUSH
				head := arg&0x80 != 0
				pack = ListPush(nil, pack, head, [][]byte{[]byte(v), []byte(values[int(arg>>3)%len(values)])})
				if head {
					model = append([]string{values[int(arg>>3)%len(values)], v}, model...)
				} else {
					model = append(model, v, values[int(arg>>3)%len(values)])
				}
			case 1: // LPOP, RPOP count
				k := min(int64(arg%4), n)
				if arg&0x80 != 0 {
					pack = pack[:ListOffset(pack, n-k)]
					model = model[:n-k]
				} else {
					pack = pack[ListOffset(pack, k):]
					model = model[k:]
				}
			case 2: // LINDEX
				i := index()
				e, ok := ListIndex(pack, n, i)
				if i < 0 {
					i += n
				}
				require.Equal(t, i >= 0 && i < n, ok)
				if ok {
					require.Equal(t, model[i], string(e.Append(nil)))
				}
			case 3: // LSET
				i := index()
				var ok bool
				pack2, ok := ListSet(nil, pack, n, i, []byte(v))
				if i < 0 {
					i += n
				}
				require.Equal(t, i >= 0 && i < n, ok)
				if ok {
					pack, model[i] = pack2, v
				}
			case 4: // LTRIM
				start, stop := index(), index()
				from, to, ok := IndexRange(n, start, stop)
				if !ok {
					pack, model = nil, nil
					break
				}
				off := ListOffset(pack, from)
				pack = pack[off : off+ListOffset(pack[off:], to-from+1)]
				model = model[from : to+1]
			case 5: // LREM
				count := int64(int8(next())) % 4
				var removed int64
				pack, removed = ListRemove(nil, pack, count, []byte(v))
				var want int64
				keep := slices.Clone(model)
				switch {
				case count >= 0:
					for i := 0; i < len(keep); i++ {
						if keep[i] == v && (count == 0 || want < count) {
							keep = slices.Delete(keep, i, i+1)
							want++
							i--
						}
					}
				default:
					for i := len(keep) - 1; i >= 0; i-- {
						if keep[i] == v && want < -count {
							keep = slices.Delete(keep, i, i+1)
							want++
						}
					}
				}
				require.Equal(t, want, removed)
				model = keep
			case 6: // LINSERT
				pivot := values[int(arg>>3)%len(values)]
				var found bool
				pack2, found := ListInsert(nil, pack, arg&0x80 != 0, []byte(pivot), []byte(v))
				at := slices.Index(model, pivot)
				require.Equal(t, at >= 0, found)
				if found {
					if arg&0x80 == 0 {
						at++
					}
					pack, model = pack2, slices.Insert(model, at, v)
				}
			case 7: // LPOS
				rank := int64(int8(next())) % 4
				if rank == 0 {
					rank = 1
				}
				count, maxlen := int64(next()%4), int64(next()%6)
				got := ListPos(pack, n, []byte(v), rank, count, maxlen, nil)
				require.Equal(t, modelPos(model, v, rank, count, maxlen), got)
			case 8: // LRANGE
				from, to, ok := IndexRange(n, index(), index())
				if ok {
					off := ListOffset(pack, from)
					require.Equal(t, model[from:to+1], elemsOf(t, pack[off:off+ListOffset(pack[off:], to-from+1)]))
				}
			}
			require.Equal(t, append([]string{}, model...), elemsOf(t, pack))
		}
	})
}

// modelPos is LPOS on a slice, walking from whichever end the rank says.
func modelPos(model []string, v string, rank, count, maxlen int64) []int64 {
	var out []int64
	n := int64(len(model))
	step, i := int64(1), int64(0)
	if rank < 0 {
		step, i, rank = -1, n-1, -rank
	}
	var seen, looked int64
	for ; i >= 0 && i < n && (maxlen == 0 || looked < maxlen); i += step {
		looked++
		if model[i] == v {
			seen++
			if seen >= rank {
				out = append(out, i)
				if count > 0 && int64(len(out)) == count {
					break
				}
			}
		}
	}
	return out
}
