package algorithms

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"testing"
	"time"
)

// The fuzz tests drive one key through a run of calls (ops: 4 bytes each,
// a signed time step, a cost and a byte for the algorithm's own use) and
// compare every decision with an independent model of the algorithm, kept
// in big or plain integers the simple way. Besides the model they check the
// contract (violation), that the reply is honest (remaining units pass and
// one more does not; retrying after retry_after passes and 1ns earlier does
// not), the algorithm's limit over the whole run, and that lazy expiry of
// the key changes nothing. Runs are cut at maxOps calls so that each input
// stays fast.

const maxOps = 300

// op is one call of a run.
type op struct {
	step int64 // signed time step, in units of the run
	cost int64
	x    byte
}

func ops(b []byte) []op {
	var out []op
	for len(b) >= 4 && len(out) < maxOps {
		out = append(out, op{step: int64(int16(uint16(b[0])<<8 | uint16(b[1]))), cost: int64(b[2]), x: b[3]})
		b = b[4:]
	}
	return out
}

// clock moves the run's time: forward only unless back is set, never
// before base nor past base + 2^59 (so that now + any retry_after stays
// below MaxTime). It keeps the latest time seen.
type clock struct {
	now, latest int64
	back        bool
}

func (c *clock) move(o op, unit int64) int64 {
	s := o.step
	if !c.back && s < 0 {
		s = -s
	}
	c.now = min(max(base, c.now+s*unit), base+1<<59)
	c.latest = max(c.latest, c.now)
	return c.now
}

func abs64(x int64) int64 {
	if x == math.MinInt64 {
		return math.MaxInt64
	}
	return max(x, -x)
}

func bigI(x int64) *big.Int { return big.NewInt(x) }

// ceilBig is ceil(a/b) for a >= 0, b > 0.
func ceilBig(a, b *big.Int) int64 {
	q, r := new(big.Int).QuoRem(a, b, new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, bigI(1))
	}
	return q.Int64()
}

// run is one key under test, twice: as stored forever and with lazy expiry.
type run struct {
	t          *testing.T
	a          Algorithm
	probe      Algorithm // a for the honesty of remaining (Concurrency: another id)
	k, e       key
	compareExp bool // the clock never stepped back: both keys must agree
}

func newRun(t *testing.T, a Algorithm) *run {
	return &run{t: t, a: a, probe: a, e: key{expire: true}, compareExp: true}
}

// call makes one call, checks the contract and honesty, and returns the decision.
func (r *run) call(now, cost int64) Decision {
	r.t.Helper()
	in, inExists := r.k.st, r.k.exists
	d, err := r.k.try(r.a, now, cost)
	if err != nil {
		r.t.Fatal(err)
	}
	de, err := r.e.try(r.a, now, cost)
	if err != nil {
		r.t.Fatal(err)
	}
	if r.compareExp && de != d {
		r.t.Fatalf("at %d cost %d: lazy expiry changed %+v to %+v", now, cost, d, de)
	}
	if v := honest(r.a, r.probe, in, inExists, r.k, now, cost, d); v != "" {
		r.t.Fatalf("%T at %d cost %d %+v: %s", r.a, now, cost, d, v)
	}
	return d
}

// honest checks that a decision d of a at now for cost, from the state in,
// tells the truth. out is the key after the call.
func honest(a, probe Algorithm, in State, exists bool, out key, now, cost int64, d Decision) string {
	if d.Remaining > 0 {
		r, _, _, err := probe.Take(now, out.st, out.exists, d.Remaining, nil)
		if err != nil || r.Limited {
			return fmt.Sprintf("remaining %d does not pass: %+v %v", d.Remaining, r, err)
		}
	}
	if d.Remaining < d.Limit {
		r, _, _, err := probe.Take(now, out.st, out.exists, d.Remaining+1, nil)
		if err != nil || !r.Limited {
			return fmt.Sprintf("remaining %d + 1 passes: %+v %v", d.Remaining, r, err)
		}
	}
	if d.Limited && d.RetryAfter > 0 {
		r, _, _, err := a.Take(now+d.RetryAfter, in, exists, cost, nil)
		if err != nil || r.Limited {
			return fmt.Sprintf("still limited after retry_after: %+v %v", r, err)
		}
		r, _, _, err = a.Take(now+d.RetryAfter-1, in, exists, cost, nil)
		if err != nil || !r.Limited {
			return fmt.Sprintf("passes 1ns before retry_after: %+v %v", r, err)
		}
	}
	return ""
}

