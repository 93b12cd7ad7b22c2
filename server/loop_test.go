package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// ioModes are the ways of serving connections: a goroutine each, one event loop, two.
var ioModes = []struct {
	name    string
	threads int
}{
	{"goroutines", 0},
	{"one loop", 1},
	{"two loops", 2},
}

func withIOThreads(n int) func(*Config) { return func(c *Config) { c.IOThreads = n } }

// bigValue is n bytes that differ from key to key and from place to place, so that a
// reply cut short, shifted or swapped with another shows.
func bigValue(seed, n int) []byte {
	var unit [251]byte // a prime length: no power-of-two cut lines up with it
	for i := range unit {
		unit[i] = 'a' + byte((i/7+seed*5+i%3)%26)
	}
	return bytes.Repeat(unit[:], n/len(unit)+1)[:n]
}

// readBulk reads one bulk-string reply whole.
func readBulk(t testing.TB, c *rawConn) []byte {
	t.Helper()
	head := c.line(t)
	require.True(t, strings.HasPrefix(head, "$"), "bulk reply header: %q", head)
	n, err := strconv.Atoi(head[1:])
	require.NoError(t, err, head)
	b := make([]byte, n+2)
	_, err = io.ReadFull(c.rd, b)
	require.NoError(t, err)
	require.Equal(t, "\r\n", string(b[n:]))
	return b[:n]
}

// requireSameBytes compares big values without printing megabytes when they differ.
func requireSameBytes(t testing.TB, want, got []byte, msg string) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	t.Fatalf("%s: %d bytes, want %d; first difference at byte %d", msg, len(got), len(want), i)
}

// requireHungUp reads c to its end: the server closed it (EOF, or a reset when replies
// were cut off), rather than the read timing out.
func requireHungUp(t testing.TB, c *rawConn, within time.Duration) {
	t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c.rd)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection is still open: %v", err)
}

// TestLoopBackpressure: a client that sends a pipeline of large GETs and reads nothing fills
// the socket; the loop leaves its replies waiting and goes on serving everyone else, then
// delivers every reply, in order, once the client reads.
func TestLoopBackpressure(t *testing.T) {
	// One loop: the stalled client and the others share it.
	ts := startServer(t, withIOThreads(1), func(c *Config) { c.AppendOnly = false })
	rdb := ts.client(t, 2)
	const keys, gets = 2, 64
	values := make([][]byte, keys)
	for k := range values {
		values[k] = bigValue(k, 1<<20)
		require.Equal(t, "OK", do(t, rdb, "SET", fmt.Sprintf("big%d", k), values[k]))
	}

	slow := ts.raw(t)
	var pipeline strings.Builder
	for i := 0; i < gets; i++ {
		fmt.Fprintf(&pipeline, "*2\r\n$3\r\nGET\r\n$4\r\nbig%d\r\n", i%keys)
	}
	slow.send(t, pipeline.String()) // 64 MiB of replies: far more than the socket buffers hold

	other := ts.raw(t)
	for i := 0; i < 5; i++ {
		time.Sleep(20 * time.Millisecond)
		other.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		other.send(t, "PING\r\n")
		require.Equal(t, "+PONG", other.line(t), "another client waits on the stalled one")
	}
	require.Equal(t, "PONG", do(t, rdb, "PING"))

	// Sent while the replies are held up: answered after all of them.
	slow.send(t, "PING\r\n")
	slow.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := 0; i < gets; i++ {
		requireSameBytes(t, values[i%keys], readBulk(t, slow), fmt.Sprintf("GET %d", i))
	}
	require.Equal(t, "+PONG", slow.line(t))
	slow.send(t, "PING\r\n")
	require.Equal(t, "+PONG", slow.line(t))
}

