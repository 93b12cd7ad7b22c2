package gcra

import (
	"bytes"
	"math"
)

// GCRAParams are Redis's GCRA command arguments after the key.
type GCRAParams struct {
	MaxBurst, Tokens int64
	Period           float64 // seconds
	Quantity         int64   // from TOKENS n, default 1
}

// Redis's error texts for GCRA, as sent after the '-' (addReplyError adds
// "ERR ").
const (
	redisArity    = "ERR wrong number of arguments for 'gcra' command"
	redisPositive = "ERR value is out of range, must be positive"
	redisNotInt   = "ERR value is not an integer or out of range"
	redisRange1   = "ERR value is out of range, value must between 1 and 9223372036854775807"
	redisNotFloat = "ERR value is not a valid float"
	redisPeriod   = "ERR period must be > 0 and < 1e12"
	redisSyntax   = "ERR syntax error"
	redisMissing  = "ERR Missing TOKENS value"
	redisNegTAT   = "ERR Negative time is invalid value for GCRA"
	redisTokensOv = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow"
	redisBurstOv  = "ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow"
)

// ParseGCRA reads GCRA's arguments after the key:
// max_burst tokens_per_period period [TOKENS n], checking them in gcra.c's
// order with Redis's texts. Fewer than three or more than five arguments is
// Redis's arity error.
func ParseGCRA(args [][]byte) (GCRAParams, error) {
	if len(args) < 3 || len(args) > 5 {
		return GCRAParams{}, &Error{Text: redisArity}
	}
	p := GCRAParams{Quantity: 1}
	var ok bool
	// getPositiveLongFromObjectOrReply passes its range message to the
	// integer parse too, so "abc" is "out of range, must be positive".
	if p.MaxBurst, ok = parseRedisInt(args[0]); !ok || p.MaxBurst < 0 {
		return GCRAParams{}, &Error{Text: redisPositive}
	}
	if p.Tokens, ok = parseRedisInt(args[1]); !ok {
		return GCRAParams{}, &Error{Text: redisNotInt}
	}
	if p.Tokens < 1 {
		return GCRAParams{}, &Error{Text: redisRange1}
	}
	if p.Period, ok = parseRedisFloat(args[2]); !ok {
		return GCRAParams{}, &Error{Text: redisNotFloat}
	}
	if !(p.Period > 0 && p.Period < 1e12) {
		return GCRAParams{}, &Error{Text: redisPeriod}
	}
	if len(args) >= 4 {
		// strcasecmp sees a C string: it stops at the first NUL.
		word := args[3]
		if i := bytes.IndexByte(word, 0); i >= 0 {
			word = word[:i]
		}
		if !asciiEqualFold(word, "tokens") {
			return GCRAParams{}, &Error{Text: redisSyntax}
		}
		if len(args) == 4 {
			return GCRAParams{}, &Error{Text: redisMissing}
		}
		if p.Quantity, ok = parseRedisInt(args[4]); !ok {
			return GCRAParams{}, &Error{Text: redisNotInt}
		}
		if p.Quantity < 1 {
			return GCRAParams{}, &Error{Text: redisRange1}
		}
	}
	if _, err := p.rate(); err != nil {
		return GCRAParams{}, err
	}
	return p, nil
}

// rate turns p into gcra.c's microsecond terms, or Redis's error. The
// emission interval is period/tokens rounded to the nearest microsecond, at
// least 1µs.
func (p GCRAParams) rate() (rate, error) {
	switch {
	case p.MaxBurst < 0:
		return rate{}, &Error{Text: redisPositive}
	case p.Tokens < 1, p.Quantity < 1:
		return rate{}, &Error{Text: redisRange1}
	case !(p.Period > 0 && p.Period < 1e12):
		return rate{}, &Error{Text: redisPeriod}
	}
	interval := int64(p.Period*1e6/float64(p.Tokens) + 0.5) // < 1e18: fits
	if interval == 0 {
		interval = 1
	}
	inc, ok := mulOK(interval, p.Quantity)
	if !ok {
		return rate{}, &Error{Text: redisTokensOv}
	}
	tolerance, ok := mulOK(interval, p.limit())
	if !ok {
		return rate{}, &Error{Text: redisBurstOv}
	}
	return rate{interval: interval, tolerance: tolerance, inc: inc}, nil
}

// limit is max_burst + 1, except that gcra.c leaves LONG_MAX as it is.
func (p GCRAParams) limit() int64 {
	if p.MaxBurst < math.MaxInt64 {
		return p.MaxBurst + 1
	}
	return p.MaxBurst
}

// maxTATMicros is the largest TAT in µs whose nanosecond value, rounded up
// to a whole millisecond for the expiry, still fits in int64.
const maxTATMicros = (math.MaxInt64 - 999_999) / 1000

// Redis evaluates Redis's GCRA command as gcra.c does, in microseconds.
// gcra.c's clock is the command's millisecond time snapshot times 1000, so
// now (Unix ns) is first truncated to the millisecond; the stored TAT (Unix
// ns, written by any verb) is rounded up to the microsecond, so a TAT GCRA
// wrote itself reads back exactly. RetryAfter and ResetAfter are whole
// seconds rounded up. The key's TTL runs to the stored TAT rounded up to the
// millisecond, as gcra.c's PXAT expiry keeps it.
func Redis(now, tat int64, exists bool, p GCRAParams) (Result, error) {
	if now < 0 {
		return Result{}, errClock()
	}
	r, err := p.rate()
	if err != nil {
		return Result{}, err
	}
	nowUs := now / 1e6 * 1000
	tatUs := nowUs
	if exists {
		if tat <= 0 {
			return Result{}, &Error{Text: redisNegTAT}
		}
		tatUs = ceilDiv(tat, 1000)
	}
	// gcra.c checks the sum before deciding, even for a request it denies.
	if max(nowUs, tatUs) > math.MaxInt64-r.inc {
		return Result{}, &Error{Text: redisTokensOv}
	}
	d := r.decide(nowUs, tatUs, exists)
	res := Result{
		Limited:    d.limited,
		Limit:      p.limit(),
		RetryAfter: -1,
		ResetAfter: ceilSeconds(d.ttl),
	}
	if next := r.tolerance - d.ttl; next > -r.interval {
		res.Remaining = next / r.interval
	}
	if d.limited {
		if d.wait >= 0 {
			res.RetryAfter = ceilSeconds(d.wait)
		}
		return res, nil
	}
	// Our state is a TAT in ns; Redis's reaches 2^63µs, ours ends in 2262.
	if d.tat > maxTATMicros {
		return Result{}, &Error{Text: redisTokensOv}
	}
	res.Store, res.TAT = true, d.tat*1000
	res.TTL = ceilDiv(res.TAT, 1e6)*1e6 - now
	return res, nil
}

// ceilSeconds is gcra.c's ceil(us / 1000000.), in float64 as C does it.
func ceilSeconds(us int64) int64 { return int64(math.Ceil(float64(us) / 1e6)) }