// admission is an admitted call: its time and cost.
type admission struct{ at, cost int64 }

// bucketModel is a continuous bucket in exact integers: level is the units
// (tokens, or units waiting) times the period, and moves by rate per ns.
type bucketModel struct {
	capacity, rate, period int64
	level                  *big.Int
	t                      int64
	exists                 bool
}

// tokens evaluates a token bucket at now: the decision and the commit.
func (m *bucketModel) tokens(now, cost int64) (Decision, int64, *big.Int) {
	p, full := bigI(m.period), new(big.Int).Mul(bigI(m.capacity), bigI(m.period))
	te, level := now, new(big.Int).Set(full)
	if m.exists {
		te = max(now, m.t)
		level.Mul(bigI(te-m.t), bigI(m.rate)).Add(level, m.level)
		if level.Cmp(full) > 0 {
			level.Set(full)
		}
	}
	have := new(big.Int).Quo(level, p).Int64()
	d := Decision{Limit: m.capacity, RetryAfter: -1}
	after := new(big.Int).Set(level)
	switch {
	case cost > m.capacity:
		d.Limited = true
	case cost > have:
		d.Limited = true
		need := new(big.Int).Mul(bigI(cost), p)
		d.RetryAfter = te - now + ceilBig(need.Sub(need, level), bigI(m.rate))
	default:
		after.Sub(level, new(big.Int).Mul(bigI(cost), p))
	}
	d.Remaining = new(big.Int).Quo(after, p).Int64()
	if after.Cmp(full) < 0 {
		d.ResetAfter = te - now + ceilBig(new(big.Int).Sub(full, after), bigI(m.rate))
	}
	return d, te, after
}

// queue evaluates a leaky bucket at now: the decision and the commit.
func (m *bucketModel) queue(now, cost int64) (Decision, int64, *big.Int) {
	p := bigI(m.period)
	te, level := now, new(big.Int)
	if m.exists {
		te = max(now, m.t)
		level.Mul(bigI(te-m.t), bigI(m.rate)).Sub(m.level, level)
		if level.Sign() < 0 {
			level.SetInt64(0)
		}
	}
	waiting := ceilBig(level, p)
	d := Decision{Limit: m.capacity, RetryAfter: -1}
	after := new(big.Int).Set(level)
	switch {
	case cost > m.capacity:
		d.Limited = true
	case waiting > m.capacity-cost:
		d.Limited = true
		excess := new(big.Int).Mul(bigI(m.capacity-cost), p)
		d.RetryAfter = te - now + ceilBig(excess.Sub(level, excess), bigI(m.rate))
	default:
		after.Add(level, new(big.Int).Mul(bigI(cost), p))
		if waiting > 0 {
			d.Delay = te - now + ceilBig(level, bigI(m.rate))
		}
	}
	d.Remaining = max(0, m.capacity-ceilBig(after, p))
	if after.Sign() > 0 {
		d.ResetAfter = te - now + ceilBig(after, bigI(m.rate))
	}
	return d, te, after
}

// bucketParams turns fuzz input into a bucket: small (the state is always
// exact) or, with big set, large enough that the phase is rounded.
func bucketParams(capacity, rate, period int64, big bool) (c, r, p int64) {
	if big {
		return 1 + abs64(capacity)%(1<<30), 1 + abs64(rate)%1000, 1 + abs64(period)%(1<<47)
	}
	return 1 + abs64(capacity)%1000, 1 + abs64(rate)%1000, 1 + abs64(period)%1e12
}

// exactPhase reports whether the packed word keeps every phase of the bucket.
func exactPhase(capacity, rate, period int64) bool {
	g := gcd(rate, period)
	return bits64(capacity)+bits64(period/g-1) <= packBits
}

func bits64(x int64) int {
	n := 0
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}