// TestLoopRequestsSplitAnywhere: a pipeline that arrives in pieces cut at arbitrary bytes,
// some pieces large enough to straddle the read buffer's end, is answered whole and in order.
func TestLoopRequestsSplitAnywhere(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads))
			rng := rand.New(rand.NewSource(int64(mode.threads) + 1))
			var msg strings.Builder
			var want []string
			values := map[string]string{}
			counter := 0
			for i := 0; i < 400; i++ {
				key := fmt.Sprintf("k%d", rng.Intn(20))
				switch rng.Intn(5) {
				case 0:
					n := 1 + rng.Intn(30)
					if rng.Intn(10) == 0 {
						n = 10_000 + rng.Intn(30_000) // past the 16 KiB read chunk
					}
					v := string(bigValue(i, n))
					values[key] = v
					fmt.Fprintf(&msg, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(v), v)
					want = append(want, "+OK")
				case 1:
					fmt.Fprintf(&msg, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(key), key)
					if v, ok := values[key]; ok {
						want = append(want, "$"+strconv.Itoa(len(v)), v)
					} else {
						want = append(want, "$-1")
					}
				case 2:
					counter++
					msg.WriteString("*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n")
					want = append(want, ":"+strconv.Itoa(counter))
				case 3:
					msg.WriteString("PING inline\r\n")
					want = append(want, "$6", "inline")
				case 4:
					msg.WriteString("*1\r\n$4\r\nPING\r\n")
					want = append(want, "+PONG")
				}
			}

			c := ts.raw(t)
			sent := make(chan error, 1)
			go func() {
				b := []byte(msg.String())
				for i := 0; len(b) > 0; i++ {
					n := 1 + rng.Intn(16)
					if rng.Intn(50) == 0 {
						n = 1 + rng.Intn(40_000)
					}
					n = min(n, len(b))
					if _, err := c.nc.Write(b[:n]); err != nil {
						sent <- err
						return
					}
					b = b[n:]
					if i%8 == 0 {
						time.Sleep(100 * time.Microsecond) // let the server see the pieces apart
					}
				}
				sent <- nil
			}()
			for i, w := range want {
				require.Equal(t, w, c.line(t), "reply line %d", i)
			}
			require.NoError(t, <-sent)
			c.send(t, "PING\r\n")
			require.Equal(t, "+PONG", c.line(t))
		})
	}
}

// TestLoopHalfClose: a client that sends its requests and then closes its side gets every
// reply, then the server's close.
func TestLoopHalfClose(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads), func(c *Config) { c.AppendOnly = false })
			c := ts.raw(t)
			c.send(t, "PING\r\n")
			require.NoError(t, c.nc.(*net.TCPConn).CloseWrite())
			require.Equal(t, "+PONG", c.line(t))
			require.True(t, c.closed())

			// Replies too big for the socket: the close waits until they are all out.
			value := bigValue(7, 1<<20)
			require.Equal(t, "OK", do(t, ts.client(t, 2), "SET", "big", value))
			c = ts.raw(t)
			c.send(t, strings.Repeat("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n", 8)+"PING\r\n")
			require.NoError(t, c.nc.(*net.TCPConn).CloseWrite())
			time.Sleep(50 * time.Millisecond) // let the server meet the full socket and the end of input
			for i := 0; i < 8; i++ {
				requireSameBytes(t, value, readBulk(t, c), fmt.Sprintf("GET %d", i))
			}
			require.Equal(t, "+PONG", c.line(t))
			require.True(t, c.closed())
		})
	}
}

// TestLoopQuitAfterHeldUpReplies: QUIT at the end of a pipeline whose replies fill the
// socket closes the connection once they are all out, and runs nothing after it. With
// appendfsync always the replies wait for the sync and go in one write, so QUIT's own
// close is what waits for the socket.
func TestLoopQuitAfterHeldUpReplies(t *testing.T) {
	stores := []struct {
		name      string
		configure func(*Config)
	}{
		{"appendonly no", func(c *Config) { c.AppendOnly = false }},
		{"appendfsync always", func(c *Config) { c.AppendFsync = "always" }},
	}
	for _, p := range stores {
		for _, mode := range ioModes {
			t.Run(p.name+"/"+mode.name, func(t *testing.T) {
				ts := startServer(t, withIOThreads(mode.threads), p.configure)
				value := bigValue(3, 1<<20)
				require.Equal(t, "OK", do(t, ts.client(t, 2), "SET", "big", value))
				c := ts.raw(t)
				c.send(t, "SET q 1\r\n"+strings.Repeat("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n", 6)+"QUIT\r\nPING\r\n")
				time.Sleep(50 * time.Millisecond) // let the server meet the full socket
				require.Equal(t, "+OK", c.line(t))
				for i := 0; i < 6; i++ {
					requireSameBytes(t, value, readBulk(t, c), fmt.Sprintf("GET %d", i))
				}
				require.Equal(t, "+OK", c.line(t))
				require.True(t, c.closed(), "a reply after QUIT's")
			})
		}
	}
}

