package server

import (
	"bytes"
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
)

// TestTrickledRequestsStallNoOne: connections trickling one more argument every 10 ms into a
// request of hundreds of thousands of arguments cost the server only the bytes each read
// brings, so that a PING beside them is answered at once. Before, every read parsed the
// request again from its first argument: a PING waited a second, and a second and a half
// of PINGs paced 5 ms apart got 3 answers (redis-server: over a hundred). redis-server takes the same trickle first, for
// scale on a loaded machine: the PINGs are counted and their median compared, which a
// scheduler's hiccup does not move.
func TestTrickledRequestsStallNoOne(t *testing.T) {
	const conns, had = 8, 300_000 // each request's arguments before the trickle starts
	theirs := pingBesideTrickle(t, redistest.Start(t).Addr, conns, had)
	ts := startServer(t, withIOThreads(1), func(c *Config) { c.AppendOnly = false })
	ours := pingBesideTrickle(t, ts.addr, conns, had)
	t.Logf("PINGs beside %d trickles: throttled %d, median %v, slowest %v; redis-server %d, median %v, slowest %v",
		conns, len(ours), ours[len(ours)/2], ours[len(ours)-1], len(theirs), theirs[len(theirs)/2], theirs[len(theirs)-1])
	require.GreaterOrEqual(t, len(ours), len(theirs)/4, "PINGs answered")
	require.Less(t, ours[len(ours)/2], 10*theirs[len(theirs)/2]+20*time.Millisecond, "median PING")
}

// pingBesideTrickle opens conns connections to addr, sends each the first had arguments of a
// request of a million, then one more argument every 10 ms on each for a second and a half,
// while another client PINGs every 5 ms: it returns the PINGs' waits, shortest first.
func pingBesideTrickle(t *testing.T, addr string, conns, had int) []time.Duration {
	var head bytes.Buffer
	head.WriteString("*1000000\r\n$4\r\nSADD\r\n$1\r\ns\r\n")
	for i := 2; i < had; i++ {
		head.WriteString("$1\r\nx\r\n")
	}
	trickles := make([]net.Conn, conns)
	for i := range trickles {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		nc.SetWriteDeadline(time.Now().Add(time.Minute))
		_, err = nc.Write(head.Bytes())
		require.NoError(t, err)
		trickles[i] = nc
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, ReadTimeout: time.Minute})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	// The heads' parse is the same work for both servers: the PINGs wait for its end.
	require.Eventually(t, func() bool {
		info, err := rdb.Info(ctx, "stats").Result()
		require.NoError(t, err)
		_, rest, _ := strings.Cut(info, "total_net_input_bytes:")
		in, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\r\n", 2)[0]))
		return in >= conns*head.Len()
	}, time.Minute, 50*time.Millisecond)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, nc := range trickles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := nc.Write([]byte("$1\r\ny\r\n")); err != nil {
						return
					}
				}
			}
		}()
	}
	var waits []time.Duration
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		start := time.Now()
		require.NoError(t, rdb.Ping(ctx).Err())
		waits = append(waits, time.Since(start))
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	slices.Sort(waits)
	return waits
}