func FuzzTokenBucket(f *testing.F) {
	f.Add(int64(10), int64(10), int64(1e9), uint8(0), []byte{0, 0, 5, 0, 0, 1, 3, 0, 0, 200, 1, 0, 0, 0, 10, 0, 255, 255, 1, 0})
	f.Add(int64(3), int64(3), int64(1e9), uint8(2), []byte{0, 100, 1, 0, 255, 0, 1, 0, 0, 7, 2, 0, 128, 0, 0, 0})
	f.Add(int64(5000), int64(1), int64(86400e9), uint8(1), []byte{0, 1, 200, 0, 0, 2, 1, 0, 0, 3, 1, 0})
	f.Add(int64(-1), int64(0), int64(-5), uint8(3), []byte{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, capacity, refill, period int64, flags uint8, in []byte) {
		raw := TokenBucket{capacity, refill, period}
		if err := raw.Validate(); err != nil {
			requireOneOf(t, err, ErrCapacity, ErrRefill, ErrPeriod, ErrRefillCapacity)
		} else {
			var k key
			if _, err := k.try(raw, base, abs64(capacity)); err != nil {
				t.Fatal(err)
			}
		}

		c, rf, p := bucketParams(capacity, refill, period, flags&1 != 0)
		tb := TokenBucket{c, rf, p}
		if tb.Validate() != nil {
			return // too slow to fill
		}
		exact := exactPhase(c, rf, p)
		m := bucketModel{capacity: c, rate: rf, period: p}
		r := newRun(t, tb)
		clk := clock{now: base, back: flags&2 != 0}
		unit := max(1, p/rf/64)
		var adm []admission
		for _, o := range ops(in) {
			now := clk.move(o, unit)
			if clk.back {
				r.compareExp = false
			}
			cost := o.cost % (c + 2)
			if o.x == 255 {
				cost = math.MaxInt64
			}
			d := r.call(now, cost)
			want, te, level := m.tokens(now, cost)
			switch {
			case exact && d != want:
				t.Fatalf("at %d cost %d: got %+v, the model says %+v", now, cost, d, want)
			case !exact && (d.Remaining > want.Remaining || !d.Limited && want.Limited):
				t.Fatalf("at %d cost %d: got %+v, more than the model's %+v", now, cost, d, want)
			}
			if !d.Limited && cost > 0 {
				m.level, m.t, m.exists = level, te, true
				adm = append(adm, admission{te, cost})
			}
		}
		// Over any interval [a, b] of admission times: at most
		// capacity + floor((b-a)*refill/period).
		for j := range adm {
			sum := int64(0)
			for i := j; i >= 0; i-- {
				sum += adm[i].cost
				if sum > c+mulDiv(adm[j].at-adm[i].at, rf, p) {
					t.Fatalf("%d tokens in [%d, %d]", sum, adm[i].at, adm[j].at)
				}
			}
		}
	})
}

func FuzzLeakyBucket(f *testing.F) {
	f.Add(int64(3), int64(1), int64(1e9), uint8(0), []byte{0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 64, 1, 0})
	f.Add(int64(6), int64(3), int64(1e9), uint8(2), []byte{0, 0, 2, 0, 0, 10, 1, 0, 255, 0, 3, 0, 0, 1, 0, 0})
	f.Add(int64(5000), int64(1), int64(86400e9), uint8(1), []byte{0, 1, 200, 0, 0, 2, 1, 0, 0, 3, 1, 0})
	f.Fuzz(func(t *testing.T, capacity, leak, period int64, flags uint8, in []byte) {
		raw := LeakyBucket{capacity, leak, period}
		if err := raw.Validate(); err != nil {
			requireOneOf(t, err, ErrCapacity, ErrLeak, ErrPeriod, ErrLeakCapacity)
		}

		c, l, p := bucketParams(capacity, leak, period, flags&1 != 0)
		lb := LeakyBucket{c, l, p}
		if lb.Validate() != nil {
			return
		}
		exact := exactPhase(c, l, p)
		m := bucketModel{capacity: c, rate: l, period: p}
		r := newRun(t, lb)
		clk := clock{now: base, back: flags&2 != 0}
		unit := max(1, p/l/64)
		var lastGo, lastCost int64 = -1, 0
		for _, o := range ops(in) {
			now := clk.move(o, unit)
			if clk.back {
				r.compareExp = false
			}
			cost := o.cost % (c + 2)
			d := r.call(now, cost)
			want, te, level := m.queue(now, cost)
			switch {
			case exact && d != want:
				t.Fatalf("at %d cost %d: got %+v, the model says %+v", now, cost, d, want)
			case !exact && (d.Remaining > want.Remaining || !d.Limited && want.Limited):
				t.Fatalf("at %d cost %d: got %+v, more than the model's %+v", now, cost, d, want)
			}
			if d.Limited || cost == 0 {
				continue
			}
			m.level, m.t, m.exists = level, te, true
			// Never more than capacity waiting.
			if w := ceilBig(level, bigI(p)); w > c {
				t.Fatalf("%d units waiting", w)
			}
			// Callers proceed in order, each after the units ahead have
			// drained: cost units take at least cost*period/leak - 1ns.
			if at := now + d.Delay; !clk.back && lastGo >= 0 {
				if at < lastGo || (at-lastGo+1)*l < lastCost*p && exact {
					t.Fatalf("proceeds at %d, %dns after a caller of cost %d", at, at-lastGo, lastCost)
				}
			}
			lastGo, lastCost = now+d.Delay, cost
		}
	})
}

