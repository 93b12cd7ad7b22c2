package persistence

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorderOf returns a recorder holding a put for each key, in the order given.
func recorderOf(keys [][]byte) *recorder {
	r := &recorder{}
	for i, k := range keys {
		r.recs = append(r.recs, record{off: uint32(len(r.buf)), klen: uint32(len(k)), vlen: int32(i % 3)})
		r.buf = append(r.buf, k...)
		r.buf = append(r.buf, make([]byte, i%3)...)
	}
	return r
}

// sortedByCompare is the order sort must give: by key, and in drain order for one key.
func sortedByCompare(r *recorder) []record {
	want := slices.Clone(r.recs)
	slices.SortStableFunc(want, func(x, y record) int { return bytes.Compare(r.key(x), r.key(y)) })
	return want
}

func TestSortRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	randomKeys := func(n, maxLen int, alphabet string) [][]byte {
		keys := make([][]byte, n)
		for i := range keys {
			k := make([]byte, r.IntN(maxLen+1))
			for j := range k {
				k[j] = alphabet[r.IntN(len(alphabet))]
			}
			keys[i] = k
		}
		return keys
	}
	prefixes := func(n int) [][]byte { // "", "a", "aa", ...: each level splits one key off
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = bytes.Repeat([]byte("a"), n-1-i)
		}
		return keys
	}
	numbered := func(n int) [][]byte {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "rl:merchant:%09d", r.IntN(n))
		}
		return keys
	}
	for _, tc := range []struct {
		name string
		keys [][]byte
	}{
		{"none", nil},
		{"one", [][]byte{[]byte("x")}},
		{"short, two letters, many equal", randomKeys(5000, 3, "ab")},
		{"binary, long", randomKeys(3000, 40, "\x00\x01\xfe\xff")},
		{"every byte", randomKeys(20000, 12, string(func() []byte {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}()))},
		{"prefixes of one another", prefixes(300)},
		{"shared prefix, numbered, repeats", numbered(50000)},
		{"already sorted", func() [][]byte {
			k := numbered(2000)
			slices.SortFunc(k, bytes.Compare)
			return k
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := recorderOf(tc.keys)
			want := sortedByCompare(rec)
			rec.sort()
			require.True(t, slices.Equal(want, rec.recs), "not in key and drain order")
		})
	}
}

// BenchmarkSortRecords sorts a batch as the writer drains it under random load on 100,000
// keys: about 95,000 distinct keys with a shared prefix, in hash order.
func BenchmarkSortRecords(b *testing.B) {
	keys := make([][]byte, 95000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "pc:%09d", rand.IntN(100000))
	}
	rec := recorderOf(keys)
	orig := slices.Clone(rec.recs)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		copy(rec.recs, orig)
		rec.sort()
	}
}
