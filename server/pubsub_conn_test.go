package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Tests of detached clients: handed over by a loop, killed, disconnected, overflowing.

// subscribeRaw opens a connection that subscribes to channel and returns it with its client id.
func subscribeRaw(t testing.TB, ts *testServer, channel string) (*rawConn, int64) {
	t.Helper()
	c := ts.raw(t)
	c.send(t, "CLIENT ID\r\nSUBSCRIBE "+channel+"\r\n")
	id, err := strconv.ParseInt(strings.TrimPrefix(c.line(t), ":"), 10, 64)
	require.NoError(t, err)
	c.expect(t, fmt.Sprintf("*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(channel), channel))
	return c, id
}

// clientLine returns the CLIENT LIST line of the client with id, or "" when it is gone.
func clientLine(t testing.TB, rdb *redis.Client, id int64) string {
	t.Helper()
	list := do(t, rdb, "CLIENT", "LIST", "ID", id).(string)
	return strings.TrimSpace(list)
}

// TestSubscriberInClientListAndInfo: a subscriber shows as flags=P with its counts; INFO counts
// channels and patterns; RESET makes it a normal client again.
func TestSubscriberInClientListAndInfo(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	c, id := subscribeRaw(t, ts, "a")
	c.send(t, "SUBSCRIBE b\r\nPSUBSCRIBE x* y*\r\n")
	c.expect(t, "*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n")
	c.expect(t, "*3\r\n$10\r\npsubscribe\r\n$2\r\nx*\r\n:3\r\n")
	c.expect(t, "*3\r\n$10\r\npsubscribe\r\n$2\r\ny*\r\n:4\r\n")
	line := clientLine(t, rdb, id)
	require.Contains(t, line, " flags=P db=0 sub=2 psub=2 ")
	require.Contains(t, line, " cmd=psubscribe ")
	stats := infoFields(t, rdb, "stats")
	require.Equal(t, "2", stats["pubsub_channels"])
	require.Equal(t, "2", stats["pubsub_patterns"])

	c.send(t, "RESET\r\n")
	c.expect(t, "+RESET\r\n")
	require.Contains(t, clientLine(t, rdb, id), " flags=N db=0 sub=0 psub=0 ")
	stats = infoFields(t, rdb, "stats")
	require.Equal(t, "0", stats["pubsub_channels"])
	require.Equal(t, "0", stats["pubsub_patterns"])
}

// TestSubscriberKilled: CLIENT KILL closes a subscriber, whichever way it was served, and its
// subscriptions go with it.
func TestSubscriberKilled(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads))
			rdb := ts.client(t, 2)
			c, id := subscribeRaw(t, ts, "news")
			other, _ := subscribeRaw(t, ts, "news")
			require.Equal(t, int64(2), do(t, rdb, "PUBLISH", "news", "one"))
			require.Equal(t, int64(1), do(t, rdb, "CLIENT", "KILL", "ID", id))
			requireHungUp(t, c, 5*time.Second)
			require.Eventually(t, func() bool { return clientLine(t, rdb, id) == "" }, 5*time.Second, 10*time.Millisecond)
			require.Equal(t, int64(1), do(t, rdb, "PUBLISH", "news", "two"))
			other.expect(t, "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$3\r\none\r\n")
			other.expect(t, "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$3\r\ntwo\r\n")
			require.Eventually(t, func() bool { return infoFields(t, rdb, "clients")["connected_clients"] == "2" },
				5*time.Second, 10*time.Millisecond)
		})
	}
}

