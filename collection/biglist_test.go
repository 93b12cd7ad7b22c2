package collection

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// check verifies l's counts against its nodes.
func (l *BigList) check(t testing.TB) {
	t.Helper()
	n, bytes := 0, 0
	for _, nd := range l.nodes[l.head:] {
		require.NotZero(t, nd.n, "an empty node")
		require.Equal(t, nd.n, Count(nd.pack))
		require.True(t, nd.n <= l.maxN && (len(nd.pack) <= maxListNode || nd.n == 1), "a node past its limits")
		n += nd.n
		bytes += len(nd.pack)
	}
	require.Equal(t, l.n, n)
	require.Equal(t, l.bytes, bytes)
}

// TestBigListModel runs random list operations on a BigList and on a slice of strings,
// and compares them after each.
func TestBigListModel(t *testing.T) {
	for _, maxN := range []int{1, 2, 3, 128} {
		t.Run(strconv.Itoa(maxN), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(maxN), 7))
			value := func() string {
				switch rng.IntN(4) {
				case 0:
					return strconv.Itoa(rng.IntN(5))
				case 1:
					return strings.Repeat("x", rng.IntN(3000))
				default:
					return "v" + strconv.Itoa(rng.IntN(5))
				}
			}
			var model []string
			l := NewBigList(nil, maxN)
			for step := range 3000 {
				switch op := rng.IntN(9); op {
				case 0, 1:
					v := value()
					head := rng.IntN(2) == 0
					l.Push([]byte(v), head)
					if head {
						model = append([]string{v}, model...)
					} else {
						model = append(model, v)
					}
				case 2:
					head := rng.IntN(2) == 0
					raw := l.End(head)
					if len(model) == 0 {
						require.Nil(t, raw)
						break
					}
					e, _ := Read(raw)
					if head {
						require.Equal(t, model[0], string(e.Append(nil)))
						model = model[1:]
					} else {
						require.Equal(t, model[len(model)-1], string(e.Append(nil)))
						model = model[:len(model)-1]
					}
					l.Pop(head)
				case 3:
					i := int64(rng.IntN(len(model)+4) - 2)
					v := value()
					ok := l.Set(i, []byte(v))
					j := i
					if j < 0 {
						j += int64(len(model))
					}
					require.Equal(t, j >= 0 && j < int64(len(model)), ok)
					if ok {
						model[j] = v
					}
				case 4:
					pivot, v, before := value(), value(), rng.IntN(2) == 0
					ok := l.Insert(before, []byte(pivot), []byte(v))
					at := slices.Index(model, pivot)
					require.Equal(t, at >= 0, ok)
					if ok {
						if !before {
							at++
						}
						model = slices.Insert(model, at, v)
					}
				case 5:
					v, count := value(), int64(rng.IntN(5)-2)
					got := l.Remove(count, []byte(v))
					pack := l.AppendEncoded(nil)
					want, removed := ListRemove(nil, ListPush(nil, nil, false, bytesOf(model)), count, []byte(v))
					require.Equal(t, removed, got)
					require.Equal(t, elemsOf(t, want), elemsOf(t, pack))
					model = elemsOf(t, want)
				case 6:
					if len(model) > 0 && rng.IntN(10) == 0 {
						from, to, ok := IndexRange(int64(len(model)), int64(rng.IntN(3)), int64(-1-rng.IntN(3)))
						if ok {
							l.Trim(from, to)
							model = model[from : to+1]
						}
					}
				case 7:
					from, to, ok := IndexRange(int64(len(model)), int64(rng.IntN(len(model)+1)), int64(rng.IntN(len(model)+1)))
					if ok {
						var got []string
						l.Range(from, to, func(e Elem) bool { got = append(got, string(e.Append(nil))); return true })
						require.Equal(t, model[from:to+1], got)
					}
				case 8:
					i := int64(rng.IntN(len(model)+2) - 1)
					e, ok := l.Index(i)
					j := i
					if j < 0 {
						j += int64(len(model))
					}
					require.Equal(t, j >= 0 && j < int64(len(model)), ok)
					if ok {
						require.Equal(t, model[j], string(e.Append(nil)))
					}
				}
				l.check(t)
				require.Equal(t, len(model), l.Len(), "step %d", step)
				if step%50 == 0 {
					require.Equal(t, append([]string{}, model...), elemsOf(t, l.AppendEncoded(nil)))
					require.Equal(t, l.AppendEncoded(nil), NewBigList(l.AppendEncoded(nil), maxN).AppendEncoded(nil))
				}
			}
		})
	}
}

// BenchmarkBigListPushPop is RPUSH of one element onto a list of 1M and LPOP of one.
func BenchmarkBigListPushPop(b *testing.B) {
	var pack []byte
	for i := range 1_000_000 {
		pack = AppendString(pack, strconv.AppendInt([]byte("e"), int64(i), 10))
	}
	l := NewBigList(pack, chunkMax())
	e := []byte("element")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.Push(e, false)
		l.End(true)
		l.Pop(true)
	}
}
