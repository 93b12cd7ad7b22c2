package datatype_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/internal/testserver"
)

// blockedClients reads INFO's blocked_clients.
func blockedClients(t *testing.T, rdb *redis.Client) string {
	info := rdb.Info(context.Background(), "clients").Val()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
			return v
		}
	}
	t.Fatalf("no blocked_clients in %q", info)
	return ""
}

// waitBlocked waits until n clients are blocked: a client's command is on its way when
// Do returns, so the tests look for it to be parked before they write.
func waitBlocked(t *testing.T, rdb *redis.Client, n string) {
	require.Eventually(t, func() bool { return blockedClients(t, rdb) == n }, 10*time.Second, time.Millisecond,
		"blocked_clients never reached %s", n)
}

// async runs f on a goroutine and returns what it returns, once it has.
func async[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

func TestBlockingPopWakesOnPush(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	rdb := ts.Client(t, 2)
	for _, proto := range []int{2, 3} {
		waiter := ts.Client(t, proto)
		got := async(func() []string { return waiter.BLPop(ctx, 10*time.Second, "none", "q").Val() })
		waitBlocked(t, rdb, "1")
		require.Equal(t, int64(2), rdb.RPush(ctx, "q", "a", "b").Val())
		// Served before the push's reply: the popped element is gone already.
		require.Equal(t, []string{"b"}, rdb.LRange(ctx, "q", 0, -1).Val())
		require.Equal(t, []string{"q", "a"}, <-got)
		require.Equal(t, "0", blockedClients(t, rdb))
		rdb.Del(ctx, "q")
	}
}

// TestBlockingFairness: first blocked, first served, each waiter its own element.
func TestBlockingFairness(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	rdb := ts.Client(t, 2)
	var gots []<-chan []string
	for i := range 3 {
		// No retry: a waiter that lost its connection and blocked again would be queued last.
		c := redis.NewClient(&redis.Options{Addr: ts.Addr, Protocol: 2, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		gots = append(gots, async(func() []string {
			got, err := c.BRPop(ctx, 10*time.Second, "q").Result()
			if err != nil {
				return []string{err.Error()}
			}
			return got
		}))
		waitBlocked(t, rdb, string(rune('1'+i)))
	}
	rdb.LPush(ctx, "q", "a", "b", "c") // q is c b a: BRPOP takes a, then b, then c
	// Each waiter's reply, compared at once: a failure shows the whole order.
	var all [][]string
	for _, got := range gots {
		all = append(all, <-got)
	}
	require.Equal(t, [][]string{{"q", "a"}, {"q", "b"}, {"q", "c"}}, all, "in the order they blocked")
	require.Equal(t, int64(0), rdb.Exists(ctx, "q").Val())
}

// TestBlockingAfterExecAndScripts: a waiter sees a transaction's or a script's writes
// once they are all done; a blocking command inside either answers as on its timeout.
func TestBlockingAfterExecAndScripts(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	rdb := ts.Client(t, 2)
	waiter := ts.Client(t, 2)

	got := async(func() []string { return waiter.BLPop(ctx, 10*time.Second, "q").Val() })
	waitBlocked(t, rdb, "1")
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, "q", "a")
		p.LPush(ctx, "q", "b")
		p.LPush(ctx, "q", "c")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"q", "c"}, <-got)

	got = async(func() []string { return waiter.BLPop(ctx, 10*time.Second, "s").Val() })
	waitBlocked(t, rdb, "1")
	require.Equal(t, int64(3), rdb.Eval(ctx, "redis.call('rpush', KEYS[1], 'x', 'y'); return redis.call('rpush', KEYS[1], 'z')", []string{"s"}).Val())
	require.Equal(t, []string{"s", "x"}, <-got)

	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.BLPop(ctx, 0, "empty")
		p.BZPopMin(ctx, 0, "empty")
		return nil
	})
	require.ErrorIs(t, err, redis.Nil)
	require.Len(t, cmds, 2)
	require.ErrorIs(t, rdb.Eval(ctx, "return redis.call('blmpop', 0, 1, KEYS[1], 'left')", []string{"empty"}).Err(), redis.Nil)
	require.ErrorContains(t, rdb.Eval(ctx, "return redis.call('blpop', KEYS[1], 0)", []string{"empty"}).Err(), "not allowed from script")
}

