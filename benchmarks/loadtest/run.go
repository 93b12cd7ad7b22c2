package loadtest

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
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
	end := start.Add(l.Duration)
	results := make([]Result, l.Conns)
	errs := make([]error, l.Conns)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			errs[i] = worker(c, l, uint64(i), start, end, &results[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	total := &Result{Elapsed: l.Duration}
	for i := range results {
		total.Requests += results[i].Requests
		total.Denied += results[i].Denied
		total.Latency.Merge(&results[i].Latency)
	}
	return total, nil
}

// worker drives one connection until end, counting into res what completes in [start, end).
func worker(c net.Conn, l Load, seed uint64, start, end time.Time, res *Result) error {
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	w := bufio.NewWriterSize(c, 64<<10)
	r := NewReader(c)
	for {
		for range l.Pipeline {
			w.Write(l.Requests[rng.IntN(len(l.Requests))])
		}
		t0 := time.Now()
		if err := w.Flush(); err != nil {
			return fmt.Errorf("loadtest: write: %w", err)
		}
		var denied uint64
		for range l.Pipeline {
			v, err := r.Next()
			if err != nil {
				return fmt.Errorf("loadtest: reply: %w", err)
			}
			if v == 1 {
				denied++
			}
		}
		t1 := time.Now()
		if !t1.Before(start) && t1.Before(end) {
			res.Requests += uint64(l.Pipeline)
			res.Denied += denied
			res.Latency.Record(t1.Sub(t0))
		}
		if !t1.Before(end) {
			return nil
		}
	}
}
