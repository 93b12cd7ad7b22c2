package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestIncrExSurvivesRestart: what INCREX writes is persisted as the SET ... KEEPTTL or PXAT
// it amounts to: the value, its expiry or none; a past EXAT's deletion too.
func TestIncrExSurvivesRestart(t *testing.T) {
	r := newRestartable(t)
	ts, rdb := r.start(t)
	require.Equal(t, []any{int64(8), int64(8)}, do(t, rdb, "INCREX", "win", "BYINT", 10, "UBOUND", 8, "SATURATE", "EX", 100))
	require.Equal(t, []any{int64(8), int64(0)}, do(t, rdb, "INCREX", "win", "UBOUND", 8))
	require.Equal(t, []any{"2.5", "2.5"}, do(t, rdb, "INCREX", "f", "BYFLOAT", 2.5, "PX", 5000))
	require.Equal(t, []any{"2.75", "0.25"}, do(t, rdb, "INCREX", "f", "BYFLOAT", 0.25, "PERSIST"))
	do(t, rdb, "SET", "gone", 1)
	require.Equal(t, []any{int64(2), int64(1)}, do(t, rdb, "INCREX", "gone", "EXAT", 1))
	require.NoError(t, ts.Close())

	r.clock.Advance(10 * time.Second)
	_, rdb = r.start(t)
	require.Equal(t, "8", do(t, rdb, "GET", "win"))
	require.Equal(t, int64(90), do(t, rdb, "TTL", "win"))
	require.Equal(t, "2.75", do(t, rdb, "GET", "f"))
	require.Equal(t, int64(-1), do(t, rdb, "TTL", "f"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "gone"))
}

// TestIncrExReplicates: a replica holds the value and the expiry INCREX left on the
// primary, and a past EXAT's deletion.
func TestIncrExReplicates(t *testing.T) {
	primary := startServer(t)
	p := primary.client(t, 2)
	replica := startReplica(t, primary)
	r := replica.client(t, 2)
	do(t, p, "SET", "gone", 1)
	do(t, p, "SET", "ttl", 5, "EX", 500)
	sameState(t, primary, replica)

	do(t, p, "INCREX", "win", "BYINT", 3, "EX", 60)
	do(t, p, "INCREX", "ttl", "BYINT", 1, "EX", 10, "ENX")
	do(t, p, "INCREX", "f", "BYFLOAT", 0.5, "LBOUND", 1, "SATURATE", "PXAT", primary.clock.Now().UnixMilli()+7000)
	do(t, p, "INCREX", "gone", "PXAT", 1)
	sameState(t, primary, replica)
	require.Equal(t, "3", do(t, r, "GET", "win"))
	require.Equal(t, int64(60), do(t, r, "TTL", "win"))
	require.Equal(t, "6", do(t, r, "GET", "ttl"))
	require.Equal(t, int64(500), do(t, r, "TTL", "ttl"))
	require.Equal(t, "1", do(t, r, "GET", "f"))
	require.Equal(t, int64(7000), do(t, r, "PTTL", "f"))
	require.Equal(t, int64(0), do(t, r, "EXISTS", "gone"))
	require.EqualError(t, r.Do(t.Context(), "INCREX", "win").Err(), "READONLY You can't write against a read only replica.")
}