// TestSlowSubscriberDisconnected: a subscriber that reads nothing is cut off once its output
// passes the limit; the publisher never waits for it, and a subscriber that reads gets
// every message.
func TestSlowSubscriberDisconnected(t *testing.T) {
	for _, mode := range ioModes[:2] {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads), func(c *Config) { c.AppendOnly = false })
			rdb := ts.client(t, 2)
			ctx := context.Background()
			slow, slowID := subscribeRaw(t, ts, "firehose")
			fast := ts.client(t, 2).Subscribe(ctx, "firehose")
			t.Cleanup(func() { fast.Close() })
			_, err := fast.ReceiveTimeout(ctx, 5*time.Second)
			require.NoError(t, err)

			payload := strings.Repeat("x", 256<<10)
			received := make(chan int, 1)
			go func() {
				n := 0
				for {
					msg, err := fast.ReceiveTimeout(ctx, 10*time.Second)
					if err != nil {
						break
					}
					if m, ok := msg.(*redis.Message); ok {
						if m.Payload == "end" {
							break
						}
						if len(m.Payload) == len(payload) {
							n++
						}
					}
				}
				received <- n
			}()

			// Far more than the limit and what the sockets buffer: 256 MiB at most.
			published, slowest := 0, time.Duration(0)
			for published < 1024 {
				start := time.Now()
				n := do(t, rdb, "PUBLISH", "firehose", payload).(int64)
				slowest = max(slowest, time.Since(start))
				published++
				if n == 1 {
					break // the slow one is gone
				}
				require.Equal(t, int64(2), n)
			}
			t.Logf("cut off after %d messages of %d KiB; the slowest PUBLISH took %v", published, len(payload)>>10, slowest)
			require.Less(t, published, 1024, "the slow subscriber was never cut off")
			require.Greater(t, published*len(payload), outputLimit, "cut off before its output reached the limit")
			require.Less(t, slowest, 10*time.Second, "a PUBLISH waited for a subscriber") // which never reads: it would wait for ever
			for i := 0; i < 20; i++ {
				require.Equal(t, int64(1), do(t, rdb, "PUBLISH", "firehose", payload))
			}
			require.Equal(t, int64(1), do(t, rdb, "PUBLISH", "firehose", "end"))
			require.Equal(t, published+20, <-received)

			requireHungUp(t, slow, 10*time.Second)
			require.Eventually(t, func() bool { return clientLine(t, rdb, slowID) == "" }, 5*time.Second, 10*time.Millisecond)
			require.Equal(t, []any{"firehose", int64(1)}, do(t, rdb, "PUBSUB", "NUMSUB", "firehose"))
		})
	}
}

// TestLoopHandsOverManyClients: clients on two loops subscribe at once, each in a pipeline
// with other requests, get their messages and leave; nothing is lost or crossed.
func TestLoopHandsOverManyClients(t *testing.T) {
	ts := startServer(t, withIOThreads(2), func(c *Config) { c.AppendOnly = false })
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 1})
	t.Cleanup(func() { rdb.Close() })
	const workers, rounds = 24, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- handOverRounds(ts, rdb, w, rounds)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return infoFields(t, rdb, "clients")["connected_clients"] == "1" },
		5*time.Second, 10*time.Millisecond)
	require.Equal(t, "0", infoFields(t, rdb, "stats")["pubsub_channels"])
}

// handOverRounds is one worker of TestLoopHandsOverManyClients.
func handOverRounds(ts *testServer, rdb *redis.Client, w, rounds int) error {
	ctx := context.Background()
	for r := 0; r < rounds; r++ {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			return err
		}
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		ch := fmt.Sprintf("w%d", w)
		key := fmt.Sprintf("k%d-%d", w, r)
		req := fmt.Sprintf("SET %s v%d\r\nGET %s\r\nSUBSCRIBE %s\r\nPING %s\r\n", key, r, key, ch, key)
		want := fmt.Sprintf("+OK\r\n$%d\r\nv%d\r\n*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n*2\r\n$4\r\npong\r\n$%d\r\n%s\r\n",
			len(strconv.Itoa(r))+1, r, len(ch), ch, len(key), key)
		if err := exchange(nc, req, want); err != nil {
			nc.Close()
			return fmt.Errorf("worker %d round %d: %w", w, r, err)
		}
		msg := fmt.Sprintf("m%d", r)
		if n, err := rdb.Publish(ctx, ch, msg).Result(); err != nil || n != 1 {
			nc.Close()
			return fmt.Errorf("worker %d round %d: PUBLISH: %d, %v", w, r, n, err)
		}
		want = fmt.Sprintf("*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n*3\r\n$11\r\nunsubscribe\r\n$%d\r\n%s\r\n:0\r\n$-1\r\n",
			len(ch), ch, len(msg), msg, len(ch), ch)
		err = exchange(nc, "UNSUBSCRIBE\r\nGET nothing\r\n", want)
		nc.Close()
		if err != nil {
			return fmt.Errorf("worker %d round %d: %w", w, r, err)
		}
	}
	return nil
}

