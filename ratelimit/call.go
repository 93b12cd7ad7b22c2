package ratelimit

import (
	"github.com/throttledhq/throttled/algorithms"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/gcra"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/resp"
	"github.com/throttledhq/throttled/upstream"
)

// CallKind is which verb a Call is.
type CallKind uint8

const (
	CallCell    CallKind = iota + 1 // CL.THROTTLE: Spec.Upstream 0 is no call
	CallGCRA                        // GCRA
	CallLimit                       // a native verb
	CallRelease                     // CONCURRENCY.RELEASE
	CallAllOf                       // ALLOF
)

// Call is one rate-limit request decided on states its caller brings (upstream mode's,
// read from the upstream and written back by compare-and-set), with the local verbs' code:
// a copy of the request, what it parsed into, and the reply of its last Eval.
type Call struct {
	kind CallKind
	buf  []byte   // the request's bytes
	args [][]byte // the request, in buf

	cell    gcra.CellParams
	red     gcra.GCRAParams
	limits  []limit
	keys    [][]byte // distinct
	keyOf   []int    // ALLOF: the index in keys of each limit's key
	states  []upstream.State
	results []pending
	scratch [][]byte

	W        resp.Writer // the reply of the last Eval, or Fail's error
	Decided  bool        // the reply is a decision, limited or not
	Limited  bool
	retry    int64 // ms, when limited: for the deny event
	block    Block // the denial's block (decision.block)
	now      int64 // the time of the last Eval
	Refunded int64 // units the last Eval's REFUNDs give back, when it writes
}

// Reset makes u ready for another request, keeping its buffers.
func (u *Call) Reset() {
	*u = Call{buf: u.buf[:0], args: u.args[:0], limits: u.limits[:0], keys: u.keys[:0], keyOf: u.keyOf[:0],
		states: u.states[:0], results: u.results[:0], scratch: u.scratch, W: resp.Writer{B: u.W.B[:0]}}
}

// Parse parses the request as the local handler would, with its errors: on a copy of it
// when own is set, for a call that outlives the handler; else on args themselves. proto is
// the client's protocol, in which the reply is written.
func (u *Call) Parse(kind CallKind, args [][]byte, own bool, proto int) error {
	u.kind, u.W.Proto = kind, proto
	if own {
		for _, a := range args {
			u.buf = append(u.buf, a...)
		}
		at := 0
		for _, a := range args {
			u.args = append(u.args, u.buf[at:at+len(a):at+len(a)])
			at += len(a)
		}
	} else {
		u.args = append(u.args, args...)
	}
	args = u.args
	var err error
	switch kind {
	case CallCell:
		u.cell, err = gcra.ParseCell(args[2:])
		u.keys = append(u.keys, args[1])
	case CallGCRA:
		u.red, err = gcra.ParseGCRA(args[2:])
		u.keys = append(u.keys, args[1])
	case CallLimit:
		verb, n, _ := nativeVerb(args[0])
		u.limits = append(u.limits, limit{})
		_, err = u.limits[0].parse(verb, n, args[1:], false)
		u.keys = append(u.keys, args[1])
	case CallRelease:
		u.keys = append(u.keys, args[1])
	case CallAllOf:
		if u.limits, err = parseAllOf(args[1:], u.limits); err != nil {
			return err
		}
	next:
		for i := range u.limits {
			for j, k := range u.keys {
				if string(k) == string(u.limits[i].key) {
					u.keyOf = append(u.keyOf, j)
					continue next
				}
			}
			u.keyOf = append(u.keyOf, len(u.keys))
			u.keys = append(u.keys, u.limits[i].key)
		}
	}
	if err != nil {
		return err
	}
	for range u.keys {
		u.states = append(u.states, upstream.State{})
	}
	for len(u.scratch) < max(len(u.limits), 1) {
		u.scratch = append(u.scratch, nil)
	}
	return nil
}

// Keys returns the call's distinct keys.
func (u *Call) Keys() [][]byte { return u.keys }

// States returns the states of the call's keys.
func (u *Call) States() []upstream.State { return u.states }

// Fail makes err the reply of the last Eval.
func (u *Call) Fail(err error) upstream.Outcome {
	u.W.B = u.W.B[:0]
	u.W.ErrorText(command.ErrorText(err))
	u.Decided = false
	return upstream.Verify
}

// Eval evaluates the call at now on its keys' states, with the local verbs' code.
func (u *Call) Eval(now int64) upstream.Outcome {
	u.W.B = u.W.B[:0]
	u.Decided, u.Limited, u.now, u.Refunded, u.block = true, false, now, 0, blockNone
	switch u.kind {
	case CallCell, CallGCRA:
		return u.evalGCRA(now)
	case CallLimit:
		return u.evalLimit(now)
	case CallRelease:
		u.Decided = false
		return u.evalRelease(now)
	}
	return u.evalAllOf(now)
}

