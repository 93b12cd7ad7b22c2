package algorithms

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// base is a realistic clock, 2023-11-14T00:00:00Z in Unix ns: a whole number
// of days, so that every window the tests use starts at base.
const (
	base = int64(19675 * 86400 * 1e9)
	ms   = int64(1e6)
	sec  = int64(1e9)
)

// Every algorithm is an Algorithm.
var _ = []Algorithm{TokenBucket{}, LeakyBucket{}, SlidingLog{}, SlidingCounter{}, FixedWindow{}, Concurrency{}}

// key is one key as the server keeps it: the state, whether it exists, and
// lazy expiry when expire is set.
type key struct {
	st     State
	exists bool
	expire bool
}

// take runs a at now and keeps the state when asked to, failing on errors.
func (k *key) take(t *testing.T, a Algorithm, now, cost int64) Decision {
	t.Helper()
	d, err := k.try(a, now, cost)
	require.NoError(t, err)
	return d
}

// try runs a at now and keeps the state when asked to. It checks the
// contract every call keeps and returns a violation as an error.
func (k *key) try(a Algorithm, now, cost int64) (Decision, error) {
	if k.expire && k.exists && now >= k.st.Expire {
		k.st, k.exists = State{}, false
	}
	in := k.st
	d, next, store, err := a.Take(now, k.st, k.exists, cost, nil)
	if err != nil {
		return d, err
	}
	if v := violation(now, cost, d, store, next, in); v != "" {
		return d, fmt.Errorf("%T at %d cost %d: %+v store %v: %s", a, now, cost, d, store, v)
	}
	if store {
		next.Bytes = bytes.Clone(next.Bytes)
		k.st, k.exists = next, true
	}
	return d, nil
}

// release runs Release and keeps the state when the id held slots.
func (k *key) release(t *testing.T, now int64, id string) bool {
	t.Helper()
	if k.expire && k.exists && now >= k.st.Expire {
		k.st, k.exists = State{}, false
	}
	held, next, err := Release(now, k.st, k.exists, []byte(id), nil)
	require.NoError(t, err)
	if held {
		next.Bytes = bytes.Clone(next.Bytes)
		k.st, k.exists = next, next.Expire != 0
	}
	return held
}

// violation names the first rule of the contract a call breaks, or "".
func violation(now, cost int64, d Decision, store bool, next, in State) string {
	switch {
	case d.Remaining < 0 || d.Remaining > d.Limit:
		return "remaining outside [0, limit]"
	case d.ResetAfter < 0:
		return "negative reset_after"
	case d.Delay < 0:
		return "negative delay"
	case d.Limited && d.RetryAfter <= 0 && d.RetryAfter != -1:
		return "denied without a positive retry_after or -1"
	case d.Limited && (cost > d.Limit) != (d.RetryAfter == -1):
		return "retry_after -1 exactly when the cost exceeds the limit"
	case !d.Limited && d.RetryAfter != -1:
		return "allowed with a retry_after"
	case d.Limited && d.Delay != 0:
		return "denied with a delay"
	case store != (!d.Limited && cost > 0):
		return "store exactly when allowed with a cost"
	case !store && !sameState(next, in):
		return "a call that does not store returns another state"
	case store && next.Expire <= now:
		return "stored state already idle"
	case store && d.ResetAfter != next.Expire-now:
		return "reset_after is not the stored expiry"
	}
	return ""
}

func sameState(a, b State) bool {
	return a.Num == b.Num && a.Num2 == b.Num2 && a.Expire == b.Expire && bytes.Equal(a.Bytes, b.Bytes)
}

// reply is a decision's numbers in the reply's order, plus the delay.
func reply(d Decision) [6]int64 {
	limited := int64(0)
	if d.Limited {
		limited = 1
	}
	return [6]int64{limited, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter, d.Delay}
}

// requireErr checks that err is want.
func requireErr(t *testing.T, want, err error) {
	t.Helper()
	require.True(t, errors.Is(err, want), "want %v, got %v", want, err)
}
