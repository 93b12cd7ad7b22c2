package envoyrls

import (
	"context"
	"fmt"
	"sync"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/ratelimit"
)

// The Decider the server lends: CheckDecider finds the request's user (WithUser), hands the
// items to the server's CHECK path as ratelimit.EdgeItems, and turns the results into
// Decisions; the server applies the user's ACL, counts the call as CHECK's under its door
// and decides (ratelimit.Family.Edge).

// CheckFunc decides items as one CHECK by user, all or nothing, counted under http-port's
// door when overHTTP (ServeJSON's requests), else grpc-port's; it appends each item's result
// to out and returns it. Its errors are Decider.Decide's: ErrPermissionDenied for a user
// whose ACL refuses an item.
type CheckFunc func(user *acl.User, overHTTP bool, items []ratelimit.EdgeItem, out []ratelimit.EdgeResult) ([]ratelimit.EdgeResult, error)

// CheckDecider is the Decider over the server's CHECK path.
type CheckDecider struct {
	check       CheckFunc
	setPolicies func(policy.Table)
	scratch     sync.Pool // of *checkScratch
}

// checkScratch is a decision's items and results, reused.
type checkScratch struct {
	items   []ratelimit.EdgeItem
	results []ratelimit.EdgeResult
}

// NewCheckDecider returns the Decider that decides through check and hands the
// configuration's policies to setPolicies.
func NewCheckDecider(check CheckFunc, setPolicies func(policy.Table)) *CheckDecider {
	return &CheckDecider{check: check, setPolicies: setPolicies}
}

// SetPolicies implements Decider.
func (d *CheckDecider) SetPolicies(t policy.Table) { d.setPolicies(t) }

// Decide implements Decider, as the user in ctx (WithUser).
func (d *CheckDecider) Decide(ctx context.Context, items []Item) ([]Decision, error) {
	user := UserFrom(ctx)
	if user == nil {
		return nil, fmt.Errorf("%w: no user authenticated the request", ErrUnauthenticated)
	}
	sc, _ := d.scratch.Get().(*checkScratch)
	if sc == nil {
		sc = new(checkScratch)
	}
	defer d.scratch.Put(sc)
	edge := sc.items[:0]
	for _, it := range items {
		edge = append(edge, ratelimit.EdgeItem{Policy: it.Policy, Subject: it.Subject, Cost: it.Cost, Priority: it.Priority, Refund: it.Refund})
	}
	sc.items = edge
	results, err := d.check(user, OverHTTP(ctx), edge, sc.results[:0])
	sc.results = results
	if err != nil {
		return nil, err
	}
	out := make([]Decision, len(results))
	for i, r := range results {
		out[i] = Decision{Limited: r.Limited, Limit: r.Limit, Remaining: r.Remaining,
			RetryMs: r.RetryMs, ResetMs: r.ResetMs, Status: r.Status}
	}
	return out, nil
}
