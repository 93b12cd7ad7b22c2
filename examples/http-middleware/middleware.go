// Package middleware is a net/http middleware that asks throttled, over go-redis, whether a
// request may pass: CHECK policy subject, then the decision's headers on the answer, and 429
// with Retry-After when denied. Copy it into a Go service; it has no dependency but go-redis.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	lim := &middleware.Limiter{Client: rdb, Policy: "api", Window: time.Minute}
//	http.ListenAndServe(":8080", lim.Wrap(mux))
//
// A limiter must never be the outage: when throttled cannot be reached, the request passes and
// OnError hears of it. An error that throttled answers (NOREPLICAS, NOPERM) is no pass: the
// request gets 503 and OnError hears of it too.
package middleware

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limiter checks each request against one throttled policy.
type Limiter struct {
	Client redis.UniversalClient
	Policy string // the policy's name, as POLICY.SET made it
	// Window is the policy's period, for RateLimit-Policy's w; 0 leaves w out.
	Window time.Duration
	// Subject names who the request counts against; nil counts by the peer's IP address.
	Subject func(*http.Request) string
	// Timeout bounds the CHECK round trip; 0 means 100ms.
	Timeout time.Duration
	// OnError hears of a CHECK that failed (the request passed, unless throttled answered
	// the error); nil ignores it.
	OnError func(*http.Request, error)
}

// Decision is CHECK's reply.
type Decision struct {
	Limited                                  bool
	Limit, Remaining, RetryAfter, ResetAfter int64 // the times in milliseconds
	Status                                   string
}

// Wrap returns next behind the limiter.
func (l *Limiter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := l.Check(r)
		if err != nil {
			if l.OnError != nil {
				l.OnError(r, err)
			}
			var answered redis.Error
			if errors.As(err, &answered) { // throttled answered: no decision is no pass
				http.Error(w, "rate limiter error", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r) // fail open: throttled could not be reached
			return
		}
		l.setHeaders(w.Header(), d)
		if d.Limited {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, "{\"error\":\"rate limited\",\"retry_after_ms\":%d}\n", d.RetryAfter)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Check runs CHECK for r.
func (l *Limiter) Check(r *http.Request) (Decision, error) {
	subject := ""
	if l.Subject != nil {
		subject = l.Subject(r)
	} else if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		subject = host
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = 100 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	v, err := l.Client.Do(ctx, "CHECK", l.Policy, subject).Result()
	if err != nil {
		return Decision{}, err
	}
	return parseDecision(v)
}

// parseDecision reads CHECK's reply: an array under RESP2, a map under RESP3.
func parseDecision(v any) (Decision, error) {
	var f [5]int64
	var status string
	switch r := v.(type) {
	case []any:
		if len(r) < 6 {
			return Decision{}, fmt.Errorf("middleware: CHECK replied %d elements", len(r))
		}
		for i := range f {
			n, ok := r[i].(int64)
			if !ok {
				return Decision{}, fmt.Errorf("middleware: CHECK's element %d is %T", i, r[i])
			}
			f[i] = n
		}
		status, _ = r[len(r)-1].(string)
	case map[any]any:
		for i, name := range []string{"limited", "limit", "remaining", "retry_after_ms", "reset_after_ms"} {
			n, ok := r[name].(int64)
			if !ok {
				return Decision{}, fmt.Errorf("middleware: CHECK's %s is %T", name, r[name])
			}
			f[i] = n
		}
		status, _ = r["status"].(string)
	default:
		return Decision{}, fmt.Errorf("middleware: CHECK replied %T", v)
	}
	return Decision{Limited: f[0] == 1, Limit: f[1], Remaining: f[2], RetryAfter: f[3], ResetAfter: f[4], Status: status}, nil
}

// setHeaders writes the headers throttled's http-port writes: RateLimit-Policy and
// RateLimit (draft-ietf-httpapi-ratelimit-headers), X-RateLimit-*, Retry-After when denied.
func (l *Limiter) setHeaders(h http.Header, d Decision) {
	pol := strconv.Quote(l.Policy) + ";q=" + strconv.FormatInt(d.Limit, 10)
	if l.Window > 0 {
		pol += ";w=" + strconv.FormatInt(int64((l.Window+time.Second-1)/time.Second), 10)
	}
	reset := strconv.FormatInt(ceilSeconds(d.ResetAfter), 10)
	h.Set("RateLimit-Policy", pol)
	h.Set("RateLimit", strconv.Quote(l.Policy)+";r="+strconv.FormatInt(d.Remaining, 10)+";t="+reset)
	h.Set("X-RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
	h.Set("X-RateLimit-Reset", reset)
	if d.Limited && d.RetryAfter >= 0 {
		h.Set("Retry-After", strconv.FormatInt(max(1, ceilSeconds(d.RetryAfter)), 10))
	}
}

func ceilSeconds(ms int64) int64 {
	if ms <= 0 {
		return 0
	}
	return (ms + 999) / 1000
}