// TestLoopClientKillAcrossLoops: CLIENT KILL closes a connection whichever loop serves it,
// and nobody else's.
func TestLoopClientKillAcrossLoops(t *testing.T) {
	ts := startServer(t, withIOThreads(2))
	rdb := ts.client(t, 2)
	killer := rdb.Conn()
	t.Cleanup(func() { killer.Close() })
	killerID, err := killer.ClientID(context.Background()).Result()
	require.NoError(t, err)

	// Connections go to the loops in turn as they are accepted: the killer's is the first,
	// so conns[0], conns[2]... are on the other loop and conns[1], conns[3]... on its own.
	conns := make([]*rawConn, 6)
	ids := make([]int64, len(conns))
	for i := range conns {
		conns[i] = ts.raw(t)
		conns[i].send(t, "CLIENT ID\r\n")
		id, err := strconv.ParseInt(strings.TrimPrefix(conns[i].line(t), ":"), 10, 64)
		require.NoError(t, err)
		require.Greater(t, id, killerID)
		ids[i] = id
	}

	listed := func(id int64) bool {
		list, err := connDo(killer, "CLIENT", "LIST").Text()
		require.NoError(t, err)
		return strings.Contains(list, "id="+strconv.FormatInt(id, 10)+" ")
	}
	for _, victim := range []int{0, 1} { // on the other loop, then on the killer's own
		require.True(t, listed(ids[victim]))
		require.Equal(t, int64(1), connDo(killer, "CLIENT", "KILL", "ID", ids[victim]).Val())
		requireHungUp(t, conns[victim], 5*time.Second)
		require.Eventually(t, func() bool { return !listed(ids[victim]) }, 5*time.Second, 10*time.Millisecond)
	}
	for _, c := range conns[2:] {
		c.send(t, "PING\r\n")
		require.Equal(t, "+PONG", c.line(t))
	}
	require.Equal(t, "PONG", connDo(killer, "PING").Val())
	require.Equal(t, int64(0), connDo(killer, "CLIENT", "KILL", "ID", ids[0]).Val())
}

// TestLoopServerCloseHangsUp: Close closes every connection on every loop, whatever state
// it is in, and returns.
func TestLoopServerCloseHangsUp(t *testing.T) {
	ts := startServer(t, withIOThreads(2))
	rdb := ts.client(t, 2)
	require.Equal(t, "OK", do(t, rdb, "SET", "big", bigValue(1, 1<<20)))
	require.NoError(t, rdb.Close())

	var idle []*rawConn
	for i := 0; i < 6; i++ {
		c := ts.raw(t)
		c.send(t, "PING\r\n")
		require.Equal(t, "+PONG", c.line(t))
		idle = append(idle, c)
	}
	partial := ts.raw(t) // in the middle of a request
	partial.send(t, "*2\r\n$3\r\nGET\r\n$3\r\nbi")
	stalled := ts.raw(t) // replies held up by a full socket
	stalled.send(t, strings.Repeat("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n", 32))
	time.Sleep(50 * time.Millisecond)

	closed := make(chan error, 1)
	go func() { closed <- ts.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	for i, c := range idle {
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		require.True(t, c.closed(), "connection %d", i)
	}
	requireHungUp(t, partial, 5*time.Second)
	requireHungUp(t, stalled, 5*time.Second)
	require.Equal(t, int64(0), ts.connected.Load())
}

// TestLoopSmoke runs the same conversation whichever way connections are served.
func TestLoopSmoke(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads))
			rdb := ts.client(t, 2)
			require.Equal(t, strconv.Itoa(mode.threads), configGet(t, rdb, "io-threads")["io-threads"])
			require.Equal(t, "OK", do(t, rdb, "SET", "k", "v"))
			require.Equal(t, "v", do(t, rdb, "GET", "k"))
			require.Equal(t, ints(0, 16, 15, -1, 2), do(t, rdb, "CL.THROTTLE", "user123", 15, 30, 60))

			ctx := context.Background()
			pipe := rdb.Pipeline()
			var incrs []*redis.IntCmd
			for i := 0; i < 100; i++ {
				incrs = append(incrs, pipe.Incr(ctx, "n"))
			}
			_, err := pipe.Exec(ctx)
			require.NoError(t, err)
			for i, cmd := range incrs {
				require.Equal(t, int64(i+1), cmd.Val())
			}

			c := ts.raw(t)
			c.send(t, "SET q 1\r\nGET q\r\nQUIT\r\nPING\r\n")
			require.Equal(t, "+OK", c.line(t))
			require.Equal(t, "$1", c.line(t))
			require.Equal(t, "1", c.line(t))
			require.Equal(t, "+OK", c.line(t))
			require.True(t, c.closed())

			c = ts.raw(t)
			c.send(t, "PING\r\n*1\r\n$-5\r\n")
			require.Equal(t, "+PONG", c.line(t))
			require.Equal(t, "-ERR Protocol error: invalid bulk length", c.line(t))
			require.True(t, c.closed())

			require.Equal(t, "PONG", do(t, rdb, "PING"))
		})
	}
}

