package server

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Writes to big collections change them in place (issue 40, item 3): one member into a
// sorted set of 1M members, one field into a hash of 1M fields, and a ZADD of 10,000
// members into a set of 1M while another client of the same event loop PINGs.

// bigCollection is the entries of the big collection, 1M unless BENCH_BIG_ENTRIES says
// otherwise (a smaller one for a build whose fill would take too long).
var bigCollection = func() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_BIG_ENTRIES")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}()

// fillBig makes key a sorted set (ZADD), a hash (HSET) or a list (RPUSH) of bigCollection
// entries, 1,000 to a command: member, field or element "m<i>", a random score or the
// value "v<i>".
func fillBig(b *testing.B, run func(args [][]byte), verb, key string) {
	rng := rand.New(rand.NewPCG(1, 2))
	args := [][]byte{[]byte(verb), []byte(key)}
	for i := 0; i < bigCollection; i++ {
		m := []byte("m" + strconv.Itoa(i))
		per := 2
		switch verb {
		case "ZADD":
			args = append(args, strconv.AppendInt(nil, rng.Int64N(1e12), 10), m)
		case "RPUSH":
			args, per = append(args, m), 1
		default:
			args = append(args, m, []byte("v"+strconv.Itoa(i)))
		}
		if len(args) == 2+per*1000 {
			run(args)
			args = args[:2]
		}
	}
}

// cpuNanos returns the CPU time the process has used. On a busy machine a benchmark's
// ns/op counts the waits for a core too; its cpu-ns/op (reportCPU) does not.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reportCPU reports the CPU time per operation since start (cpuNanos).
func reportCPU(b *testing.B, start int64) {
	b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op")
}

// benchBigWrite runs verb with one new entry at a time into key, filled with
// bigCollection entries first.
func benchBigWrite(b *testing.B, verb string) {
	s, c := fuzzServer(b)
	run := func(args [][]byte) {
		s.run(c, args)
		if c.W.B[0] == '-' {
			b.Fatalf("%q: %s", args[:3], c.W.B)
		}
		c.W.B = c.W.B[:0]
	}
	fillBig(b, run, verb, "big")
	rng := rand.New(rand.NewPCG(3, 4))
	args := [][]byte{[]byte(verb), []byte("big"), nil, nil}
	var a, m []byte
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNanos()
	defer reportCPU(b, cpu)
	for i := 0; i < b.N; i++ {
		m = strconv.AppendInt(append(m[:0], 'n'), int64(i), 10)
		if verb == "ZADD" {
			a = strconv.AppendInt(a[:0], rng.Int64N(1e12), 10)
			args[2], args[3] = a, m
		} else {
			args[2], args[3] = m, m
		}
		run(args)
	}
}

// BenchmarkZAddInto1M is ZADD of one new member, at a random score, into a sorted set of
// 1M members.
func BenchmarkZAddInto1M(b *testing.B) { benchBigWrite(b, "ZADD") }

// BenchmarkHSetInto1M is HSET of one new field into a hash of 1M fields.
func BenchmarkHSetInto1M(b *testing.B) { benchBigWrite(b, "HSET") }

// BenchmarkRPushLPop1M is RPUSH of one element onto a list of 1M elements and LPOP of
// one from it: a queue (one op is both commands).
func BenchmarkRPushLPop1M(b *testing.B) {
	s, c := fuzzServer(b)
	run := func(args [][]byte) {
		s.run(c, args)
		if c.W.B[0] == '-' {
			b.Fatalf("%q: %s", args[:2], c.W.B)
		}
		c.W.B = c.W.B[:0]
	}
	fillBig(b, run, "RPUSH", "big")
	push := [][]byte{[]byte("RPUSH"), []byte("big"), nil}
	pop := [][]byte{[]byte("LPOP"), []byte("big")}
	var m []byte
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNanos()
	defer reportCPU(b, cpu)
	for i := 0; i < b.N; i++ {
		m = strconv.AppendInt(append(m[:0], 'n'), int64(i), 10)
		push[2] = m
		run(push)
		run(pop)
	}
}

