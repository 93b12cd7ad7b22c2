package loadtest

import (
	"fmt"
	"net"
	"time"
)

// Load is one measurement: Conns connections to Addr, each sending pipelines of Pipeline
// requests drawn at random from Requests and waiting for all the replies before the next.
type Load struct {
	Addr     string
	Conns    int
	Pipeline int
	// Requests are encoded requests; one element measures a single (hot) key.
	Requests [][]byte
	// Commands is how many commands each request holds, back to back (a sliding log's ZADD,
	// ZREMRANGEBYSCORE and ZCARD); 0 means 1. A request counts once, with all its replies.
	Commands int
	// Warmup runs before the measurement and is not counted.
	Warmup time.Duration
	// Duration is how long the measurement lasts.
	Duration time.Duration
}

// Result is what one Load measured.
type Result struct {
	// Requests is how many replies arrived in the measurement.
	Requests uint64
	// Denied is how many of them began with the integer 1: a limited decision.
	Denied uint64
	// Elapsed is how long the measurement lasted.
	Elapsed time.Duration
	// Latency holds the round trip of each pipeline; with Pipeline 1, of each request.
	Latency Histogram
}

// replies returns the replies a pipeline of l waits for.
func (l Load) replies() int { return l.Pipeline * max(l.Commands, 1) }

// PerSecond returns the requests per second the measurement completed.
func (r *Result) PerSecond() float64 { return float64(r.Requests) / r.Elapsed.Seconds() }

// Run performs l. A connection that fails, or any error reply, fails the whole run: a
// benchmark of errors measures nothing.
func Run(l Load) (*Result, error) {
	conns := make([]net.Conn, l.Conns)
	for i := range conns {
		c, err := net.Dial("tcp", l.Addr)
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			return nil, fmt.Errorf("loadtest: dial %s: %w", l.Addr, err)
		}
		conns[i] = c
	}
	start := time.Now().Add(l.Warmup)
	return drive(conns, l, start, start.Add(l.Duration))
}