// TestLoopAlwaysFsyncManyClients: with appendfsync always, replies wait for the loop's
// shared sync; clients writing at once all get theirs.
func TestLoopAlwaysFsyncManyClients(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("io-threads %d", threads), func(t *testing.T) {
			ts := startServer(t, withIOThreads(threads), func(c *Config) { c.AppendFsync = "always" })
			const workers = 16
			var wg sync.WaitGroup
			served := make([]int, workers)
			errs := make(chan error, workers)
			stop := time.Now().Add(300 * time.Millisecond)
			for w := 0; w < workers; w++ {
				rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 1, MaxRetries: -1, ReadTimeout: 5 * time.Second})
				t.Cleanup(func() { rdb.Close() })
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx := context.Background()
					key := fmt.Sprintf("user%d", w%4) // some keys shared, some clients alone
					for i := 0; time.Now().Before(stop); i++ {
						if i%5 == 4 { // a pipeline mixing writes with a read
							pipe := rdb.Pipeline()
							pipe.Do(ctx, "CL.THROTTLE", key, 10, 100, 1)
							pipe.Ping(ctx)
							pipe.Do(ctx, "THROTTLE", key+"x", 10, 100, 1)
							if _, err := pipe.Exec(ctx); err != nil {
								errs <- fmt.Errorf("worker %d pipeline: %w", w, err)
								return
							}
							served[w] += 3
							continue
						}
						v, err := rdb.Do(ctx, "CL.THROTTLE", key, 10, 100, 1).Slice()
						if err != nil {
							errs <- fmt.Errorf("worker %d: %w", w, err)
							return
						}
						if len(v) != 5 || (v[0] != int64(0) && v[0] != int64(1)) {
							errs <- fmt.Errorf("worker %d: reply %v", w, v)
							return
						}
						served[w]++
					}
				}()
			}
			finished := make(chan struct{})
			go func() { wg.Wait(); close(finished) }()
			select {
			case <-finished:
			case <-time.After(10 * time.Second):
				t.Fatal("clients still waiting for replies: the loop is stuck")
			}
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			for w, n := range served {
				require.Greater(t, n, 0, "worker %d got no reply", w)
			}
		})
	}
}

// TestLoopConnectionsDoNotLeak: connections opened and closed in every way leave neither a
// client counted nor a file descriptor open.
func TestLoopConnectionsDoNotLeak(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads), func(c *Config) { c.AppendOnly = false })
			rdb := ts.client(t, 2)
			connected := func() string { return infoFields(t, rdb, "clients")["connected_clients"] }
			require.Equal(t, "1", connected())
			fds := openFiles(t)

			const n = 300
			for round := 0; round < 3; round++ {
				conns := make([]*net.TCPConn, n)
				for i := range conns {
					nc, err := net.Dial("tcp", ts.addr)
					require.NoError(t, err)
					conns[i] = nc.(*net.TCPConn)
				}
				require.Eventually(t, func() bool { return connected() == strconv.Itoa(n+1) },
					5*time.Second, 10*time.Millisecond, "round %d", round)
				for i, nc := range conns {
					switch i % 4 {
					case 0: // a request answered
						nc.SetDeadline(time.Now().Add(5 * time.Second))
						_, err := nc.Write([]byte("PING\r\n"))
						require.NoError(t, err)
						buf := make([]byte, 7)
						_, err = io.ReadFull(nc, buf)
						require.NoError(t, err)
						require.Equal(t, "+PONG\r\n", string(buf))
					case 1: // silent
					case 2: // half a request
						_, err := nc.Write([]byte("*2\r\n$3\r\nGET\r\n"))
						require.NoError(t, err)
					case 3: // a reset rather than a close
						require.NoError(t, nc.SetLinger(0))
					}
				}
				for _, nc := range conns {
					nc.Close()
				}
				require.Eventually(t, func() bool { return connected() == "1" },
					5*time.Second, 10*time.Millisecond, "round %d", round)
			}
			if fds >= 0 {
				require.Eventually(t, func() bool { return openFiles(t) <= fds }, 5*time.Second, 10*time.Millisecond,
					"file descriptors: %d before, %d after", fds, openFiles(t))
			}
		})
	}
}

// openFiles counts the process's open file descriptors, or -1 where that is unknown.
func openFiles(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}

// A client killed the moment it is accepted is gone, though a loop may not have taken it in yet.
func TestLoopKillRightAfterAccept(t *testing.T) {
	ts := startServer(t, withIOThreads(2), func(c *Config) { c.AppendOnly = false })
	killer := ts.raw(t)
	killer.nc.SetDeadline(time.Now().Add(time.Minute))
	for i := 0; i < 500; i++ {
		nc, err := net.Dial("tcp", ts.addr)
		require.NoError(t, err)
		killer.send(t, "CLIENT KILL ADDR "+nc.LocalAddr().String()+"\r\n")
		if killer.line(t) == ":1" {
			nc.SetDeadline(time.Now().Add(5 * time.Second))
			nc.Write([]byte("PING\r\n"))
			n, err := nc.Read(make([]byte, 16))
			require.Error(t, err, "attempt %d: killed, yet answered %d bytes", i, n)
		}
		nc.Close()
	}
}