// exchange sends req and reads exactly the bytes of want.
func exchange(nc net.Conn, req, want string) error {
	if _, err := nc.Write([]byte(req)); err != nil {
		return err
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(nc, got); err != nil {
		return fmt.Errorf("reading %q: %w", want, err)
	}
	if string(got) != want {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}

// TestDetachedClientsDoNotLeak: subscribers that leave in every way leave neither a client
// counted, nor a subscription, nor a file descriptor, nor a goroutine behind.
func TestDetachedClientsDoNotLeak(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads), func(c *Config) { c.AppendOnly = false })
			// One connection: a pool that grows would add server goroutines to the count.
			rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 1})
			t.Cleanup(func() { rdb.Close() })
			connected := func() string { return infoFields(t, rdb, "clients")["connected_clients"] }
			require.Equal(t, "1", connected())
			fds := openFiles(t)
			goroutines := runtime.NumGoroutine()

			const n = 100
			for round := 0; round < 3; round++ {
				conns := make([]*net.TCPConn, n)
				ids := make([]int64, n)
				for i := range conns {
					c, id := subscribeRaw(t, ts, fmt.Sprintf("ch%d", i%7))
					conns[i], ids[i] = c.nc.(*net.TCPConn), id
				}
				require.Equal(t, strconv.Itoa(n+1), connected())
				for i, nc := range conns {
					switch i % 4 {
					case 0: // leaves its channel, then hangs up
						_, err := nc.Write([]byte("UNSUBSCRIBE\r\nPSUBSCRIBE p*\r\nPUNSUBSCRIBE\r\n"))
						require.NoError(t, err)
						nc.Close()
					case 1: // killed
						require.Equal(t, int64(1), do(t, rdb, "CLIENT", "KILL", "ID", ids[i]))
						nc.Close()
					case 2: // a reset rather than a close
						require.NoError(t, nc.SetLinger(0))
						nc.Close()
					case 3: // quits, with a message on its way
						do(t, rdb, "PUBLISH", fmt.Sprintf("ch%d", i%7), "bye")
						_, err := nc.Write([]byte("QUIT\r\n"))
						require.NoError(t, err)
						nc.Close()
					}
				}
				require.Eventually(t, func() bool { return connected() == "1" },
					5*time.Second, 10*time.Millisecond, "round %d", round)
				stats := infoFields(t, rdb, "stats")
				require.Equal(t, "0", stats["pubsub_channels"])
				require.Equal(t, "0", stats["pubsub_patterns"])
			}
			if fds >= 0 {
				require.Eventually(t, func() bool { return openFiles(t) <= fds }, 5*time.Second, 10*time.Millisecond,
					"file descriptors: %d before, %d after", fds, openFiles(t))
			}
			requireGoroutinesBack(t, goroutines)
		})
	}
}

// TestCloseHangsUpSubscribers: Close ends detached clients too, a stalled one included.
func TestCloseHangsUpSubscribers(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads), func(c *Config) { c.AppendOnly = false })
			rdb := ts.client(t, 2)
			reading, _ := subscribeRaw(t, ts, "a")
			stalled, _ := subscribeRaw(t, ts, "a")
			payload := strings.Repeat("y", 1<<20)
			for i := 0; i < 8; i++ { // more than the sockets hold: the stalled one's writer waits
				do(t, rdb, "PUBLISH", "a", payload)
				require.Equal(t, payload, readMessage(t, reading))
			}
			closed := make(chan error, 1)
			go func() { closed <- ts.Close() }()
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not return")
			}
			requireHungUp(t, reading, 5*time.Second)
			requireHungUp(t, stalled, 5*time.Second)
			require.Eventually(t, func() bool { return ts.connected.Load() == 0 }, 5*time.Second, 10*time.Millisecond)
		})
	}
}

// readMessage reads one RESP2 message and returns its payload.
func readMessage(t testing.TB, c *rawConn) string {
	t.Helper()
	require.Equal(t, "*3", c.line(t))
	require.Equal(t, "message", string(readBulk(t, c)))
	readBulk(t, c)
	return string(readBulk(t, c))
}

// requireGoroutinesBack waits until no more goroutines run than before, and shows the
// stacks of those left when they never end.
func requireGoroutinesBack(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSubscribersCountTowardMaxClients: a detached client is still one of maxclients.
func TestSubscribersCountTowardMaxClients(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads), func(c *Config) { c.MaxClients = 2 })
			sub, _ := subscribeRaw(t, ts, "a")
			other := ts.raw(t)
			other.send(t, "PING\r\n")
			other.expect(t, "+PONG\r\n")
			refused := ts.raw(t)
			refused.expect(t, "-ERR max number of clients reached\r\n")
			require.True(t, refused.closed())

			sub.nc.Close()
			require.Eventually(t, func() bool { return ts.connected.Load() == 1 }, 5*time.Second, 10*time.Millisecond)
			again := ts.raw(t)
			again.send(t, "PING\r\n")
			again.expect(t, "+PONG\r\n")
		})
	}
}