// logModel is a sliding log as a list of (µs, count), oldest first.
type logModel struct{ entries []admission }

func (m *logModel) take(p SlidingLog, now, cost int64) (Decision, func()) {
	var kept []admission
	var used int64
	for _, e := range m.entries {
		if e.at*1000+p.Window > now {
			kept = append(kept, e)
			used += e.cost
		}
	}
	d := Decision{Limit: p.Limit, RetryAfter: -1}
	after := used
	switch {
	case cost > p.Limit:
		d.Limited = true
	case used+cost > p.Limit:
		d.Limited = true
		gone := int64(0)
		for _, e := range kept {
			if gone += e.cost; used-gone+cost <= p.Limit {
				d.RetryAfter = e.at*1000 + p.Window - now
				break
			}
		}
	default:
		after = used + cost
	}
	d.Remaining = max(0, p.Limit-after)
	at := (now + 999) / 1000
	if len(kept) > 0 && at <= kept[len(kept)-1].at {
		at = kept[len(kept)-1].at
	}
	if d.Limited || cost == 0 {
		if len(kept) > 0 {
			d.ResetAfter = kept[len(kept)-1].at*1000 + p.Window - now
		}
		return d, func() {}
	}
	d.ResetAfter = at*1000 + p.Window - now
	return d, func() {
		if n := len(kept); n > 0 && kept[n-1].at == at {
			kept[n-1].cost += cost
		} else {
			kept = append(kept, admission{at, cost})
		}
		m.entries = kept
	}
}

// canonicalLog says how a stored sliding log differs from the one logWriter
// writes for its entries, or "": the base is the first entry's time, and
// whichever way take built it, the log has one encoding.
func canonicalLog(st State, maxEntries int) string {
	r := logReader{b: st.Bytes, t: st.Num, max: maxEntries}
	w := logWriter{}
	for e, c, ok := r.next(); ok; e, c, ok = r.next() {
		w.add(e, c)
	}
	switch {
	case r.bad:
		return "the stored log does not decode"
	case w.base != st.Num || !bytes.Equal(w.buf, st.Bytes):
		return fmt.Sprintf("log %x at base %d, written anew %x at base %d", st.Bytes, st.Num, w.buf, w.base)
	}
	return ""
}

func FuzzSlidingLog(f *testing.F) {
	f.Add(int64(10), int64(1e9), uint8(0), []byte{0, 0, 3, 0, 0, 200, 3, 0, 0, 200, 4, 0, 0, 100, 5, 0, 1, 0, 1, 0})
	f.Add(int64(3), int64(1e6), uint8(2), []byte{0, 0, 3, 0, 255, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0})
	f.Add(int64(100), int64(5e9), uint8(4), []byte{0, 1, 1, 0, 0, 2, 1, 0, 0, 3, 1, 0, 0, 4, 1, 0, 0, 5, 1, 0})
	f.Fuzz(func(t *testing.T, limit, window int64, flags uint8, in []byte) {
		if err := (SlidingLog{limit, window}).Validate(); err != nil {
			requireOneOf(t, err, ErrLimit, ErrWindow)
		}
		p := SlidingLog{Limit: 1 + abs64(limit)%1000, Window: 1 + abs64(window)%1e12}
		// With flags&4 the log holds only 1 to 4 entries and merges.
		maxEntries := maxLogEntries
		if flags&4 != 0 {
			maxEntries = 1 + int(flags>>3)%4
		}
		var m logModel
		var k key
		clk := clock{now: base, back: flags&2 != 0}
		unit := max(1, p.Window/64)
		var adm []admission // at the latest time of an admission, in ns
		var eff int64
		for _, o := range ops(in) {
			now := clk.move(o, unit)
			cost := o.cost % (p.Limit + 2)
			in, exists := k.st, k.exists
			d, next, store, err := p.take(now, k.st, k.exists, cost, nil, maxEntries)
			if err != nil {
				t.Fatal(err)
			}
			if v := violation(now, cost, d, store, next, in); v != "" {
				t.Fatalf("at %d cost %d %+v: %s", now, cost, d, v)
			}
			if store {
				if v := canonicalLog(next, maxEntries); v != "" {
					t.Fatalf("at %d cost %d: %s", now, cost, v)
				}
				k.st, k.exists = State{Num: next.Num, Bytes: bytes.Clone(next.Bytes), Expire: next.Expire}, true
				eff = max(eff, now)
				adm = append(adm, admission{eff, cost})
			}
			if maxEntries == maxLogEntries {
				if v := honest(p, p, in, exists, k, now, cost, d); v != "" {
					t.Fatalf("at %d cost %d %+v: %s", now, cost, d, v)
				}
				want, commit := m.take(p, now, cost)
				if d != want {
					t.Fatalf("at %d cost %d: got %+v, the model says %+v", now, cost, d, want)
				}
				if store {
					commit()
				}
			}
		}
		// At most limit units in any window, on the clock of the admissions
		// (the latest time the log has seen): brute force.
		for j := range adm {
			sum := int64(0)
			for i := j; i >= 0 && adm[i].at > adm[j].at-p.Window; i-- {
				sum += adm[i].cost
			}
			if sum > p.Limit {
				t.Fatalf("%d units in the window ending %d", sum, adm[j].at)
			}
		}
	})
}

