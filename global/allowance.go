package global

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/throttledhq/throttled/keyspace"
)

// Limit is one global limit's algorithm, as package ratelimit evaluates it: pure, the state
// and now in, a remaining count or the next state out.
type Limit interface {
	// Units is the most units that pass at once from an idle key.
	Units() int64
	// Remaining is how many units the limit admits at now from v (Kind None: an idle key).
	Remaining(v keyspace.Value, now int64) int64
	// Take takes n units at now from v, n at most Remaining(v, now), and returns the next
	// state (Kind None: idle), its Bytes its own.
	Take(v keyspace.Value, n, now int64) keyspace.Value
}

// State is a global key's state: the algorithm's state over every admission reported, and
// the debt, the units reported past what the algorithm admitted when they were folded in.
// Instances decide apart, so together they may admit more than is left; the debt keeps
// those units, and is paid back from the first units the limit admits again, so that the
// global state forgets no admission.
type State struct {
	V    keyspace.Value
	Debt int64
}

// The state's bytes, in field s of the key's hash on the upstream (upstream/global.go):
// an 8-byte tag (what a fold compares), the debt (8 bytes, little-endian), then the
// algorithm's state as persistence encodes it (nothing for an idle one).
const (
	tagLen   = 8
	stateMin = tagLen + 8
)

// errState is a field s that is not a state throttled wrote.
var errState = errors.New("global: the upstream's state of a global key does not decode")

// encodeState appends st with tag to dst.
func encodeState(dst []byte, tag [tagLen]byte, st State) []byte {
	dst = append(dst, tag[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(st.Debt))
	if st.V.Kind != keyspace.None {
		n := len(dst)
		dst = append(dst, make([]byte, keyspace.EncodedLen(st.V))...)
		keyspace.Encode(dst[n:], st.V)
	}
	return dst
}

// decodeState reads field s; a missing one (nil) is an idle key with no tag.
func decodeState(b []byte) (State, []byte, error) {
	if b == nil {
		return State{}, nil, nil
	}
	if len(b) < stateMin {
		return State{}, nil, errState
	}
	st := State{Debt: int64(binary.LittleEndian.Uint64(b[tagLen:]))}
	if st.Debt < 0 {
		return State{}, nil, errState
	}
	if len(b) > stateMin {
		v, err := keyspace.DecodeValue(b[stateMin:])
		if err != nil {
			return State{}, nil, errState
		}
		st.V = v
	}
	return st, b[:tagLen], nil
}

// at is v at now: missing once it is idle.
func at(v keyspace.Value, now int64) keyspace.Value {
	if v.Kind != keyspace.None && v.Expire > 0 && v.Expire <= now {
		return keyspace.Value{}
	}
	return v
}

// payDebt pays st's debt at now from what the limit admits again.
func payDebt(l Limit, st State, now int64) State {
	st.V = at(st.V, now)
	if st.Debt > 0 {
		if x := min(st.Debt, l.Remaining(st.V, now)); x > 0 {
			st.V = l.Take(st.V, x, now)
			st.Debt -= x
		}
	}
	return st
}

// fold charges n admitted units to st at now: what the limit still admits is taken, the
// rest becomes debt.
func fold(l Limit, st State, n, now int64) State {
	st = payDebt(l, st, now)
	if n <= 0 {
		return st
	}
	x := min(n, l.Remaining(st.V, now))
	if x > 0 {
		st.V = l.Take(st.V, x, now)
	}
	st.Debt = addSat(st.Debt, n-x)
	return st
}

// avail is how many units the limit admits over [now, now+interval] from st, the debt paid
// first: what it admits at now (left), then, that taken, what it admits at now+interval
// (next: the units that refill, or the window that turns, in between).
func avail(l Limit, st State, now, interval int64) (left, next int64) {
	st = payDebt(l, st, now)
	left = l.Remaining(st.V, now)
	v := st.V
	if left > 0 {
		v = l.Take(v, left, now)
	}
	next = l.Remaining(at(v, now+interval), now+interval)
	return left, max(0, next-st.Debt)
}

// share is an instance's part of avail units, in proportion to its demand among the live
// instances' (all demands 0: an equal part of live), plus carry, the fraction it was owed
// from before: the whole units it gets, and the fraction it is owed now. The part is never
// above avail.
func share(avail, mine, total int64, live int, carry float64) (int64, float64) {
	if avail <= 0 {
		return 0, 0
	}
	var w float64
	switch {
	case total > 0:
		w = float64(mine) / float64(total)
	default:
		w = 1 / float64(max(live, 1))
	}
	x := min(float64(avail), float64(avail)*min(w, 1)+carry)
	n := int64(math.Floor(x))
	return n, x - float64(n)
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
