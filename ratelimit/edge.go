package ratelimit

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/algorithms"
	"github.com/throttledhq/throttled/command"
)

// The edge's doors (http-port, grpc-port) decide through the policies too: what they need
// of the family.

// EdgeItem is one policy of an edge decision: its name, the subject, the cost, and the tier
// ("": none). With Refund the cost goes back instead (REFUND's semantics), whatever the
// other items decide.
type EdgeItem struct {
	Policy, Subject string
	Cost            int64
	Priority        string
	Refund          bool
}

// EdgeResult is one policy's part of an edge decision: its decision and CHECK's status, and
// the units a refund gave back.
type EdgeResult struct {
	Limited                            bool
	Limit, Remaining, RetryMs, ResetMs int64
	Status                             string
	Refunded                           int64
}

// Edge decides items as one CHECK on c, all or nothing, counted as c's command; out
// (reused) gets each item's result.
func (rl *Family) Edge(c *command.Ctx, items []EdgeItem, out []EdgeResult) ([]EdgeResult, error) {
	sc := scratchOf(c)
	ci := sc.items[:0]
	for _, it := range items {
		ci = append(ci, checkItem{name: []byte(it.Policy), subject: []byte(it.Subject), cost: it.Cost, refund: it.Refund})
		if it.Priority != "" {
			ci[len(ci)-1].priority = []byte(it.Priority)
		}
	}
	sc.items = ci
	if _, err := rl.checkPolicies(c, ci, &nativeOptions{}, nil); err != nil {
		return out, err
	}
	out = out[:0]
	for i := range items {
		r := sc.pending[i].d
		out = append(out, EdgeResult{Limited: r.limited, Limit: r.limit, Remaining: r.remaining,
			RetryMs: r.retry, ResetMs: r.resetM, Status: statusNames[sc.checks[i].status], Refunded: r.refunded})
	}
	return out, nil
}

// EdgeArgs is an edge decision as SLOWLOG and MONITOR show it: CHECK, the policies, the
// subjects, the costs (a refund's negative) and the tiers, each list joined by ','. Its
// arguments are new: the server keeps them.
func EdgeArgs(items []EdgeItem) [][]byte {
	var names, subjects, costs []string
	for _, it := range items {
		names = append(names, it.Policy)
		subjects = append(subjects, it.Subject)
		cost := it.Cost
		if it.Refund {
			cost = -cost
		}
		costs = append(costs, strconv.FormatInt(cost, 10))
	}
	args := [][]byte{[]byte("CHECK"), []byte(strings.Join(names, ",")), []byte(strings.Join(subjects, ","))}
	if slices.ContainsFunc(items, func(it EdgeItem) bool { return it.Cost != 1 || it.Refund }) {
		args = append(args, []byte("COST"), []byte(strings.Join(costs, ",")))
	}
	if slices.ContainsFunc(items, func(it EdgeItem) bool { return it.Priority != "" }) {
		var tiers []string
		for _, it := range items {
			tiers = append(tiers, it.Priority)
		}
		args = append(args, []byte("PRIORITY"), []byte(strings.Join(tiers, ",")))
	}
	return args
}

// PolicyWindow is RateLimit-Policy's w for the policy name whose limit is limit; 0 when no
// policy has that name.
func (rl *Family) PolicyWindow(name string, limit int64) time.Duration {
	cp := rl.policyView().byName[name]
	if cp == nil {
		return 0
	}
	return policyWindow(cp.src.Args, limit)
}

// policyWindow is RateLimit-Policy's w for a policy's verb and limit: the time in which q
// (the limit) units pass from an idle key. The windows' (SLIDE limit window, WINDOW limit
// window) is their window (a calendar window's its nominal length: 1mo is 30 days); the rates' (THROTTLE max_burst count period, TOKENBUCKET capacity
// refill period, LEAKYBUCKET capacity leak period) is the time the rate takes to bring the
// whole limit back: period * limit / count, so THROTTLE 99 100 1m is q=100;w=60. 0 if none.
func policyWindow(args []string, limit int64) time.Duration {
	if len(args) == 0 {
		return 0
	}
	if strings.EqualFold(args[0], "slide") || strings.EqualFold(args[0], "window") {
		if len(args) < 3 {
			return 0
		}
		if c := calendarOf([]byte(args[2]), true); c != algorithms.Fixed {
			return time.Duration(c.Nominal()) // a month's w is 30 days, as Envoy's headers count it
		}
		ns, err := parseDuration("window", []byte(args[2]))
		if err != nil {
			return 0
		}
		return time.Duration(ns)
	}
	if len(args) < 4 {
		return 0
	}
	ns, err := parseDuration("period", []byte(args[3]))
	rate, rerr := strconv.ParseInt(args[2], 10, 64)
	if err != nil || rerr != nil || rate <= 0 || limit <= 0 {
		return 0
	}
	w := float64(ns) * float64(limit) / float64(rate)
	if w > float64(math.MaxInt64) {
		return 0
	}
	return time.Duration(w)
}