func FuzzSlidingCounter(f *testing.F) {
	f.Add(int64(100), int64(10e9), uint8(0), []byte{0, 100, 50, 0, 0, 150, 62, 0, 0, 0, 1, 0, 0, 1, 40, 0})
	f.Add(int64(3), int64(3e9), uint8(2), []byte{0, 0, 3, 0, 255, 0, 1, 0, 0, 70, 2, 0, 0, 64, 1, 0})
	f.Fuzz(func(t *testing.T, limit, window int64, flags uint8, in []byte) {
		if err := (SlidingCounter{limit, window}).Validate(); err != nil {
			requireOneOf(t, err, ErrLimit, ErrApproxLimit, ErrWindow)
		}
		p := SlidingCounter{Limit: 1 + abs64(limit)%1000, Window: 1 + abs64(window)%1e12}
		if flags&1 != 0 {
			p.Limit = math.MaxUint32 - abs64(limit)%1000
		}
		w := p.Window
		counts := map[int64]int64{} // window index -> units
		var last int64
		r := newRun(t, p)
		clk := clock{now: base, back: flags&2 != 0}
		unit := max(1, w/64)
		for _, o := range ops(in) {
			now := clk.move(o, unit)
			if clk.back {
				r.compareExp = false
			}
			cost := o.cost % 103
			if flags&1 != 0 && o.x&1 != 0 {
				cost = p.Limit - o.cost
			}
			d := r.call(now, cost)

			te := now
			if len(counts) > 0 {
				te = max(now, last)
			}
			curr, prev := counts[te/w], counts[te/w-1]
			start := te - te%w
			lim := new(big.Int).Mul(bigI(p.Limit), bigI(w))
			prevW := new(big.Int).Mul(bigI(prev), bigI(w-(te-start)))
			used := new(big.Int).Mul(bigI(curr+cost), bigI(w))
			fits := cost <= p.Limit && used.Add(used, prevW).Cmp(lim) <= 0
			if d.Limited == fits {
				t.Fatalf("at %d cost %d: limited %v with curr %d prev %d", now, cost, d.Limited, curr, prev)
			}
			after := curr
			if fits {
				after += cost
			}
			room := new(big.Int).Mul(bigI(after), bigI(w))
			room.Sub(lim, room.Add(room, prevW))
			if room.Sign() < 0 {
				room.SetInt64(0)
			}
			if want := room.Quo(room, bigI(w)).Int64(); d.Remaining != want {
				t.Fatalf("at %d: remaining %d, want %d", now, d.Remaining, want)
			}
			if fits && cost > 0 {
				counts[te/w] += cost
				last = te
				// Any window of length w holds at most 2*limit.
				if counts[te/w]+counts[te/w-1] > 2*p.Limit || counts[te/w] > p.Limit {
					t.Fatalf("window %d holds %d", te/w, counts[te/w])
				}
			}
		}
	})
}

