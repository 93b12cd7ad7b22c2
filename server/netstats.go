package server

import (
	"math"
	"sync/atomic"
	"time"
	"unsafe"
)

// INFO's network figures (total_net_input_bytes, total_net_output_bytes, total_reads_processed,
// total_writes_processed) and the instantaneous rates Redis samples ten times a second.
//
// Counting costs the path nothing measurable: a client's reader and writer add to plain
// fields of the client, which only the goroutine serving it touches. An event loop folds
// them into its own plain tally when it writes the client's replies, and publishes the
// tally once per round of epoll_wait; a client on a goroutine of its own folds them into
// atomics of its own once per pipeline; a client that goes adds its figures to the
// server's total of gone clients. No counter on the path is shared between cores.

// netTally is what a loop's clients read and wrote.
type netTally struct {
	in, out, reads, writes int64
}

// netFigures are published figures.
type netFigures struct {
	in, out, reads, writes atomic.Int64
}

func (f *netFigures) add(t netTally) {
	f.in.Add(t.in)
	f.out.Add(t.out)
	f.reads.Add(t.reads)
	f.writes.Add(t.writes)
}

func (f *netFigures) load() netTally {
	return netTally{f.in.Load(), f.out.Load(), f.reads.Load(), f.writes.Load()}
}

func (t *netTally) plus(u netTally) {
	t.in += u.in
	t.out += u.out
	t.reads += u.reads
	t.writes += u.writes
}

// takeNet returns what c read and wrote since the last take, and starts again from zero.
func (c *client) takeNet() netTally {
	t := netTally{in: c.rd.NRead, reads: c.rd.Reads, out: c.nwritten, writes: c.writes}
	c.rd.NRead, c.rd.Reads, c.nwritten, c.writes = 0, 0, 0, 0
	return t
}

// foldNet adds what c read and wrote to its own figures: a client that no loop serves,
// once per pipeline.
func (c *client) foldNet() {
	if c.rd.NRead|c.nwritten != 0 {
		c.net.add(c.takeNet())
	}
}

// netTotals sums every figure: the loops', the clients' own and the gone clients'.
func (s *Server) netTotals() netTally {
	var t netTally
	s.mu.Lock()
	for _, l := range s.loops {
		t.plus(l.published())
	}
	for _, c := range s.clients {
		t.plus(c.net.load())
	}
	t.plus(s.netGone)
	t.minus(s.netReset)
	s.mu.Unlock()
	return t
}

// resetNet starts the figures again from zero (CONFIG RESETSTAT): what is counted so far
// is subtracted from now on.
func (s *Server) resetNet() {
	t := s.netTotals()
	s.mu.Lock()
	s.netReset.plus(t)
	s.mu.Unlock()
}

func (t *netTally) minus(u netTally) {
	t.in -= u.in
	t.out -= u.out
	t.reads -= u.reads
	t.writes -= u.writes
}

// Redis's instantaneous metrics: a sample every 100 ms, the mean of the last 16.
const instantSamples = 16

// instant keeps the samples of one rate.
type instant struct {
	last    int64 // the counter at the last sample
	samples [instantSamples]float64
	idx     int
}

// sample notes the rate since the last sample, per second.
func (in *instant) sample(v int64, elapsed time.Duration) {
	if elapsed > 0 {
		in.samples[in.idx] = float64(v-in.last) / elapsed.Seconds()
		in.idx = (in.idx + 1) % instantSamples
	}
	in.last = v
}

func (in *instant) mean() float64 {
	sum := 0.0
	for _, x := range in.samples {
		sum += x
	}
	return sum / instantSamples
}

// instants are the sampled rates, taken by the expiry loop's 100 ms tick.
type instants struct {
	at            time.Time
	ops, in, out  instant
	opsPerSec     atomic.Int64
	expireCapped  atomic.Int64  // slow expiry cycles that ran out of time (expired_time_cap_reached_count)
	inKbps, outKb atomic.Uint64 // math.Float64bits of KB/s
}

// sampleInstants takes one sample of each rate.
func (s *Server) sampleInstants() {
	ins := &s.instants
	now := time.Now()
	var elapsed time.Duration
	if !ins.at.IsZero() {
		elapsed = now.Sub(ins.at)
	}
	ins.at = now
	net := s.netTotals()
	ins.ops.sample(s.totals().commands, elapsed)
	ins.in.sample(net.in, elapsed)
	ins.out.sample(net.out, elapsed)
	ins.opsPerSec.Store(int64(ins.ops.mean()))
	ins.inKbps.Store(math.Float64bits(ins.in.mean() / 1024))
	ins.outKb.Store(math.Float64bits(ins.out.mean() / 1024))
}

// clientBufs are a client's buffer sizes as CLIENT LIST and INFO clients show them to other
// clients: published by the goroutine serving the client after it writes its replies, and
// only when they changed, which they seldom do.
type clientBufs struct {
	qbuf, qbufCap, rbs, rbp atomic.Int64 // unparsed bytes; read buffer; reply buffer; its peak
	seen                    [4]int64     // what was published last, for the serving goroutine
}

// noteBufs publishes c's buffer sizes; pending is the length of the replies just written.
func (c *client) noteBufs(pending int) {
	b := &c.bufs
	now := [4]int64{int64(c.rd.End - c.rd.Start), int64(len(c.rd.Buf)), int64(cap(c.W.B)), max(b.seen[3], int64(pending))}
	if now == b.seen {
		return
	}
	b.seen = now
	b.qbuf.Store(now[0])
	b.qbufCap.Store(now[1])
	b.rbs.Store(now[2])
	b.rbp.Store(now[3])
}

// clientMem is what CLIENT LIST shows of a client's memory.
type clientMem struct {
	qbuf, qbufFree, argv, multi, rbs, rbp, obl, oll, omem int64
}

// clientSize is what a client's own structures take, besides its buffers.
const clientSize = int64(unsafe.Sizeof(client{}))

func (m clientMem) total() int64 {
	return clientSize + m.qbuf + m.qbufFree + m.argv + m.multi + m.rbs + m.omem
}

// memory is c's memory as by sees it: exact for by itself, running args now; another
// client's buffers as it published them after its last replies (noteBufs), and the
// output a detached client has queued.
func (c *client) memory(by *client, args [][]byte) clientMem {
	var m clientMem
	if c == by {
		// The request running is still in the buffer, as in Redis's querybuf.
		m.qbuf, m.qbufFree = int64(c.rd.End-min(c.rd.Last, c.rd.Start)), int64(len(c.rd.Buf)-c.rd.End)
		for _, a := range args {
			m.argv += int64(len(a))
		}
		if c.tx != nil {
			for _, q := range c.tx.queued {
				for _, a := range q.args {
					m.multi += int64(len(a))
				}
			}
		}
		m.rbs, m.rbp, m.obl = int64(cap(c.W.B)), max(c.bufs.seen[3], int64(len(c.W.B))), int64(len(c.W.B))
	} else {
		m.qbuf = c.bufs.qbuf.Load()
		m.qbufFree = c.bufs.qbufCap.Load() - m.qbuf
		m.rbs, m.rbp = c.bufs.rbs.Load(), c.bufs.rbp.Load()
	}
	if o := c.outbox(); o != nil {
		o.mu.Lock()
		m.omem = int64(o.queued)
		o.mu.Unlock()
		if m.omem > 0 {
			m.oll = 1
		}
	}
	return m
}

// outbox is c's output once detached, nil before; safe from any goroutine.
func (c *client) outbox() *outbox { return c.outPub.Load() }