func (u *Call) evalGCRA(now int64) upstream.Outcome {
	st := &u.states[0]
	tat, ok, err := tatOf(st.Cur, st.Cur.Kind != keyspace.None)
	if err != nil {
		return u.Fail(err)
	}
	var r gcra.Result
	if u.kind == CallCell {
		r, err = gcra.Cell(now, tat, ok, u.cell)
	} else {
		r, err = gcra.Redis(now, tat, ok, u.red)
	}
	if err != nil {
		return u.Fail(err)
	}
	u.Limited, u.retry = r.Limited, secondsToMs(r.RetryAfter)
	writeGCRA(&u.W, r)
	switch {
	case r.Store:
		st.Next, st.Write = gcraValue(now, r), true
		return upstream.Write
	case r.Limited:
		return upstream.Settled // a TAT only moves on
	}
	return upstream.Verify
}

func (u *Call) evalLimit(now int64) upstream.Outcome {
	st, l := &u.states[0], &u.limits[0]
	var d decision
	var next keyspace.Value
	store, err := l.take(now, &st.Cur, st.Cur.Kind != keyspace.None, u.scratch[0][:0], &d, &next)
	if err != nil {
		return u.Fail(err)
	}
	if store {
		u.scratch[0] = next.Bytes[:0]
	}
	u.Limited, u.retry, u.block = d.limited, d.retry, d.block
	writeDecisionTo(&u.W, d)
	switch {
	case store && !l.opts.peek:
		st.Next, st.Write = next, true
		u.Refunded = d.refunded
		return upstream.Write
	case d.limited && l.kind != keyspace.Concurrency:
		return upstream.Settled // RELEASE elsewhere frees a concurrency slot; nothing else does
	}
	return upstream.Verify
}

func (u *Call) evalRelease(now int64) upstream.Outcome {
	st := &u.states[0]
	exists := st.Cur.Kind != keyspace.None
	if exists && st.Cur.Kind != keyspace.Concurrency {
		return u.Fail(keyspace.ErrWrongType)
	}
	cur := algorithms.State{Num: st.Cur.Num, Num2: st.Cur.Num2, Bytes: st.Cur.Bytes}
	held, next, err := algorithms.Release(now, cur, exists, u.args[2], u.scratch[0][:0])
	if err != nil {
		return u.Fail(err)
	}
	if !held {
		u.W.Int(0)
		return upstream.Verify
	}
	st.Write, st.Next = true, keyspace.Value{}
	if next.Expire > 0 {
		st.Next = keyspace.Value{Kind: keyspace.Concurrency, Num: next.Num, Num2: next.Num2, Bytes: next.Bytes, Expire: next.Expire}
		u.scratch[0] = next.Bytes[:0]
	}
	u.W.Int(1)
	return upstream.Write
}

func (u *Call) evalAllOf(now int64) upstream.Outcome {
	results, allowed, err := evalAllOf(now, u.limits, u.results[:0], &u.scratch, func(i int) (keyspace.Value, bool) {
		v := u.states[u.keyOf[i]].Cur
		return v, v.Kind != keyspace.None
	})
	u.results = results
	if err != nil {
		return u.Fail(err)
	}
	u.Limited = !allowed
	writeAllOf(&u.W, results, allowed)
	out := upstream.Verify
	for i, r := range results {
		switch {
		case (allowed || r.d.block == blockStarted) && r.store && !u.limits[i].opts.peek:
			u.Refunded += r.d.refunded
			st := &u.states[u.keyOf[i]]
			st.Next, st.Write = r.next, true // a key named again: the later limit's state, built on the earlier's
			out = upstream.Write
		case !allowed && r.d.limited && u.limits[i].kind != keyspace.Concurrency:
			out = upstream.Settled
		}
	}
	return out
}

// Args returns the request, as Parse kept it.
func (u *Call) Args() [][]byte { return u.args }

// Denials calls denied for each key the last Eval denied, with the caller's retry in ms and
// what the denial has to do with the key's penalty box.
func (u *Call) Denials(denied func(key []byte, retryMs, now int64, block Block)) {
	switch {
	case !u.Decided || !u.Limited:
	case u.kind == CallAllOf:
		for i := range u.results {
			if d := &u.results[i].d; d.limited {
				denied(u.limits[i].key, d.retry, u.now, d.block)
			}
		}
	default:
		denied(u.args[1], u.retry, u.now, u.block)
	}
}