func FuzzFixedWindow(f *testing.F) {
	f.Add(int64(3), int64(1e9), uint8(0), []byte{0, 32, 2, 0, 0, 25, 1, 0, 0, 0, 1, 0, 0, 7, 3, 0})
	f.Add(int64(1), int64(1e6), uint8(2), []byte{0, 0, 1, 0, 255, 0, 1, 0, 1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, limit, window int64, flags uint8, in []byte) {
		if err := (FixedWindow{Limit: limit, Window: window}).Validate(); err != nil {
			requireOneOf(t, err, ErrLimit, ErrWindow)
		}
		p := FixedWindow{Limit: 1 + abs64(limit)%1000, Window: 1 + abs64(window)%1e12}
		w := p.Window
		counts := map[int64]int64{}
		var last int64
		r := newRun(t, p)
		clk := clock{now: base, back: flags&2 != 0}
		unit := max(1, w/64)
		for _, o := range ops(in) {
			now := clk.move(o, unit)
			if clk.back {
				r.compareExp = false
			}
			cost := o.cost % (p.Limit + 2)
			d := r.call(now, cost)

			te := now
			if len(counts) > 0 {
				te = max(now, last)
			}
			count, end := counts[te/w], te-te%w+w
			want := Decision{Limit: p.Limit, RetryAfter: -1}
			after := count
			switch {
			case cost > p.Limit:
				want.Limited = true
			case count+cost > p.Limit:
				want.Limited, want.RetryAfter = true, end-now
			default:
				after += cost
			}
			want.Remaining = p.Limit - after
			if after > 0 {
				want.ResetAfter = end - now
			}
			if d != want {
				t.Fatalf("at %d cost %d: got %+v, the model says %+v", now, cost, d, want)
			}
			if !d.Limited && cost > 0 {
				counts[te/w] += cost
				last = te
				if counts[te/w] > p.Limit {
					t.Fatalf("window %d holds %d", te/w, counts[te/w])
				}
			}
		}
	})
}

// holderModel is a semaphore as a map from id to lease expiry (µs) and slots.
type holderModel map[string]admission

func (m holderModel) live(now int64) []string {
	var ids []string
	for id, h := range m {
		if h.at*1000 > now {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return int(m[a].at - m[b].at) })
	return ids
}

// retry is when excess slots of live holders (but skip) have expired.
func (m holderModel) retry(now, excess int64, skip string) int64 {
	freed := int64(0)
	for _, id := range m.live(now) {
		if id == skip {
			continue
		}
		if freed += m[id].cost; freed >= excess {
			return m[id].at*1000 - now
		}
	}
	return -2
}

func FuzzConcurrency(f *testing.F) {
	f.Add(int64(2), int64(10e9), uint8(0), []byte{0, 0, 1, 0, 0, 0, 1, 1, 0, 10, 1, 2, 0, 20, 1, 0, 0, 0, 0, 0x81, 0, 5, 2, 3})
	f.Add(int64(1), int64(1e6), uint8(2), []byte{0, 0, 1, 0, 255, 0, 1, 1, 0, 1, 0, 0x80, 0, 0, 3, 2})
	f.Fuzz(func(t *testing.T, limit, lease int64, flags uint8, in []byte) {
		if err := (Concurrency{Limit: limit, Lease: lease}).Validate(); err != nil {
			requireOneOf(t, err, ErrLimit, ErrLease)
		}
		lim, ls := 1+abs64(limit)%5, 1+abs64(lease)%1e12
		ids := []string{"a", "b", "c", "", "a long id that is not short at all"}
		m := holderModel{}
		var k, e key
		e.expire = true
		clk := clock{now: base, back: flags&2 != 0}
		unit := max(1, ls/64)
		for _, o := range ops(in) {
			now := clk.move(o, unit)
			id := ids[int(o.x&0x7f)%len(ids)]
			if o.x&0x80 != 0 { // release
				held := k.release(t, now, id)
				if !clk.back && e.release(t, now, id) != held {
					t.Fatal("lazy expiry changed a release")
				}
				h, ok := m[id]
				if want := ok && h.at*1000 > now; held != want {
					t.Fatalf("release %q at %d: %v, want %v", id, now, held, want)
				}
				if held { // stores the live holders but id
					for hid, h := range m {
						if h.at*1000 <= now || hid == id {
							delete(m, hid)
						}
					}
				}
				continue
			}
			p := Concurrency{Limit: lim, Lease: ls, ID: []byte(id)}
			r := run{t: t, a: p, probe: Concurrency{lim, ls, []byte("\xffprobe")}, k: k, e: e, compareExp: !clk.back}
			cost := o.cost % (lim + 2)
			d := r.call(now, cost)
			k, e = r.k, r.e

			own, others := int64(0), int64(0)
			for _, hid := range m.live(now) {
				if hid == id {
					own = m[hid].cost
				} else {
					others += m[hid].cost
				}
			}
			want := Decision{Limit: lim, RetryAfter: -1}
			after := own + others
			switch {
			case cost == 0:
				if after > lim {
					want.Limited, want.RetryAfter = true, m.retry(now, after-lim, "\x00none")
				}
			case cost > lim:
				want.Limited = true
			case others+cost > lim:
				want.Limited, want.RetryAfter = true, m.retry(now, others+cost-lim, id)
			default:
				after = others + cost
			}
			want.Remaining = max(0, lim-after)
			next := holderModel{} // what an acquire stores: the live holders
			for _, hid := range m.live(now) {
				next[hid] = m[hid]
			}
			if !want.Limited && cost > 0 {
				next[id] = admission{(now + ls + 999) / 1000, cost}
			}
			var latest int64
			for _, hid := range next.live(now) {
				latest = max(latest, next[hid].at)
			}
			if latest > 0 {
				want.ResetAfter = latest*1000 - now
			}
			if d != want {
				t.Fatalf("%q at %d cost %d: got %+v, the model says %+v", id, now, cost, d, want)
			}
			if !d.Limited && cost > 0 {
				m = next
				held := int64(0)
				for _, hid := range m.live(now) {
					held += m[hid].cost
				}
				if held > lim {
					t.Fatalf("%d slots held, limit %d", held, lim)
				}
			}
		}
	})
}