func TestBlockingTimeouts(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	rdb := ts.Client(t, 2)
	_, err := rdb.Do(ctx, "BLPOP", "q", "0.05").Result()
	require.ErrorIs(t, err, redis.Nil)
	for _, tc := range []struct{ timeout, err string }{
		{"-1", "ERR timeout is negative"},
		{"abc", "ERR timeout is not a float or out of range"},
		{"nan", "ERR timeout is not a float or out of range"},
		{"inf", "ERR timeout is negative"},
	} {
		require.EqualError(t, rdb.Do(ctx, "BRPOP", "q", tc.timeout).Err(), tc.err, tc.timeout)
	}
	require.Equal(t, "0", blockedClients(t, rdb))
}

func TestClientUnblock(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	rdb := ts.Client(t, 2)
	waiter := ts.Client(t, 2)
	id := waiter.ClientID(ctx).Val()
	for _, tc := range []struct{ how, err string }{{"TIMEOUT", "redis: nil"}, {"ERROR", "UNBLOCKED client unblocked via CLIENT UNBLOCK"}} {
		got := async(func() error { return waiter.BZPopMax(ctx, 0, "z").Err() })
		waitBlocked(t, rdb, "1")
		require.Equal(t, int64(1), rdb.Do(ctx, "CLIENT", "UNBLOCK", id, tc.how).Val())
		require.EqualError(t, <-got, tc.err)
		require.Equal(t, int64(0), rdb.Do(ctx, "CLIENT", "UNBLOCK", id).Val(), "no longer blocked")
	}
	require.EqualError(t, rdb.Do(ctx, "CLIENT", "UNBLOCK", id, "x").Err(), "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
}

// TestBlockingMoveChain: a BLMOVE served pushes to a list another client waits on.
func TestBlockingMoveChain(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	rdb := ts.Client(t, 2)
	mover, popper := ts.Client(t, 2), ts.Client(t, 3)
	moved := async(func() string { return mover.BLMove(ctx, "a", "b", "RIGHT", "LEFT", 10*time.Second).Val() })
	waitBlocked(t, rdb, "1")
	popped := async(func() []string { return popper.BLPop(ctx, 10*time.Second, "b").Val() })
	waitBlocked(t, rdb, "2")
	rdb.RPush(ctx, "a", "x")
	require.Equal(t, "x", <-moved)
	require.Equal(t, []string{"b", "x"}, <-popped)
	require.Equal(t, int64(0), rdb.Exists(ctx, "a", "b").Val())
}

func TestBlockingSortedSets(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	rdb := ts.Client(t, 2)
	waiter := ts.Client(t, 3)
	got := async(func() *redis.ZWithKey { return waiter.BZPopMin(ctx, 10*time.Second, "z1", "z2").Val() })
	waitBlocked(t, rdb, "1")
	rdb.ZAdd(ctx, "z2", redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1, Member: "a"})
	require.Equal(t, &redis.ZWithKey{Key: "z2", Z: redis.Z{Score: 1, Member: "a"}}, <-got)

	mpop := async(func() []any { return waiter.Do(ctx, "BZMPOP", "10", "1", "z3", "MAX", "COUNT", "5").Val().([]any) })
	waitBlocked(t, rdb, "1")
	rdb.ZAdd(ctx, "z3", redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 1, Member: "a"})
	require.Equal(t, []any{"z3", []any{[]any{"b", 2.0}, []any{"a", 1.0}}}, <-mpop)

	// A key of another type is skipped by a waiter, which goes on waiting.
	lpop := async(func() []string { return waiter.BLPop(ctx, 10*time.Second, "k").Val() })
	waitBlocked(t, rdb, "1")
	rdb.ZAdd(ctx, "k", redis.Z{Score: 1, Member: "a"})
	rdb.Del(ctx, "k")
	rdb.RPush(ctx, "k", "v")
	require.Equal(t, []string{"k", "v"}, <-lpop)
}

// TestBlockedClientGone: a client that closes its connection while it waits stops
// waiting, and takes nothing a later push brings.
func TestBlockedClientGone(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	rdb := ts.Client(t, 2)
	nc, err := net.Dial("tcp", ts.Addr)
	require.NoError(t, err)
	_, err = nc.Write([]byte("*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n"))
	require.NoError(t, err)
	waitBlocked(t, rdb, "1")
	require.NoError(t, nc.Close())
	waitBlocked(t, rdb, "0")
	rdb.RPush(ctx, "q", "x")
	require.Equal(t, []string{"x"}, rdb.LRange(ctx, "q", 0, -1).Val())
}
