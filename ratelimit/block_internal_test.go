package ratelimit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/algorithms"
	"github.com/throttledhq/throttled/keyspace"
)

// TestBlockLayout: a block's header round-trips, with or without the algorithm's state, and a
// value with the mark but no whole header is corrupt, never taken for a fresh key.
func TestBlockLayout(t *testing.T) {
	const until = int64(1_700_000_900_000_000_000)
	for _, tc := range []struct {
		name   string
		inner  []byte
		exists bool
	}{{"fixed-size state", nil, true}, {"log", []byte{0, 5, 3}, true}, {"idle", nil, false}} {
		t.Run(tc.name, func(t *testing.T) {
			v := keyspace.Value{Kind: keyspace.SlidingLog, Num: 7, Expire: 9, Bytes: append(appendBlock(nil, until, tc.exists), tc.inner...)}
			require.True(t, hasBlock(&v))
			got, inner, exists, err := blockOf(&v)
			require.NoError(t, err)
			require.Equal(t, until, got)
			require.Equal(t, tc.exists, exists)
			if tc.exists {
				require.Equal(t, keyspace.Value{Kind: keyspace.SlidingLog, Num: 7, Expire: 9, Bytes: tc.inner}, inner)
			}
		})
	}
	_, _, _, err := blockOf(&keyspace.Value{Kind: keyspace.GCRA, Bytes: []byte{blockMark, 1, 2}})
	require.ErrorIs(t, err, algorithms.ErrCorrupt)
	require.False(t, hasBlock(&keyspace.Value{Kind: keyspace.GCRA}))
}

// TestBlockMarkBeginsNoState: the mark cannot begin an algorithm's own Bytes. The variable-size
// states (the sliding log, the concurrency holders) begin with their first entry's delta from
// the base, which is 0, so their first byte is 0 or 1; the others have no bytes.
func TestBlockMarkBeginsNoState(t *testing.T) {
	now := int64(1_700_000_000_123_456_789)
	sl := algorithms.SlidingLog{Limit: 1000, Window: 60e9}
	cc := algorithms.Concurrency{Limit: 1000, Lease: 60e9}
	var st, cst algorithms.State
	exists, cexists := false, false
	for i := range 2000 {
		now += int64(i%7) * 1_234_567
		_, next, store, err := sl.Take(now, st, exists, int64(1+i%3), nil)
		require.NoError(t, err)
		if store {
			st, exists = next, true
			require.False(t, hasBlock(&keyspace.Value{Bytes: st.Bytes}), "log %x", st.Bytes)
		}
		cc.ID = []byte{byte(i % 251), byte(i / 251)}
		_, next, store, err = cc.Take(now, cst, cexists, 1, nil)
		require.NoError(t, err)
		if store {
			cst, cexists = next, true
			require.False(t, hasBlock(&keyspace.Value{Bytes: cst.Bytes}), "holders %x", cst.Bytes)
		}
	}
}
