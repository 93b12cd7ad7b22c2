//go:build !linux

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

// drive runs a goroutine per connection; Linux has an event loop instead (run_linux.go).
func drive(conns []net.Conn, l Load, start, end time.Time) (*Result, error) {
	results := make([]Result, len(conns))
	errs := make([]error, len(conns))
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
		for range l.replies() {
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
