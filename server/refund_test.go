package server

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// REFUND's and TIERS' tests of the verbs themselves are ratelimit's (ratelimit/refund_test.go,
// black-box through internal/testserver). These stay: they test what the server adds around a
// refund, its persistence across a restart on the same directory, its replication
// (startReplica, sameState) and its count in INFO throttle that CONFIG RESETSTAT clears.

// infoInt reads one integer field of INFO throttle.
func infoInt(t *testing.T, rdb *redis.Client, field string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + field + `:(\d+)\r$`).FindStringSubmatch(do(t, rdb, "INFO", "throttle").(string))
	require.NotNil(t, m, field)
	n, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return n
}

func TestRefundReadOnlyAndPersisted(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, func(c *Config) { c.Dir = dir; c.AppendFsync = "always" })
	rdb := ts.client(t, 2)
	do(t, rdb, "TOKENBUCKET", "p", 10, 1, "1h", "COST", 10)
	require.Equal(t, int64(6), do(t, rdb, "TOKENBUCKET", "p", 10, 1, "1h", "REFUND", 6).([]any)[2])
	ts.Close()
	ts2 := startServer(t, func(c *Config) { c.Dir = dir })
	require.Equal(t, int64(6), do(t, ts2.client(t, 2), "TOKENBUCKET", "p", 10, 1, "1h", "COST", 0).([]any)[2], "the refund survives a restart")
}

// TestRefundReplicates: a refund reaches the replica as the state it leaves (a key made
// idle is deleted there too), and a replica refuses a refund as any write.
func TestRefundReplicates(t *testing.T) {
	primary := startServer(t)
	p := primary.client(t, 2)
	do(t, p, "SLIDE", "rs", 10, "1m", "COST", 6)
	do(t, p, "THROTTLE", "rg", 9, 10, "1m", "COST", 3)
	replica := startReplica(t, primary)
	r := replica.client(t, 2)
	sameState(t, primary, replica)
	do(t, p, "SLIDE", "rs", 10, "1m", "REFUND", 2)
	do(t, p, "THROTTLE", "rg", 9, 10, "1m", "REFUND", 3)
	sameState(t, primary, replica)
	require.Equal(t, int64(6), do(t, r, "SLIDE", "rs", 10, "1m", "COST", 0).([]any)[2])
	require.Equal(t, int64(0), do(t, r, "EXISTS", "rg"))
	require.Contains(t, doErr(t, r, "SLIDE", "rs", 10, "1m", "REFUND", 1), "READONLY")
	require.Equal(t, int64(7), do(t, r, "SLIDE", "rs", 10, "1m", "REFUND", 1, "PEEK").([]any)[2], "PEEK is served by a replica")
}

func TestRefundCountsAndResets(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	do(t, rdb, "WINDOW", "c", 10, "1m", "COST", 4)
	do(t, rdb, "WINDOW", "c", 10, "1m", "REFUND", 9) // 4 come back
	require.Equal(t, int64(4), infoInt(t, rdb, "throttle_refunded"))
	do(t, rdb, "CONFIG", "RESETSTAT")
	require.Equal(t, int64(0), infoInt(t, rdb, "throttle_refunded"))
	// A burst too large for int64 is THROTTLE's error, whatever the tier.
	require.Contains(t, doErr(t, rdb, "THROTTLE", "g", "9223372036854775807", 1000, "1s", "TIERS", "a=0.5", "PRIORITY", "a"), "max_burst is too large")
}
