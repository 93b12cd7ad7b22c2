package server

import (
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// A small sorted set writes a member that is its score's decimal (and a suffix) as its score
// (collection's zscoreMember): such sets go to the log and to the replicas in that form, and
// come back from both the same sets, which grow past the listpack's limits as any other.

// fillLogs writes two sliding logs, of timestamps and of timestamped ids, and trims both.
func fillLogs(t *testing.T, rdb *redis.Client) {
	const base = 1732512345000
	for i := range 100 {
		ts := strconv.Itoa(base + 600*i)
		do(t, rdb, "ZADD", "log:ts", ts, ts)
		do(t, rdb, "ZADD", "log:ids", ts, ts+"-"+strconv.Itoa(i))
	}
	for _, k := range []string{"log:ts", "log:ids"} {
		do(t, rdb, "ZREMRANGEBYSCORE", k, "-inf", "("+strconv.Itoa(base+600*10))
		do(t, rdb, "ZINCRBY", k, "1", strconv.Itoa(base+600*20)) // no longer its score's decimal
	}
}

// logState returns the logs as ZRANGE WITHSCORES gives them, and what ZSCORE and ZRANK find.
func logState(t *testing.T, rdb *redis.Client) []any {
	var out []any
	for _, km := range [][2]string{{"log:ts", "1732512351000"}, {"log:ids", "1732512351000-10"}} {
		k, m := km[0], km[1]
		out = append(out, do(t, rdb, "ZRANGE", k, 0, -1, "WITHSCORES"), do(t, rdb, "ZCARD", k),
			do(t, rdb, "ZSCORE", k, m), do(t, rdb, "ZRANK", k, m), do(t, rdb, "OBJECT", "ENCODING", k))
	}
	return out
}

func TestSlidingLogsSurviveRestart(t *testing.T) {
	r := newRestartable(t)
	durable := func(c *Config) { c.AppendOnly, c.AppendFsync = true, "always" }
	ts, _ := r.start(t, durable)
	rdb := slowClient(t, ts)
	fillLogs(t, rdb)
	want := logState(t, rdb)
	require.Equal(t, int64(90), want[1])
	require.Equal(t, "listpack", want[4])
	require.NoError(t, ts.Close())

	ts, _ = r.start(t, durable)
	rdb = slowClient(t, ts)
	require.Equal(t, want, logState(t, rdb), "after a restart")
	// Past the listpack's limits from the sets as loaded.
	for i := range 60 {
		ts := strconv.Itoa(1732512445000 + i)
		do(t, rdb, "ZADD", "log:ts", ts, ts)
		do(t, rdb, "ZADD", "log:ids", ts, ts+"-"+strconv.Itoa(i))
	}
	want = logState(t, rdb)
	require.Equal(t, "skiplist", want[4])
	require.Equal(t, "1732512351000", want[2])
	require.NoError(t, ts.Close())
	ts, _ = r.start(t, durable)
	rdb = slowClient(t, ts)
	require.Equal(t, want, logState(t, rdb), "after the second restart")
}

func TestSlidingLogsReplicate(t *testing.T) {
	primary := startServer(t)
	prdb := slowClient(t, primary)
	fillLogs(t, prdb)
	replica := startReplica(t, primary) // a full copy
	rrdb := slowClient(t, replica)
	do(t, prdb, "ZADD", "log:ts", "1732512445000", "1732512445000")
	do(t, prdb, "ZADD", "log:ids", "1732512445000", "1732512445000-100") // the stream
	waitReplicas(t, prdb, 1)
	require.Equal(t, logState(t, prdb), logState(t, rrdb))
}
