package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/keyspace"
)

func TestActiveExpiryKeepsUpWithManyIdleKeys(t *testing.T) {
	// 50,000 keys in 4 shards expire at once and nobody touches them. At 20 record ids per
	// shard per cycle, expiry used to free 800 keys a second: a minute for these. Cycles
	// that go on while the shards are mostly expired free them in a few (well under a second
	// here; the 40 s allowed are for a machine at a load of 19, where 10 s did not do).
	const n = 50_000
	ts := startServerWith(t, func(s *Server) {
		exp := s.nowNano() + int64(time.Second)
		for i := range n {
			key := fmt.Appendf(nil, "idle:%d", i)
			sh := s.ks.Shard(key)
			sh.Lock()
			sh.SetLocked(key, keyspace.Value{Kind: keyspace.GCRA, Num: exp, Expire: exp})
			sh.Unlock()
		}
	}, func(c *Config) { c.Shards = 4 })
	rdb := ts.client(t, 2)
	do(t, rdb, "SET", "forever", "1")
	require.Equal(t, int64(n+1), do(t, rdb, "DBSIZE"))
	ts.clock.Advance(2 * time.Second)
	require.Eventually(t, func() bool { return do(t, rdb, "DBSIZE") == int64(1) }, 40*time.Second, 10*time.Millisecond)
	require.Contains(t, do(t, rdb, "INFO", "stats").(string), fmt.Sprintf("expired_keys:%d\r\n", n))
}