// BenchmarkZAddBatchInto1M is ZADD of 10,000 new members, at random scores, into a sorted
// set of 1M members, in the process: the server's share of BenchmarkZAddBatchBesidePing.
func BenchmarkZAddBatchInto1M(b *testing.B) {
	s, c := fuzzServer(b)
	run := func(args [][]byte) {
		s.run(c, args)
		if c.W.B[0] == '-' {
			b.Fatalf("%q: %s", args[:3], c.W.B)
		}
		c.W.B = c.W.B[:0]
	}
	fillBig(b, run, "ZADD", "big")
	rng := rand.New(rand.NewPCG(7, 8))
	batches := make([][][]byte, b.N)
	for i := range batches {
		args := [][]byte{[]byte("ZADD"), []byte("big")}
		for j := range 10_000 {
			args = append(args, strconv.AppendInt(nil, rng.Int64N(1e12), 10), []byte("n"+strconv.Itoa(i*10_000+j)))
		}
		batches[i] = args
	}
	b.ResetTimer()
	cpu := cpuNanos()
	defer reportCPU(b, cpu)
	for i := 0; i < b.N; i++ {
		run(batches[i])
	}
}

// BenchmarkZAddBatchBesidePing is ZADD of 10,000 new members, at random scores, into a
// sorted set of 1M members, on a server of one event loop, while a second client PINGs
// without pause: ns/op is the batch's time from the client, ping-max-ms the longest a PING
// waited meanwhile (it waits for the batch that holds the loop).
func BenchmarkZAddBatchBesidePing(b *testing.B) {
	for _, m := range []struct {
		name    string
		durable bool // appendfsync everysec
		replica bool
	}{{"off", false, false}, {"everysec", true, false}, {"everysec+replica", true, true}} {
		b.Run(m.name, func(b *testing.B) {
			ts := startServer(b, func(c *Config) { c.IOThreads = 1; c.AppendOnly = m.durable; c.AppendFsync = "everysec" })
			if m.replica {
				startReplica(b, ts)
			}
			benchBatchBesidePing(b, ts)
		})
	}
}

func benchBatchBesidePing(b *testing.B, ts *testServer) {
	ctx := context.Background()
	rdb := ts.client(b, 2)
	rng := rand.New(rand.NewPCG(5, 6))
	batch := func(prefix string, first int) []any {
		args := []any{"ZADD", "big"}
		for i := first; i < first+10_000; i++ {
			args = append(args, rng.Int64N(1e12), prefix+strconv.Itoa(i))
		}
		return args
	}
	for i := 0; i < bigCollection; i += 10_000 {
		require.NoError(b, rdb.Do(ctx, batch("m", i)...).Err())
	}
	pinger := ts.client(b, 2)
	require.NoError(b, pinger.Ping(ctx).Err())
	var worst atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if pinger.Ping(ctx).Err() != nil {
				return
			}
			if d := int64(time.Since(start)); d > worst.Load() {
				worst.Store(d)
			}
		}
	}()
	batches := make([][]any, b.N)
	for i := range batches {
		batches[i] = batch("n", i*10_000)
	}
	b.ResetTimer()
	cpu := cpuNanos()
	for i := 0; i < b.N; i++ {
		require.NoError(b, rdb.Do(ctx, batches[i]...).Err())
	}
	b.StopTimer()
	reportCPU(b, cpu) // the server's, the client's and the pinger's
	close(stop)
	<-done
	b.ReportMetric(float64(worst.Load())/1e6, "ping-max-ms")
}

// BenchmarkBigReadWhole reads a collection of bigCollection entries whole (issue 40: no
// copy of the packed value beyond what the reply needs): B/op is what the read allocates
// besides the reply, which the connection's buffer holds.
func BenchmarkBigReadWhole(b *testing.B) {
	for _, m := range []struct{ fill, read string }{
		{"ZADD", "ZRANGE big 0 -1 WITHSCORES"},
		{"HSET", "HGETALL big"},
		{"RPUSH", "LRANGE big 0 -1"},
	} {
		b.Run(m.read[:strings.IndexByte(m.read, ' ')], func(b *testing.B) {
			s, c := fuzzServer(b)
			run := func(args [][]byte) {
				s.run(c, args)
				if c.W.B[0] == '-' {
					b.Fatalf("%q: %s", args[:2], c.W.B)
				}
				c.W.B = c.W.B[:0]
			}
			fillBig(b, run, m.fill, "big")
			var args [][]byte
			for _, a := range strings.Fields(m.read) {
				args = append(args, []byte(a))
			}
			run(args) // the reply buffer grown once
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run(args)
			}
		})
	}
}

