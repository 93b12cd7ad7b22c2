package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// pipeline is n copies of the request args, in RESP.
func pipeline(n int, args ...string) []byte {
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	return []byte(b.String())
}

// runPipeline runs what c's reader holds as an event loop does: each request after hold,
// the held shard let go before the reader would read, and at the end. It returns how many
// requests found the shard of the request before still held.
func runPipeline(s *Server, c *client, req []byte) (kept int) {
	c.rd.Start, c.rd.End = 0, copy(c.rd.Buf, req)
	for c.rd.Buffered() { // the loop lets go before a read: here there is none
		args, err := c.rd.Next()
		if err != nil {
			panic(err)
		}
		before := c.held
		s.hold(c, args)
		if before != nil && c.held == before {
			kept++
		}
		s.run(c, args)
	}
	c.letGo()
	return kept
}

// TestBatchHoldsOneLockPerRun: consecutive requests on one shard run under one acquisition,
// each its own decision, in order; a request that is not batchable (EVAL), or on another
// shard, lets the lock go first, and nothing stays held after the pipeline.
func TestBatchHoldsOneLockPerRun(t *testing.T) {
	s, c := fuzzServer(t)
	kept := runPipeline(s, c, pipeline(16, "THROTTLE", "hot", "9", "1", "1h"))
	require.Equal(t, 15, kept, "the 15 requests after the first keep its lock")
	require.Nil(t, c.held)
	require.Nil(t, c.Held)
	// Every reply is its own decision: ten allowed, remaining going down, then denied.
	got := string(c.W.B)
	require.Equal(t, 16, strings.Count(got, "*5\r\n"))
	require.Equal(t, 10, strings.Count(got, "*5\r\n:0\r\n"), got)
	require.Equal(t, 6, strings.Count(got, "*5\r\n:1\r\n"), got)
	require.True(t, strings.HasPrefix(got, "*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n"), got)
	c.W.B = c.W.B[:0]
	// The six denials went to TOPDENIED at once, when the pipeline let the shard go.
	s.run(c, [][]byte{[]byte("TOPDENIED")})
	require.Equal(t, "*2\r\n$3\r\nhot\r\n:6\r\n", string(c.W.B))
	c.W.B = c.W.B[:0]

	mixed := append(pipeline(3, "INCR", "n"), pipeline(1, "EVAL", "return redis.call('INCR', KEYS[1])", "1", "n")...)
	mixed = append(mixed, pipeline(3, "INCR", "n")...)
	mixed = append(mixed, pipeline(1, "MULTI")...)
	mixed = append(mixed, pipeline(2, "INCR", "n")...)
	mixed = append(mixed, pipeline(1, "EXEC")...)
	mixed = append(mixed, pipeline(2, "GET", "n")...)
	kept = runPipeline(s, c, mixed)
	require.Equal(t, 2+2+1, kept, "INCR INCR after the first, twice; GET after GET; not around EVAL, MULTI, EXEC")
	require.Equal(t, ":1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n:7\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:8\r\n:9\r\n$1\r\n9\r\n$1\r\n9\r\n", string(c.W.B))
	require.Nil(t, c.held)
}

// TestBatchBesideScriptsAndTransactions: connections pipelining a hot key's INCR and
// THROTTLE, others running scripts and transactions on the same key at once, through
// several event loops: nothing deadlocks, no increment is lost, and the limit lets exactly
// its capacity through.
func TestBatchBesideScriptsAndTransactions(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.IOThreads = 3; c.AppendOnly = false })
	const conns, rounds, depth = 6, 20, 16
	var wg sync.WaitGroup
	allowed := make([]int, conns)
	for w := range conns {
		rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 1})
		t.Cleanup(func() { rdb.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for range rounds {
				var cmds []*redis.Cmd
				pipe := rdb.Pipeline()
				switch w % 3 {
				case 0: // a hot key's pipeline
					for range depth {
						pipe.Do(ctx, "INCR", "hot:n")
						cmds = append(cmds, pipe.Do(ctx, "THROTTLE", "hot:t", 99, 1, "1h"))
					}
				case 1: // scripts on the same key between its requests
					for range depth / 4 {
						pipe.Do(ctx, "INCR", "hot:n")
						pipe.Do(ctx, "EVAL", "return redis.call('INCR', KEYS[1])", 1, "hot:n")
						pipe.Do(ctx, "INCR", "hot:n")
						pipe.Do(ctx, "INCRBY", "hot:n", 1)
					}
				default: // transactions on it
					for range depth / 4 {
						pipe.Do(ctx, "MULTI")
						pipe.Do(ctx, "INCR", "hot:n")
						pipe.Do(ctx, "INCR", "hot:n")
						pipe.Do(ctx, "EXEC")
					}
				}
				if _, err := pipe.Exec(ctx); err != nil {
					t.Error(err)
					return
				}
				for _, c := range cmds {
					if c.Val().([]any)[0].(int64) == 0 {
						allowed[w]++
					}
				}
			}
		}()
	}
	wg.Wait()
	rdb := ts.client(t, 2)
	// Incremented: by the hot pipelines depth each round, by the script connections depth
	// (4 per group of 4), by the transactions depth/2 (2 per group of 4).
	total := 0
	for w := range conns {
		total += rounds * map[int]int{0: depth, 1: depth, 2: depth / 2}[w%3]
	}
	require.Equal(t, fmt.Sprint(total), do(t, rdb, "GET", "hot:n"))
	sum := 0
	for _, n := range allowed {
		sum += n
	}
	require.Equal(t, 100, sum, "THROTTLE hot:t 99 1 1h lets 100 through, once each")
}

// TestBatchCommandsTakeTheHeldShard: every command that may run under a pipeline's held
// lock takes its shard through LockShard (a handler that locked the shard itself would
// wait for itself), whatever its arguments make of it.
func TestBatchCommandsTakeTheHeldShard(t *testing.T) {
	s, c := fuzzServer(t)
	var names []string
	for name, cmd := range s.commands {
		if cmd.batch {
			names = append(names, name)
		}
	}
	for _, want := range []string{"get", "set", "incr", "cl.throttle", "gcra", "throttle", "tokenbucket", "concurrency.acquire"} {
		require.Contains(t, names, want)
	}
	for _, not := range []string{"allof", "check", "mget", "eval", "evalsha", "del"} {
		require.NotContains(t, names, not)
	}
	for _, name := range names {
		cmd := s.commands[name]
		args := [][]byte{[]byte(name), []byte("k")}
		for len(args) < max(cmd.arity, -cmd.arity) {
			args = append(args, []byte("1"))
		}
		sh := s.ks.Shard([]byte("k"))
		sh.Lock()
		c.held, c.Held = sh, sh
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.run(c, args)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s waits for the shard its pipeline holds", name)
		}
		c.letGo()
		c.W.B = c.W.B[:0]
	}
}
