package server

// The data types' AllocsPerRun tests stay here, beside the benchmarks of bench_*_test.go
// and strings_bench_test.go: they run requests through the server's in-process dispatch
// (newClient, run) without the network, which the server does not export to package
// datatype's tests.

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestZSetNoAllocs: on a set of 100 members, the commands allocate nothing once the
// client's buffers have grown, the ranges written backwards included.
func TestZSetNoAllocs(t *testing.T) {
	s, c := fuzzServer(t)
	request := func(args ...string) [][]byte {
		req := make([][]byte, len(args))
		for i, a := range args {
			req[i] = []byte(a)
		}
		return req
	}
	send := func(req [][]byte) {
		s.run(c, req)
		if c.W.B[0] == '-' {
			t.Fatalf("%q: %s", req, c.W.B)
		}
		c.W.B = c.W.B[:0]
	}
	run := func(args ...string) { send(request(args...)) }
	for i := range 100 {
		ts := strconv.Itoa(1732512345000 + i)
		run("ZADD", "z", ts, ts)
		run("ZADD", "ids", ts, ts+"-"+strconv.Itoa(i)) // timestamped ids, each written as its score
	}
	for _, args := range [][]string{
		{"ZADD", "ids", "1732512345050", "1732512345050-50"},
		{"ZSCORE", "ids", "1732512345099-99"},
		{"ZRANGE", "ids", "0", "-1", "WITHSCORES"},
		{"ZREMRANGEBYSCORE", "ids", "-inf", "(1732512345000"},
		{"ZCARD", "ids"},
		{"ZADD", "z", "1732512345050.5", "1732512345050"},
		{"ZADD", "z", "XX", "CH", "1732512345050", "1732512345050"},
		{"ZINCRBY", "z", "0", "1732512345001"},
		{"ZSCORE", "z", "1732512345099"},
		{"ZMSCORE", "z", "1732512345099", "x"},
		{"ZRANK", "z", "1732512345050"},
		{"ZCOUNT", "z", "(1732512345010", "+inf"},
		{"ZRANGE", "z", "0", "-1", "WITHSCORES"},
		{"ZRANGE", "z", "0", "-1", "REV", "WITHSCORES"},
		{"ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "1", "10"},
		{"ZRANGEBYSCORE", "z", "-inf", "1732512345020", "WITHSCORES"},
		{"ZRANGEBYLEX", "z", "-", "+"},
		{"ZREVRANGEBYLEX", "z", "+", "-"},
		{"ZSCAN", "z", "0", "MATCH", "*5"},
		{"ZADD", "z", "1", "x"},
		{"ZPOPMIN", "z"},
		{"ZADD", "z", "1732512346000", "y"},
		{"ZPOPMAX", "z", "1"},
		{"ZREM", "z", "1732512345000", "x"},
	} {
		req := request(args...)
		send(req) // grows the buffers
		require.Zero(t, testing.AllocsPerRun(100, func() { send(req) }), "%q", args)
	}
}

// TestSetNoAllocs: SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SMEMBERS, SSCAN, SRANDMEMBER,
// SPOP and SMOVE allocate nothing once the client's buffers have grown, on an intset, a
// small set and a big one.
func TestSetNoAllocs(t *testing.T) {
	s, c := fuzzServer(t)
	request := func(args ...string) [][]byte {
		req := make([][]byte, len(args))
		for i, a := range args {
			req[i] = []byte(a)
		}
		return req
	}
	sendReq := func(req [][]byte) {
		s.run(c, req)
		if c.W.B[0] == '-' {
			t.Fatalf("%q: %s", req, c.W.B)
		}
		c.W.B = c.W.B[:0]
	}
	send := func(args ...string) { sendReq(request(args...)) }
	for i := range 300 {
		send("SADD", "big", "user:"+strconv.Itoa(i))
		if i < 100 {
			send("SADD", "ids", strconv.Itoa(i))
			send("SADD", "small", "user:"+strconv.Itoa(i))
		}
	}
	for _, key := range []string{"ids", "small", "big"} {
		for _, args := range [][]string{
			{"SADD", key, "5", "user:5"},
			{"SISMEMBER", key, "user:50"},
			{"SISMEMBER", key, "50"},
			{"SMISMEMBER", key, "user:1", "2", "x"},
			{"SCARD", key},
			{"SMEMBERS", key},
			{"SSCAN", key, "0", "MATCH", "*5"},
			{"SRANDMEMBER", key},
			{"SRANDMEMBER", key, "5"},
			{"SADD", key, "7000", "user:7000"},
			{"SREM", key, "7000", "user:7000"},
			{"SMOVE", key, "other", "user:7"},
			{"SMOVE", "other", key, "user:7"},
			{"SPOP", key},
		} {
			t.Run(key+" "+args[0], func(t *testing.T) {
				req := request(args...)
				sendReq(req) // grows the buffers
				require.Zero(t, testing.AllocsPerRun(100, func() { sendReq(req) }), "%q", args)
			})
		}
	}
}