// BenchmarkBigSlidingLog is one admission of a sliding log of 100,000 timestamps (a limit
// of 100,000 requests an hour, the Lua limiters' ZADD, ZREMRANGEBYSCORE of what left the
// window, ZCARD), on 8 such logs in turn, as loadgen's collections part sends it: one op
// is the three commands.
func BenchmarkBigSlidingLog(b *testing.B) {
	const (
		base, window = 1732512345000, 3600000
		members      = 100000
		logs         = 8
	)
	s, c := fuzzServer(b)
	run := func(args [][]byte) {
		s.run(c, args)
		if c.W.B[0] == '-' {
			b.Fatalf("%q: %s", args[:2], c.W.B)
		}
		c.W.B = c.W.B[:0]
	}
	keys := make([][]byte, logs)
	for k := range keys {
		keys[k] = []byte("zb:" + strconv.Itoa(k))
		args := [][]byte{[]byte("ZADD"), keys[k]}
		for j := range members {
			ts := strconv.AppendInt(nil, base+int64(j)*window/members, 10)
			args = append(args, ts, ts)
		}
		run(args)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zadd := [][]byte{[]byte("ZADD"), nil, nil, nil}
	zrem := [][]byte{[]byte("ZREMRANGEBYSCORE"), nil, []byte("-inf"), nil}
	zcard := [][]byte{[]byte("ZCARD"), nil}
	var ts, lo []byte
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNanos()
	defer reportCPU(b, cpu)
	for i := 0; i < b.N; i++ {
		k := keys[i%logs]
		now := base + window + rng.Int64N(window)
		ts = strconv.AppendInt(ts[:0], now, 10)
		lo = strconv.AppendInt(append(lo[:0], '('), now-window, 10)
		zadd[1], zadd[2], zadd[3] = k, ts, ts
		zrem[1], zrem[3] = k, lo
		zcard[1] = k
		run(zadd)
		run(zrem)
		run(zcard)
	}
}

// BenchmarkZAddInto1MDurable is ZADD of one new member into a sorted set of bigCollection
// members through the server, from a client, with appendfsync everysec, alone and with a
// replica attached (issue 40: a write to a big collection touches O(1) of it everywhere,
// the redo log, the store and the stream included). Before big collections went out by
// their changes, each of these writes wrote the whole set to the redo log.
func BenchmarkZAddInto1MDurable(b *testing.B) {
	for _, replica := range []bool{false, true} {
		name := "everysec"
		if replica {
			name += "+replica"
		}
		b.Run(name, func(b *testing.B) {
			ts := startServer(b, func(c *Config) { c.AppendOnly, c.AppendFsync = true, "everysec" })
			if replica {
				startReplica(b, ts)
			}
			ctx := context.Background()
			rdb := ts.client(b, 2)
			rng := rand.New(rand.NewPCG(9, 10))
			for i := 0; i < bigCollection; i += 10_000 {
				args := []any{"ZADD", "big"}
				for j := i; j < i+10_000 && j < bigCollection; j++ {
					args = append(args, rng.Int64N(1e12), "m"+strconv.Itoa(j))
				}
				require.NoError(b, rdb.Do(ctx, args...).Err())
			}
			b.ResetTimer()
			cpu := cpuNanos()
			for i := 0; i < b.N; i++ {
				require.NoError(b, rdb.Do(ctx, "ZADD", "big", rng.Int64N(1e12), "n"+strconv.Itoa(i)).Err())
			}
			b.StopTimer()
			reportCPU(b, cpu)
		})
	}
}
