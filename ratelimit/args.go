package ratelimit

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/throttledhq/throttled/algorithms"
	"github.com/throttledhq/throttled/command"
)

// durationForms names what the native verbs accept as a duration.
const durationForms = "a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)"

// parseDuration parses a native verb's duration into nanoseconds: "60",
// "250ms", "1.5s", "15m", "2h", "1d". Fractions are exact to the nanosecond
// (no floating point); the result is positive and fits int64.
func parseDuration(name string, b []byte) (int64, error) {
	bad := func() error { return fmt.Errorf("invalid %s '%s': %s", name, command.Truncate(b, 64), durationForms) }
	i := 0
	for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '.') {
		i++
	}
	num, unit := b[:i], b[i:]
	var scale int64
	switch string(unit) {
	case "":
		scale = 1e9
	case "ms":
		scale = 1e6
	case "s":
		scale = 1e9
	case "m":
		scale = 60e9
	case "h":
		scale = 3600e9
	case "d":
		scale = 86400e9
	default:
		return 0, bad()
	}
	whole, frac, hasDot := cutByte(num, '.')
	if len(whole) == 0 || hasDot && (len(frac) == 0 || len(unit) == 0) {
		return 0, bad() // "1.5" without a unit is not a whole number of seconds
	}
	var ns int64
	for _, c := range whole {
		if c == '.' {
			return 0, bad()
		}
		d := int64(c - '0')
		if ns > (math.MaxInt64-d)/10 {
			return 0, fmt.Errorf("%s '%s' is too long", name, command.Truncate(b, 64))
		}
		ns = ns*10 + d
	}
	if ns > math.MaxInt64/scale {
		return 0, fmt.Errorf("%s '%s' is too long", name, command.Truncate(b, 64))
	}
	ns *= scale
	// Each fractional digit is worth a tenth of the one before; digits past the nanosecond are dropped.
	for i, step := 0, scale/10; i < len(frac); i, step = i+1, step/10 {
		if frac[i] < '0' || frac[i] > '9' {
			return 0, bad()
		}
		ns += int64(frac[i]-'0') * step
	}
	if ns <= 0 {
		return 0, fmt.Errorf("%s must be greater than 0", name)
	}
	return ns, nil
}

func cutByte(b []byte, sep byte) (before, after []byte, found bool) {
	for i, c := range b {
		if c == sep {
			return b[:i], b[i+1:], true
		}
	}
	return b, nil, false
}

// parseCount parses a whole number argument of a native verb that must be at least min.
func parseCount(name string, b []byte, min int64) (int64, error) {
	n, ok := command.ParseInt(b)
	if !ok {
		return 0, fmt.Errorf("%s must be an integer, got '%s'", name, command.Truncate(b, 64))
	}
	if n < min {
		if min == 0 {
			return 0, fmt.Errorf("%s must not be negative, got %d", name, n)
		}
		return 0, fmt.Errorf("%s must be at least %d, got %d", name, min, n)
	}
	return n, nil
}

// nativeOptions are the options every native verb takes after its parameters. COST, PEEK
// and APPROX, which most calls use, come first; rare says whether the call has any of
// REFUND, TIERS, PRIORITY and BLOCK (or its policy has TIERS or BLOCK), and only then are
// the fields after it read. A call without them pays a test of rare: the options are filled in place, never
// copied whole, the rare paths are functions of their own (takeRare, resolveTier), and the
// struct stays small, for a limit is zeroed or copied at every call.
type nativeOptions struct {
	cost        int64
	peek        bool
	approx      bool  // SLIDE's APPROX
	global      bool  // GLOBAL: decided from the local allowance (global.go)
	rare        bool  // REFUND, TIERS, PRIORITY or BLOCK
	refunding   bool  // REFUND n: give back refund units, take nothing
	prioritized bool  // PRIORITY given (its name is resolved at once: see resolveTier)
	refund      int64 // REFUND's n
	block       int64 // BLOCK's duration in ns: a denial keeps the key denied that long; 0: none
	// share is the share of the limit the call's tier may consume, set by resolveTier;
	// 0 or algorithms.Whole: all of it.
	share algorithms.Share
	loc   *time.Location // WINDOW's TZ; nil: none given (zone.go)
	// tiers are the TIERS name=share arguments, unparsed: a policy keeps them for CHECK's
	// PRIORITY to name.
	tiers [][]byte
}

// Option errors.
var (
	// errCostRefund is COST and REFUND in one call: a refund takes nothing.
	errCostRefund = errors.New("syntax error: REFUND takes nothing, so it cannot go with COST")
)

// nativeOptionSet says which options besides COST, PEEK, REFUND and PRIORITY a verb takes.
type nativeOptionSet struct {
	approx bool // SLIDE's APPROX
	tiers  bool // TIERS: not CHECK's, whose policy has them
	zone   bool // WINDOW's TZ
	block  bool // BLOCK: not CHECK's, whose policy has it
	global bool // GLOBAL: the native verbs'
}

