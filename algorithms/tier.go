package algorithms

// Priority tiers (TIERS name=share ... and PRIORITY name) keep part of a
// limit for the calls that matter most. A call of a tier with share s is
// admitted only while, after it, the key's consumption stays within s of the
// limit: floor(Limit*s) units, so that Reserve(Limit) = Limit - floor(Limit*s)
// units stay for the tiers above it. Consumption is what Remaining does not
// hold (Limit - Remaining: tokens taken, units queued or counted, TAT ahead
// of now in intervals), so a tier's burst and rate are both cut: the tier
// may only take what would leave Reserve units free.
//
// That needs no state of its own. A call of cost c in a tier of reserve r is
// admitted exactly when the same algorithm would admit c + r units now (the
// reserve is looked at, never taken), so the server evaluates c + r without
// storing, then c when that passes; the tier's RetryAfter is the c + r
// call's. Its reply speaks for the tier: Limit is floor(Limit*s), Remaining
// what the tier may still take (Tier).

// Share is a tier's share of a limit in millionths: Whole is all of it.
type Share int64

// Whole is the share of a tier that may use the whole limit.
const Whole Share = 1_000_000

// ParseShare reads a share written as a decimal in (0, 1] with at most six
// decimals ("1", "0.8", "0.125"); ok is false for anything else.
func ParseShare(b []byte) (s Share, ok bool) {
	if len(b) == 0 {
		return 0, false
	}
	var whole, frac int64
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if i >= 1 {
			return 0, false // at most 1
		}
		whole = int64(b[i] - '0')
	}
	if i == 0 {
		return 0, false
	}
	if i < len(b) {
		if b[i] != '.' || i+1 == len(b) || len(b)-i-1 > 6 {
			return 0, false
		}
		scale := int64(100_000)
		for _, c := range b[i+1:] {
			if c < '0' || c > '9' {
				return 0, false
			}
			frac += int64(c-'0') * scale
			scale /= 10
		}
	}
	s = Share(whole*1_000_000 + frac)
	return s, s > 0 && s <= Whole
}

// Reserve is the units of a limit a tier of share s leaves to the tiers
// above it: limit - floor(limit*s), for limit >= 0 and s in (0, Whole].
func (s Share) Reserve(limit int64) int64 {
	if s >= Whole || s <= 0 {
		return 0
	}
	return limit - mulDiv(limit, int64(s), int64(Whole))
}

// Tier turns a decision of the whole limit into the tier's, for a tier of
// reserve units: the tier's Limit and what it may still take. RetryAfter
// and ResetAfter are the caller's to set.
func Tier(limit, remaining, reserve int64) (tierLimit, tierRemaining int64) {
	return max(0, limit-reserve), max(0, remaining-reserve)
}
