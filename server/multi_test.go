package server

import (
	"context"
	"errors"
	"math/bits"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestMultiExactReplies checks Redis's replies byte for byte.
func TestMultiExactReplies(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	expect := func(lines ...string) {
		t.Helper()
		for _, want := range lines {
			require.Equal(t, want, c.line(t))
		}
	}

	c.send(t, "EXEC\r\nDISCARD\r\nMULTI\r\nMULTI\r\nSET k v\r\nINCR k\r\nGET k\r\nEXEC\r\n")
	expect("-ERR EXEC without MULTI", "-ERR DISCARD without MULTI", "+OK",
		"-ERR MULTI calls can not be nested", "+QUEUED", "+QUEUED", "+QUEUED",
		"*3", "+OK", "-ERR value is not an integer or out of range", "$1", "v")

	// Refused while queueing: the transaction is discarded at EXEC.
	c.send(t, "MULTI\r\nSET k w\r\nNOSUCH a\r\nGET\r\nEXEC\r\nGET k\r\n")
	expect("+OK", "+QUEUED", "-ERR unknown command 'NOSUCH', with args beginning with: 'a' ",
		"-ERR wrong number of arguments for 'get' command",
		"-EXECABORT Transaction discarded because of previous errors.", "$1", "v")

	c.send(t, "MULTI\r\nSET k w\r\nDISCARD\r\nGET k\r\nMULTI\r\nEXEC\r\n")
	expect("+OK", "+QUEUED", "+OK", "$1", "v", "+OK", "*0")

	c.send(t, "MULTI\r\nWATCH k\r\nPING\r\nEXEC\r\n")
	expect("+OK", "-ERR WATCH inside MULTI is not allowed", "+QUEUED", "*1", "+PONG")

	// RESET leaves MULTI; QUIT runs at once and closes.
	c.send(t, "MULTI\r\nSET k x\r\nRESET\r\nEXEC\r\nMULTI\r\nQUIT\r\n")
	expect("+OK", "+QUEUED", "+RESET", "-ERR EXEC without MULTI", "+OK", "+OK")
	require.True(t, c.closed())
	require.Equal(t, "v", do(t, ts.client(t, 2), "GET", "k"))
}

func TestMultiRESP3(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send(t, "HELLO 3\r\n")
	for c.line(t) != "*0" {
	}
	c.send(t, "WATCH k\r\nSET k 1\r\nMULTI\r\nGET k\r\nEXEC\r\nMULTI\r\nGET nothing\r\nEXEC\r\n")
	for _, want := range []string{"+OK", "+OK", "+OK", "+QUEUED", "_", "+OK", "+QUEUED", "*1", "_"} {
		require.Equal(t, want, c.line(t))
	}
}

// TestMultiNoMultiCommand: a command flagged no-multi is refused inside MULTI, as Redis
// refuses those that cannot run within EXEC.
func TestMultiNoMultiCommand(t *testing.T) {
	ts := startServerWith(t, func(s *Server) {
		cmd := &command{name: "block", arity: 1, flags: "no-multi", handler: func(c *client, args [][]byte) error {
			c.w.OK()
			return nil
		}}
		register(s.commands, nil, []*command{cmd})
	})
	c := ts.raw(t)
	c.send(t, "BLOCK\r\nMULTI\r\nBLOCK\r\nEXEC\r\n")
	for _, want := range []string{"+OK", "+OK", "-ERR Command not allowed inside a transaction",
		"-EXECABORT Transaction discarded because of previous errors."} {
		require.Equal(t, want, c.line(t))
	}
}

func TestMultiNoAuthDoomsTransaction(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.RequirePass = "pw" })
	c := ts.raw(t)
	c.send(t, "MULTI\r\n")
	require.Equal(t, "-NOAUTH Authentication required.", c.line(t))
	c.send(t, "AUTH pw\r\nMULTI\r\nCONFIG SET requirepass other\r\nEXEC\r\n")
	for _, want := range []string{"+OK", "+OK", "+QUEUED", "*1", "+OK"} {
		require.Equal(t, want, c.line(t))
	}
}

func TestTxPipelined(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 3)
	ctx := context.Background()
	var incr *redis.IntCmd
	var decision *redis.Cmd
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", "1", 0)
		incr = p.IncrBy(ctx, "a", 41)
		decision = p.Do(ctx, "CL.THROTTLE", "user", 15, 30, 60)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, cmds, 3)
	require.Equal(t, int64(42), incr.Val())
	require.Equal(t, []any{int64(0), int64(16), int64(15), int64(-1), int64(2)}, decision.Val())

	// An error inside the transaction is its command's, the others run.
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "s", "x", 0)
		p.Incr(ctx, "s")
		incr = p.Incr(ctx, "n")
		return nil
	})
	require.EqualError(t, err, "ERR value is not an integer or out of range")
	require.Equal(t, int64(1), incr.Val())
}