// FuzzState feeds every algorithm arbitrary parameters and an arbitrary
// stored state (a corrupt store, or a key written under other parameters):
// never a panic, a corrupt state is ErrCorrupt and nothing else, and a
// state that decodes gives a sane decision whose new state decodes again.
func FuzzState(f *testing.F) {
	f.Add(uint8(0), int64(10), int64(5), int64(1e9), base, int64(0), []byte(nil), int64(1), int64(0))
	f.Add(uint8(2), int64(10), int64(1e9), int64(0), base/1000, int64(0), []byte{0, 3, 1}, int64(2), int64(5))
	f.Add(uint8(5), int64(3), int64(1e9), int64(0), base/1000, int64(0), []byte{0, 1, 'a', 2, 1, 'b'}, int64(1), int64(-7))
	f.Add(uint8(1), int64(-1), int64(math.MaxInt64), int64(math.MinInt64), int64(-1), int64(-1), []byte{0xff, 0xff}, int64(-1), int64(1e18))
	f.Fuzz(func(t *testing.T, which uint8, a, b, c, num, num2 int64, bs []byte, cost, dt int64) {
		var algo Algorithm
		switch which % 7 {
		case 0:
			algo = TokenBucket{a, b, c}
		case 1:
			algo = LeakyBucket{a, b, c}
		case 2:
			algo = SlidingLog{a, b}
		case 3:
			algo = SlidingCounter{a, b}
		case 4:
			algo = FixedWindow{Limit: a, Window: b}
		case 5:
			algo = Concurrency{a, b, bs[:min(len(bs), int(uint64(c)%300))]}
		case 6:
			algo = FixedWindow{Limit: a, Window: b, Calendar: Calendar(uint64(c) % 6), Loc: fuzzZone(t, c)}
		}
		now := base + dt%(1<<60)
		st := State{Num: num, Num2: num2, Bytes: bs}
		for _, exists := range []bool{true, false} {
			d, next, store, err := algo.Take(now, st, exists, cost, nil)
			if err != nil {
				if errors.Is(err, ErrCorrupt) && !exists {
					t.Fatal("a new key is corrupt")
				}
				requireOneOf(t, err, ErrCorrupt, ErrCost, ErrClock, ErrHolders, ErrCapacity, ErrRefill, ErrLeak,
					ErrPeriod, ErrRefillCapacity, ErrLeakCapacity, ErrLimit, ErrApproxLimit, ErrWindow, ErrLease, ErrIDLength, ErrCalendar)
				if store || !sameState(next, st) {
					t.Fatal("an error stores")
				}
				continue
			}
			if v := violation(now, cost, d, store, next, st); v != "" {
				t.Fatalf("%+v store %v: %s", d, store, v)
			}
			if store {
				if _, _, _, err := algo.Take(now+1, next, true, 0, nil); err != nil {
					t.Fatalf("the stored state does not decode: %v", err)
				}
			}
		}
		if r, ok := algo.(refunder); ok {
			// A refund: never denied nor past full, gives back at most n, never lowers
			// Remaining, and what it stores decodes.
			for _, exists := range []bool{true, false} {
				before, _, _, perr := algo.Take(now, st, exists, 0, nil)
				d, next, store, got, err := r.Refund(now, st, exists, cost, nil)
				if err != nil {
					requireOneOf(t, err, ErrCorrupt, ErrCost, ErrClock, ErrCapacity, ErrRefill, ErrLeak,
						ErrPeriod, ErrRefillCapacity, ErrLeakCapacity, ErrLimit, ErrApproxLimit, ErrWindow, ErrCalendar)
					if store {
						t.Fatal("an error stores")
					}
					continue
				}
				switch {
				case d.Limited || d.Remaining < 0 || d.Remaining > d.Limit:
					t.Fatalf("refund %d: %+v", cost, d)
				case got < 0 || got > cost || store != (got > 0):
					t.Fatalf("refund %d gave back %d (store %v)", cost, got, store)
				case perr == nil && d.Remaining < before.Remaining:
					t.Fatalf("refund %d lowered remaining %d -> %d", cost, before.Remaining, d.Remaining)
				}
				if store && next.Expire > 0 {
					if _, _, _, err := algo.Take(now+1, next, true, 0, nil); err != nil {
						t.Fatalf("the refunded state does not decode: %v", err)
					}
				}
			}
		}
		held, next, err := Release(now, st, true, bs[:min(len(bs), 3)], nil)
		if err != nil {
			requireOneOf(t, err, ErrCorrupt, ErrClock, ErrIDLength)
		} else if held && next.Expire != 0 {
			if _, _, _, err := (Concurrency{1, 1, nil}).Take(now, next, true, 0, nil); err != nil {
				t.Fatalf("the released state does not decode: %v", err)
			}
		}
	})
}

