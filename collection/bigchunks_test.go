package collection

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBigChangesMirror drives a big sorted set and a big hash with random writes, small
// chunks so that they split, merge and renumber, and keeps a copy of each per feed by
// its changes alone (AppendChanges, ApplyChanges; the whole, read back by NewBigChunks,
// when a feed is told to take it): after every few writes each copy holds the same pack,
// chunk for chunk, and a feed drained rarely ends the same as one drained at every write.
func TestBigChangesMirror(t *testing.T) {
	for _, sorted := range []bool{true, false} {
		for _, group := range []int{2, 32} {
			t.Run(fmt.Sprintf("sorted=%v/group=%d", sorted, group), func(t *testing.T) {
				ixGroup = group
				defer func() { ixGroup = 32 }()
				rng := rand.New(rand.NewPCG(3, uint64(group)))
				b := NewBig(nil, sorted)
				b.Feeds(1<<Feeds-1, 0b1010) // feeds 1 and 3 take ops, 0 and 2 chunks
				copies := make([]*Big, Feeds)
				every := []int{1, 7, 50, 1 << 30} // the last feed is never drained until the end
				sync := func(f int) {
					changes, whole := b.AppendChanges(nil, f)
					if whole {
						c, err := NewBigChunks(b.AppendChunks(nil), sorted, false)
						require.NoError(t, err)
						copies[f] = c
						return
					}
					require.NotNil(t, copies[f], "feed %d: changes before the whole", f)
					require.NoError(t, copies[f].ApplyChanges(changes))
				}
				member := func() []byte { return []byte("m" + strconv.Itoa(rng.IntN(3000))) }
				for i := 1; i <= 20000; i++ {
					switch op := rng.IntN(10); {
					case op < 6:
						if sorted {
							b.ZAdd(member(), float64(rng.IntN(1e6)), ZAddFlags{})
						} else {
							b.HashSet(member(), []byte(strconv.Itoa(rng.IntN(1e6))))
						}
					case op < 9:
						if sorted {
							b.ZRemove(member())
						} else {
							b.HashDel(member())
						}
					default:
						if sorted {
							lo := float64(rng.IntN(1e6))
							b.ZDeleteScores(ScoreRange{Min: lo, Max: lo + 2000})
						} else if b.Len() > 0 {
							b.DeleteRanks(rng.IntN(b.Len()), rng.IntN(20))
						}
					}
					for f, n := range every {
						if i%n == 0 {
							sync(f)
						}
					}
					if i%97 == 0 {
						for f, n := range every[:3] {
							if copies[f] != nil && i%n == 0 {
								require.Equal(t, b.AppendEncoded(nil), copies[f].AppendEncoded(nil), "feed %d after %d writes", f, i)
								if f%2 == 0 { // a copy by chunks has b's chunks
									require.Equal(t, b.AppendChunks(nil), copies[f].AppendChunks(nil), "feed %d's chunks", f)
								}
							}
						}
					}
				}
				for f := range every {
					sync(f)
					copies[f].check(t)
					require.Equal(t, b.Len(), copies[f].Len())
					require.Equal(t, b.AppendEncoded(nil), copies[f].AppendEncoded(nil), "feed %d", f)
				}
				b.check(t)
			})
		}
	}
}

// TestBigChangesBounded: a feed that never takes its changes costs a bounded list, then
// takes the whole.
func TestBigChangesBounded(t *testing.T) {
	pack := []byte{}
	for i := range 10000 {
		pack = AppendString(AppendString(pack, []byte("f"+strconv.Itoa(i))), []byte("v"))
	}
	b := NewBig(pack, false)
	b.Feeds(0b111, 0b100)
	_, whole := b.AppendChanges(nil, 0)
	require.True(t, whole, "a new Big goes whole first")
	b.HashSet([]byte("f1"), []byte("w"))
	changes, whole := b.AppendChanges(nil, 0)
	require.False(t, whole)
	require.Less(t, len(changes), maxChunk+64, "one write: one chunk")
	for i := range 100000 {
		b.HashSet([]byte("f"+strconv.Itoa(i%10000)), []byte(strconv.Itoa(i)))
	}
	require.LessOrEqual(t, len(b.feeds[1].seqs), 17+len(b.refs))
	_, _ = b.AppendChanges(nil, 1) // every chunk, or the whole
	require.LessOrEqual(t, len(b.feeds[2].ops), 4096+b.bytes/4+64)
	_, whole = b.AppendChanges(nil, 2)
	require.True(t, whole)
	_, whole = b.AppendChanges(nil, 3)
	require.True(t, whole, "a feed not tracked takes the whole")
	require.Zero(t, len(b.feeds[3].ops)+len(b.feeds[3].seqs), "and costs nothing meanwhile")
}

// TestBigChangesOps: a feed that is a log takes the members' changes, however many chunks
// they touch: a ZADD of 1,000 members into a set of 100,000 costs about its own size.
func TestBigChangesOps(t *testing.T) {
	b := NewBig(nil, true)
	for i := range 100000 {
		b.ZAdd([]byte("m"+strconv.Itoa(i)), float64(i), ZAddFlags{})
	}
	b.Feeds(0b11, 0b10)
	_, whole := b.AppendChanges(nil, 1)
	require.True(t, whole)
	_, whole = b.AppendChanges(nil, 0)
	require.True(t, whole)
	c, err := NewBigChunks(b.AppendChunks(nil), true, false)
	require.NoError(t, err)
	c0, err := NewBigChunks(b.AppendChunks(nil), true, false)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 1000 {
		b.ZAdd([]byte("n"+strconv.Itoa(i)), float64(rng.IntN(100000)), ZAddFlags{})
	}
	changes, whole := b.AppendChanges(nil, 1)
	require.False(t, whole)
	require.Less(t, len(changes), 1000*20)
	require.NoError(t, c.ApplyChanges(changes))
	require.Equal(t, b.AppendEncoded(nil), c.AppendEncoded(nil))
	changes, whole = b.AppendChanges(nil, 0)
	require.False(t, whole, "the feed of chunks takes the chunks changed")
	require.NoError(t, c0.ApplyChanges(changes))
	require.Equal(t, b.AppendChunks(nil), c0.AppendChunks(nil))
}

// TestNewBigChunksRejects: bytes that are not a chunk form are an error, never a panic.
func TestNewBigChunksRejects(t *testing.T) {
	for name, form := range map[string][]byte{
		"short":       {1, 2, 3},
		"long length": append(make([]byte, 8), 0x7f),
		"empty chunk": append(make([]byte, 8), 0),
		"bad pack":    append(append(make([]byte, 8), 4), AppendString(nil, []byte("abcdef"))[:4]...),
		"one element": append(append(make([]byte, 8), 7), AppendString(nil, []byte("abcdef"))...),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewBigChunks(form, true, false)
			require.ErrorIs(t, err, ErrChunks)
			b := NewBig(nil, true)
			if name != "empty chunk" {
				require.ErrorIs(t, b.ApplyChanges(append([]byte{formChunks}, form...)), ErrChunks)
			}
			require.ErrorIs(t, b.ApplyChanges(append([]byte{formOps}, form...)), ErrChunks)
		})
	}
}