// TestWatchOptimisticIncrement runs go-redis's WATCH example from several clients at once:
// no increment is lost.
func TestWatchOptimisticIncrement(t *testing.T) {
	ts := startServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, PoolSize: 8})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	increment := func(key string) error {
		for {
			err := rdb.Watch(ctx, func(tx *redis.Tx) error {
				n, err := tx.Get(ctx, key).Int()
				if err != nil && err != redis.Nil {
					return err
				}
				_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, key, strconv.Itoa(n+1), 0)
					return nil
				})
				return err
			}, key)
			if !errors.Is(err, redis.TxFailedErr) {
				return err
			}
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if err := increment("counter"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, "200", do(t, rdb, "GET", "counter"))
}

func TestWatch(t *testing.T) {
	ts := startServer(t)
	other := ts.client(t, 2)
	for _, tc := range []struct {
		name   string
		before func(c *rawConn) // on the watching connection, before MULTI
		change func()
		abort  bool
	}{
		{"untouched", nil, func() { do(t, other, "SET", "elsewhere", "1") }, false},
		{"set by another client", nil, func() { do(t, other, "SET", "k", "2") }, true},
		{"rate-limited by another client", nil, func() { do(t, other, "THROTTLE", "k", 5, 10, "1m") }, true},
		{"deleted", nil, func() { do(t, other, "DEL", "k") }, true},
		{"a missing key created", func(c *rawConn) {
			c.send(t, "WATCH missing\r\n")
			require.Equal(t, "+OK", c.line(t))
		}, func() { do(t, other, "SET", "missing", "1") }, true},
		{"flushed", nil, func() { do(t, other, "FLUSHALL") }, true},
		{"expired", func(c *rawConn) {
			c.send(t, "SET k v PX 100\r\nWATCH k\r\n")
			require.Equal(t, "+OK", c.line(t))
			require.Equal(t, "+OK", c.line(t))
		}, func() { ts.clock.Advance(time.Second) }, true},
		{"unwatched", func(c *rawConn) {
			c.send(t, "UNWATCH\r\n")
			require.Equal(t, "+OK", c.line(t))
		}, func() { do(t, other, "SET", "k", "2") }, false},
		{"changed by itself", func(c *rawConn) {
			c.send(t, "SET k mine\r\n")
			require.Equal(t, "+OK", c.line(t))
		}, func() {}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			do(t, other, "FLUSHALL")
			do(t, other, "SET", "k", "1")
			c := ts.raw(t)
			c.send(t, "WATCH k k\r\n")
			require.Equal(t, "+OK", c.line(t))
			if tc.before != nil {
				tc.before(c)
			}
			tc.change()
			c.send(t, "MULTI\r\nINCR n\r\nEXEC\r\n")
			require.Equal(t, "+OK", c.line(t))
			require.Equal(t, "+QUEUED", c.line(t))
			if tc.abort {
				require.Equal(t, "*-1", c.line(t))
			} else {
				require.Equal(t, "*1", c.line(t))
				require.Equal(t, ":1", c.line(t))
			}
			// EXEC forgets the watched keys: the next transaction runs.
			do(t, other, "SET", "k", "3")
			c.send(t, "MULTI\r\nPING\r\nEXEC\r\n")
			for _, want := range []string{"+OK", "+QUEUED", "*1", "+PONG"} {
				require.Equal(t, want, c.line(t))
			}
		})
	}
}

// TestDisconnectDropsTransaction: a client gone in MULTI leaves nothing behind: its queued
// requests never run, and writes to the keys it watched go on.
func TestDisconnectDropsTransaction(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send(t, "WATCH a b c\r\nMULTI\r\nSET a 1\r\n")
	for _, want := range []string{"+OK", "+OK", "+QUEUED"} {
		require.Equal(t, want, c.line(t))
	}
	c.nc.Close()
	require.Eventually(t, func() bool { return ts.connected.Load() == 0 }, 5*time.Second, 10*time.Millisecond)
	rdb := ts.client(t, 2)
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "a"))
	require.Equal(t, "OK", do(t, rdb, "SET", "b", "1"))
}

