package server

import (
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

// The sliding-log pattern the classic Lua and client-side limiters run on a sorted set:
// ZADD key now member, ZREMRANGEBYSCORE key -inf (now-window), ZCARD key, and to tell when
// the oldest entry leaves, ZRANGE key 0 0 WITHSCORES. Each key holds a window of 100
// millisecond timestamps, as members and as scores; each step adds the next millisecond
// and removes the one that left the window, so that the set stays at 100 members.

const benchZSetMembers = 100

// benchZSetLog runs the pattern's commands (those steps names) over nkeys keys per
// goroutine, each filled with a window before the timer starts.
func benchZSetLog(b *testing.B, nkeys int, steps ...string) {
	s, c := fuzzServer(b)
	run := func(c *client, req [][]byte) {
		s.run(c, req)
		if c.w.B[0] == '-' {
			b.Fatalf("%q: %s", req, c.w.B)
		}
		c.w.B = c.w.B[:0]
	}
	// One set of keys for each goroutine RunParallel starts, filled here.
	type window struct {
		keys [][]byte
		now  []int64 // each key's newest timestamp
	}
	windows := make([]window, runtime.GOMAXPROCS(0))
	for g := range windows {
		w := window{keys: make([][]byte, nkeys), now: make([]int64, nkeys)}
		base := int64(1732512345000 + g*1000)
		for i := range w.keys {
			w.keys[i] = []byte("bench:zset:" + strconv.Itoa(g) + ":" + strconv.Itoa(i))
			for j := range benchZSetMembers {
				ts := []byte(strconv.FormatInt(base+int64(j), 10))
				run(c, [][]byte{[]byte("ZADD"), w.keys[i], ts, ts})
			}
			w.now[i] = base + benchZSetMembers - 1
		}
		windows[g] = w
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := s.newClient(nc)
		w := windows[next.Add(1)-1]
		var nowArg, minArg []byte
		zadd := [][]byte{[]byte("ZADD"), nil, nil, nil}
		zrem := [][]byte{[]byte("ZREMRANGEBYSCORE"), nil, []byte("-inf"), nil}
		zcard := [][]byte{[]byte("ZCARD"), nil}
		zrange := [][]byte{[]byte("ZRANGE"), nil, []byte("0"), []byte("0"), []byte("WITHSCORES")}
		for i := 0; pb.Next(); i++ {
			k := i % nkeys
			w.now[k]++
			nowArg = strconv.AppendInt(nowArg[:0], w.now[k], 10)
			minArg = strconv.AppendInt(append(minArg[:0], '('), w.now[k]-benchZSetMembers, 10)
			for _, step := range steps {
				switch step {
				case "ZADD":
					zadd[1], zadd[2], zadd[3] = w.keys[k], nowArg, nowArg
					run(c, zadd)
				case "ZREMRANGEBYSCORE":
					zrem[1], zrem[3] = w.keys[k], minArg
					run(c, zrem)
				case "ZCARD":
					zcard[1] = w.keys[k]
					run(c, zcard)
				case "ZRANGE":
					zrange[1] = w.keys[k]
					run(c, zrange)
				}
			}
		}
	})
}

// BenchmarkZSetSlidingLog is one whole step of the pattern: four commands.
func BenchmarkZSetSlidingLog(b *testing.B) {
	benchZSetLog(b, 1000, "ZADD", "ZREMRANGEBYSCORE", "ZCARD", "ZRANGE")
}

// BenchmarkZAddZRemRangeByScore, BenchmarkZCard and BenchmarkZRange are its commands on
// their own (ZADD with ZREMRANGEBYSCORE, so that the set keeps its size).
func BenchmarkZAddZRemRangeByScore(b *testing.B) {
	benchZSetLog(b, 1000, "ZADD", "ZREMRANGEBYSCORE")
}
func BenchmarkZCard(b *testing.B)  { benchZSetLog(b, 1000, "ZCARD") }
func BenchmarkZRange(b *testing.B) { benchZSetLog(b, 1000, "ZRANGE") }
func BenchmarkZScore(b *testing.B) { benchVerb(b, "ZSCORE", "k", "member") }