// requireOneOf checks that err is one of the package's errors.
func requireOneOf(t *testing.T, err error, want ...error) {
	t.Helper()
	for _, w := range want {
		if errors.Is(err, w) {
			return
		}
	}
	t.Fatalf("unexpected error %v", err)
}

// fuzzZone is one of calendarZones, or nil (UTC), picked by n.
func fuzzZone(t *testing.T, n int64) *time.Location {
	i := int(uint64(n) / 6 % uint64(len(calendarZones)+1))
	if i == len(calendarZones) {
		return nil
	}
	return zone(t, calendarZones[i])
}

// FuzzCalendar checks every calendar period at any time in any of the test
// zones (calendarZones): it holds the time, starts on its first day's first
// instant, and the periods tile. A calendar window never admits more than
// its limit in one period: the count of a key is the model's, summed per
// period, whatever the clock does.
func FuzzCalendar(f *testing.F) {
	f.Add(int64(1711846800e9), uint8(2), int64(3), []byte{0, 32, 2, 0, 0, 25, 1, 0, 0, 0, 1, 0, 0, 7, 3, 0})
	f.Add(int64(1325239200e9), uint8(1), int64(8), []byte{0, 0, 1, 0, 255, 0, 1, 0, 1, 0, 1, 0})
	f.Add(int64(0), uint8(3), int64(0), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, ts int64, cal uint8, zoneAndLimit int64, in []byte) {
		c := Calendar(1 + cal%4)
		loc := fuzzZone(t, zoneAndLimit)
		ts = int64(uint64(ts) % MaxTime)
		checkBounds(t, c, ts, loc)

		p := FixedWindow{Limit: 1 + int64(uint64(zoneAndLimit)%7), Calendar: c, Loc: loc}
		var k key
		counts := map[int64]int64{} // by the period's start
		clk := clock{now: ts, back: cal&8 != 0}
		unit := c.Nominal() / 64
		for _, o := range ops(in) {
			now := clk.move(o, unit)
			if now < 0 || now >= MaxTime {
				return
			}
			cost := o.cost % (p.Limit + 2)
			d, err := k.try(p, now, cost)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Limited && cost > 0 {
				start, _ := c.Bounds(max(now, k.st.Num), loc)
				counts[start] += cost
				if counts[start] > p.Limit {
					t.Fatalf("%v in %v: %d admitted in the period from %v", c, loc, counts[start], time.Unix(0, start).In(loc))
				}
			}
		}
	})
}