func TestClientListShowsMulti(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send(t, "CLIENT SETNAME tx\r\nMULTI\r\nSET a 1\r\nSET b 2\r\n")
	for _, want := range []string{"+OK", "+OK", "+QUEUED", "+QUEUED"} {
		require.Equal(t, want, c.line(t))
	}
	rdb := ts.client(t, 2)
	line := func() string {
		for _, l := range strings.Split(do(t, rdb, "CLIENT", "LIST").(string), "\n") {
			if strings.Contains(l, " name=tx ") {
				return l
			}
		}
		t.Fatal("no client named tx")
		return ""
	}
	require.Contains(t, line(), " flags=x ")
	require.Contains(t, line(), " multi=2 ")
	c.send(t, "DISCARD\r\nWATCH a\r\n")
	require.Equal(t, "+OK", c.line(t))
	require.Equal(t, "+OK", c.line(t))
	require.Contains(t, line(), " flags=N ")
	require.Contains(t, line(), " multi=-1 ")
	do(t, rdb, "SET", "a", "changed")
	require.Contains(t, line(), " flags=d ")
}

// TestExecWaitsForSync: with appendfsync always, EXEC's reply comes once its writes are synced.
func TestExecWaitsForSync(t *testing.T) {
	r := newRestartable(t)
	_, rdb := r.start(t, func(c *Config) { c.AppendFsync = "always" })
	ctx := context.Background()
	for i := range 10 {
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, "n")
			p.Do(ctx, "THROTTLE", "k", 100, 100, "1m")
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, int64(i+1), cmds[0].(*redis.IntCmd).Val())
		require.Equal(t, "0", infoFields(t, rdb, "persistence")["rdb_changes_since_last_save"])
	}
}

// TestPlainCommandsWaitForTransactions: a plain command of another client on a key that a
// running script or EXEC holds waits for it, as on Redis, where nothing runs in between. A
// script reads a counter, spins a while, and writes it back plus one, while other clients
// INCR it: no increment is lost. EXEC's two INCRs are never seen half done by a GET.
func TestPlainCommandsWaitForTransactions(t *testing.T) {
	ts := startServer(t, withIOThreads(4)) // one loop would run the clients one after the other
	ctx := context.Background()
	script := `local n = tonumber(redis.call('GET', KEYS[1]) or '0')
local x = 0
for i = 1, 20000 do x = x + i end
redis.call('SET', KEYS[1], n + 1)
return n`
	const scripts, incrs = 100, 400
	var wg sync.WaitGroup
	run := func(f func(rdb *redis.Client)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := ts.client(t, 2)
			f(rdb)
		}()
	}
	run(func(rdb *redis.Client) {
		for range scripts {
			if err := rdb.Eval(ctx, script, []string{"n"}).Err(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 2 {
		run(func(rdb *redis.Client) {
			for range incrs / 2 {
				if err := rdb.Incr(ctx, "n").Err(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	run(func(rdb *redis.Client) {
		for range 200 {
			_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, "pair")
				p.Incr(ctx, "pair")
				return nil
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	run(func(rdb *redis.Client) {
		for range 2000 {
			n, err := rdb.Get(ctx, "pair").Int()
			if err != nil && err != redis.Nil {
				t.Error(err)
				return
			}
			if n%2 != 0 {
				t.Errorf("GET saw EXEC half done: %d", n)
				return
			}
		}
	})
	wg.Wait()
	require.Equal(t, strconv.Itoa(scripts+incrs), do(t, ts.client(t, 2), "GET", "n"))
	require.Equal(t, "400", do(t, ts.client(t, 2), "GET", "pair"))
}

// TestHoldWaitsForCommandInGate: a plain command that passed the gate before a transaction
// took a stripe keeps the transaction waiting until it leaves, whichever slot it counted
// itself in (the slots in use are below a mark it raised).
func TestHoldWaitsForCommandInGate(t *testing.T) {
	s := startServer(t).Server
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	c := s.newClient(a)
	c.id = 1000 // a slot far above the loops'
	get := s.commands["get"]
	slot, own, err := s.enterGate(c, get, [][]byte{[]byte("get"), []byte("k")})
	require.NoError(t, err)
	require.Greater(t, int(s.txLocks.used.Load()), 0)
	bit := s.txStripe([]byte("k"))
	held := make(chan struct{})
	go func() {
		s.txLocks.stripes[bits.TrailingZeros64(bit)].Lock()
		s.txLocks.hold(bit)
		close(held)
	}()
	select {
	case <-held:
		t.Fatal("the transaction went on while a command was in the gate")
	case <-time.After(50 * time.Millisecond):
	}
	s.leaveGate(slot, own)
	<-held
	s.unlockTx(bit)
}