// parse reads [COST n] [PEEK] [REFUND n] [TIERS name=share ...] [PRIORITY name]
// [BLOCK duration] in any order, and [APPROX] and [TZ name] when allowed, into o, which is
// zero, and returns PRIORITY's name for
// the caller to resolve once the limit's tiers are known (resolveTier). (o is filled in
// place: returning the options copies them, and that copy is most of what they cost a call.)
func (o *nativeOptions) parse(args [][]byte, set nativeOptionSet) (priority []byte, err error) {
	o.cost = 1
	seenCost := false
	for i := 0; i < len(args); i++ {
		switch {
		case command.EqualFold(args[i], "cost") && i+1 < len(args):
			if seenCost {
				return nil, errors.New("COST given twice")
			}
			n, err := parseCount("COST", args[i+1], 0)
			if err != nil {
				return nil, err
			}
			o.cost, seenCost = n, true
			i++
		case command.EqualFold(args[i], "cost"):
			return nil, errors.New("COST needs a value")
		case command.EqualFold(args[i], "peek"):
			o.peek = true
		case set.approx && command.EqualFold(args[i], "approx"):
			o.approx = true
		case set.global && command.EqualFold(args[i], "global"):
			o.global = true
		default:
			used, err := o.parseRare(args[i:], set, &priority)
			if err != nil {
				return nil, err
			}
			i += used - 1
		}
	}
	if o.refunding {
		if seenCost {
			return nil, errCostRefund
		}
		o.cost = 0
	}
	return priority, nil
}

// parseRare reads one of REFUND n, PRIORITY name (into priority), TIERS name=share ...,
// BLOCK duration and WINDOW's TZ name (zone.go) at the start of args into o, and returns the
// count of arguments it used; anything else is an unknown option.
func (o *nativeOptions) parseRare(args [][]byte, set nativeOptionSet, priority *[]byte) (int, error) {
	switch {
	case command.EqualFold(args[0], "refund") && len(args) > 1:
		if o.refunding {
			return 0, errors.New("REFUND given twice")
		}
		n, err := parseCount("REFUND", args[1], 0)
		if err != nil {
			return 0, err
		}
		o.refund, o.refunding, o.rare = n, true, true
		return 2, nil
	case command.EqualFold(args[0], "refund"):
		return 0, errors.New("REFUND needs a value")
	case command.EqualFold(args[0], "priority") && len(args) > 1:
		if o.prioritized {
			return 0, errors.New("PRIORITY given twice")
		}
		*priority, o.prioritized, o.rare = args[1], true, true
		return 2, nil
	case command.EqualFold(args[0], "priority"):
		return 0, errors.New("PRIORITY needs a tier's name")
	case set.block && command.EqualFold(args[0], "block") && len(args) > 1:
		if o.block != 0 {
			return 0, errors.New("BLOCK given twice")
		}
		ns, err := parseDuration("BLOCK", args[1])
		if err != nil {
			return 0, err
		}
		if ns > algorithms.MaxDuration {
			return 0, errors.New("BLOCK must be at most 73 years")
		}
		o.block, o.rare = ns, true
		return 2, nil
	case set.block && command.EqualFold(args[0], "block"):
		return 0, errors.New("BLOCK needs a duration: " + durationForms)
	case set.tiers && command.EqualFold(args[0], "tiers"):
		if o.tiers != nil {
			return 0, errors.New("TIERS given twice")
		}
		j := 1
		for j < len(args) && bytes.IndexByte(args[j], '=') > 0 {
			j++
		}
		if j == 1 {
			return 0, errors.New("TIERS needs one or more name=share")
		}
		if err := checkTiers(args[1:j]); err != nil {
			return 0, err
		}
		o.tiers, o.rare = args[1:j], true
		return j, nil
	case command.EqualFold(args[0], "tz"):
		return o.parseZone(args, set)
	}
	return 0, fmt.Errorf("unknown option '%s'", command.Truncate(args[0], 64))
}

// checkTiers checks TIERS name=share arguments: each share a decimal in (0, 1], each name once.
func checkTiers(tiers [][]byte) error {
	for i, t := range tiers {
		eq := bytes.IndexByte(t, '=')
		name := t[:eq]
		if _, ok := algorithms.ParseShare(t[eq+1:]); !ok {
			return fmt.Errorf("tier '%s': share must be a number above 0 and at most 1, got '%s'", command.Truncate(name, 64), command.Truncate(t[eq+1:], 64))
		}
		for _, u := range tiers[:i] {
			if bytes.Equal(u[:bytes.IndexByte(u, '=')], name) {
				return fmt.Errorf("tier '%s' named twice", command.Truncate(name, 64))
			}
		}
	}
	return nil
}

// tierShare is the share of the tier named name in tiers (checked by checkTiers): with no
// name, the tier "default", or Whole when there is none so named.
func tierShare(tiers [][]byte, name []byte) (algorithms.Share, error) {
	if name == nil && tiers == nil {
		return algorithms.Whole, nil
	}
	if tiers == nil {
		return 0, fmt.Errorf("unknown tier '%s': the limit has no TIERS", command.Truncate(name, 64))
	}
	want := name
	if want == nil {
		want = []byte("default") // does not escape: no allocation
	}
	for _, t := range tiers {
		eq := bytes.IndexByte(t, '=')
		if bytes.Equal(t[:eq], want) {
			s, _ := algorithms.ParseShare(t[eq+1:])
			return s, nil
		}
	}
	if name == nil {
		return algorithms.Whole, nil
	}
	return 0, fmt.Errorf("unknown tier '%s': the limit's TIERS do not name it", command.Truncate(name, 64))
}
