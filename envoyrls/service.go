package envoyrls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/ratelimit"
)

// Item is one policy's part of a decision: the policy, the subject its key names, the units
// the request takes, and its priority tier (the descriptor's priority_key entry; empty for
// none). A tier the policy's tiers do not name is no tier: it comes from a request header.
// With Refund (the descriptor's is_negative_hits) the units go back instead, as REFUND
// gives them: never past full, and whatever the other items decide.
type Item struct {
	Policy, Subject string
	Cost            int64
	Priority        string
	Refund          bool
}

// Decision is what CHECK answers for one policy.
type Decision struct {
	Limited                            bool
	Limit, Remaining, RetryMs, ResetMs int64
	Status                             string // ok, warning, shadow, allowlisted, denylisted
}

// Decider decides as CHECK does; the server provides it.
type Decider interface {
	// Decide evaluates every item all or nothing, as CHECK a,b does, and counts the decisions
	// as CHECK's (over HTTP when OverHTTP(ctx), else over gRPC). It returns one decision an
	// item, or an error when it decided nothing: one wrapping ErrUnauthenticated or
	// ErrPermissionDenied for a request its user may not make, which the service answers with
	// those codes; another for a policy it does not have, a key holding another kind of value
	// or too few replicas for min-replicas-to-write, which the service answers as OVER_LIMIT.
	Decide(ctx context.Context, items []Item) ([]Decision, error)
	// SetPolicies replaces the policies made from the configuration by t.
	SetPolicies(t policy.Table)
}

// Errors a Decider wraps, each with the gRPC status it becomes (and /json's HTTP status).
var (
	// ErrUnauthenticated is for a request without the credentials of a user that may ask:
	// UNAUTHENTICATED (401).
	ErrUnauthenticated = errors.New("authentication required")
	// ErrPermissionDenied is for a user whose ACL refuses the decision (CHECK, or the key of
	// a descriptor's policy and subject): PERMISSION_DENIED (403).
	ErrPermissionDenied = errors.New("permission denied")
)

// Bounds on a request: Envoy sends a few descriptors of a few entries.
const (
	maxDescriptors = 64
	maxEntries     = 32
	maxCost        = 1 << 40
)

// Service serves envoy.service.ratelimit.v3.RateLimitService over the configuration at a
// path, reloaded when its files change (Watch) or on Reload.
type Service struct {
	rlsv3.UnimplementedRateLimitServiceServer
	path   string
	dec    Decider
	log    *slog.Logger
	cfg    atomic.Pointer[Config]
	health *health.Server

	mu  sync.Mutex // guards sig and serializes reloads
	sig string     // the files' names, sizes and times when last read
}

// New loads the configuration at path, hands its policies to dec and returns the service.
func New(path string, dec Decider, log *slog.Logger) (*Service, error) {
	s := &Service{path: path, dec: dec, log: log, health: health.NewServer()}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Config returns the configuration in force.
func (s *Service) Config() *Config { return s.cfg.Load() }

// Reload reads the configuration again. With an error, which names the file and the line,
// the configuration in force stays.
func (s *Service) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sig := signature(s.path)
	c, err := Load(s.path)
	s.sig = sig // a bad file is not read again until it changes
	if err != nil {
		err = fmt.Errorf("ratelimit-config not loaded, the old one stays: %w", err)
		if s.cfg.Load() != nil {
			s.log.Warn("ratelimit-config not reloaded", "err", err)
		}
		return err
	}
	s.dec.SetPolicies(c.Policies)
	s.cfg.Store(c)
	s.log.Info("ratelimit-config loaded", "path", s.path, "domains", len(c.Domains), "rules", c.Rules)
	return nil
}

// Watch reloads the configuration when its files change, looking every period, until stop
// is closed. A change is read once two looks in a row have seen it the same, so that a
// file being written is not read half-way.
func (s *Service) Watch(stop <-chan struct{}, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	seen := ""
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		sig := signature(s.path)
		s.mu.Lock()
		changed := sig != s.sig
		s.mu.Unlock()
		switch {
		case !changed:
			seen = ""
		case sig == seen:
			s.Reload() // it logs what it did
			seen = ""
		default:
			seen = sig
		}
	}
}

// signature sums up the files at path: their names, sizes and modification times.
func signature(path string) string {
	files, err := Files(path)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			b.WriteString(f + " gone;")
			continue
		}
		fmt.Fprintf(&b, "%s %d %d;", f, st.Size(), st.ModTime().UnixNano())
	}
	return b.String()
}

// Register registers the rate-limit service and gRPC health checking (grpc.health.v1) on g.
func (s *Service) Register(g *grpc.Server) {
	rlsv3.RegisterRateLimitServiceServer(g, s)
	healthpb.RegisterHealthServer(g, s.health)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(rlsv3.RateLimitService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
}

// Shutdown tells health checkers the service is going away.
func (s *Service) Shutdown() { s.health.Shutdown() }

// descriptorState is one descriptor of a request while it is decided.
type descriptorState struct {
	rule     *Rule
	subject  string
	priority string // the value of the domain's priority_key entry
	cost     int64
	refund   bool // is_negative_hits: cost units go back
	item     int  // its index in the items; -1 when no policy decides it
	// tooLong: the subject is longer than ratelimit.MaxSubject. It is not decided (no key
	// that long is made) and answers OVER_LIMIT: an error would be a pass to an Envoy with
	// failure_mode_deny false.
	tooLong bool
}

// ShouldRateLimit answers a request as envoyproxy/ratelimit does, with throttled's policies:
// each descriptor meets a rule (or none: OK, with no limit), a rule that another matched
// rule replaces applies not, the rest are decided all or nothing, and the answer is
// OVER_LIMIT when one of them is (shadow_mode's pass, and say OK).
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		return nil, status.Error(codes.InvalidArgument, "rate limit domain must not be empty")
	}
	descs := req.GetDescriptors()
	if len(descs) == 0 {
		return nil, status.Error(codes.InvalidArgument, "rate limit descriptor list must not be empty")
	}
	if len(descs) > maxDescriptors {
		return nil, status.Errorf(codes.InvalidArgument, "at most %d descriptors a request, got %d", maxDescriptors, len(descs))
	}
	cfg := s.cfg.Load()
	d := cfg.Domains[req.GetDomain()]
	hits := int64(req.GetHitsAddend())
	if hits == 0 {
		hits = 1
	}
	states := make([]descriptorState, len(descs))
	var replaced map[string]bool // the names of the limits a matched rule replaces
	entries := make([]Entry, 0, 4)
	for i, desc := range descs {
		es := desc.GetEntries()
		if len(es) > maxEntries {
			return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: at most %d entries, got %d", i, maxEntries, len(es))
		}
		st := &states[i]
		st.item = -1
		entries = entries[:0]
		for _, e := range es {
			if d != nil && d.PriorityKey != "" && e.GetKey() == d.PriorityKey {
				st.priority = e.GetValue() // a tier, not a level of the tree
				continue
			}
			entries = append(entries, Entry{Key: e.GetKey(), Value: e.GetValue()})
		}
		st.rule, st.subject = d.Match(entries)
		st.tooLong = st.rule != nil && !st.rule.Unlimited && len(st.subject) > ratelimit.MaxSubject
		st.cost = hits
		if h := desc.GetHitsAddend(); h != nil {
			st.cost = int64(min(h.GetValue(), maxCost))
		}
		st.refund = desc.GetIsNegativeHits()
		if st.rule != nil {
			for _, r := range st.rule.Replaces {
				if replaced == nil {
					replaced = map[string]bool{}
				}
				replaced[r] = true
			}
		}
	}
	var items []Item
	denied := false // a descriptor is denied before any is decided
	for i := range states {
		st := &states[i]
		if st.rule == nil || st.rule.Name != "" && replaced[st.rule.Name] {
			st.rule = nil
			continue
		}
		if st.rule.Unlimited {
			continue
		}
		if st.tooLong {
			denied = denied || !st.rule.Shadow && !st.refund
			continue
		}
		cost := st.cost
		if st.rule.PerUnit == 0 && !st.refund {
			cost = 2 // more than the one unit the policy holds: denied, and nothing taken
		}
		st.item = len(items)
		items = append(items, Item{Policy: st.rule.Policy, Subject: st.subject, Cost: cost, Priority: st.priority, Refund: st.refund})
	}
	if denied {
		for i := range items {
			if !items[i].Refund {
				items[i].Cost = 0 // all or nothing: the others are only looked at; a refund stands
			}
		}
	}
	var decisions []Decision
	if len(items) > 0 {
		var err error
		decisions, err = s.dec.Decide(ctx, items)
		if err != nil {
			switch {
			case errors.Is(err, ctx.Err()):
				return nil, status.FromContextError(err).Err()
			case errors.Is(err, ErrUnauthenticated):
				return nil, status.Error(codes.Unauthenticated, err.Error())
			case errors.Is(err, ErrPermissionDenied):
				return nil, status.Error(codes.PermissionDenied, err.Error())
			}
			// Envoy lets a request through on any error (failure_mode_deny: false), which
			// must mean throttled could not be reached, not that it refused to decide: a
			// decision that failed is a denial no wait lifts.
			s.log.Warn("rate-limit decision failed: answered OVER_LIMIT", "domain", req.GetDomain(), "err", err)
			decisions = make([]Decision, len(items))
			for i := range decisions {
				decisions[i] = Decision{Limited: true, RetryMs: -1, Status: "error"}
			}
		}
	}
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(states))}
	block := make([]rlsv3.RateLimitResponse_DescriptorStatus, len(states)) // one allocation for every status
	for _, dec := range decisions {
		denied = denied || dec.Limited
	}
	most := -1 // the status the headers tell of: a denied one, else the least remaining
	for i := range states {
		st := &states[i]
		ds := &block[i]
		ds.Code = rlsv3.RateLimitResponse_OK
		resp.Statuses[i] = ds
		switch {
		case st.rule == nil:
		case st.rule.Unlimited:
			ds.LimitRemaining = math.MaxUint32
		case st.tooLong:
			ds.CurrentLimit = st.rule.current
			if !st.rule.Shadow && !st.refund {
				ds.Code = rlsv3.RateLimitResponse_OVER_LIMIT
				resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
			}
		default:
			dec := decisions[st.item]
			ds.CurrentLimit = st.rule.current
			rem := dec.Remaining
			if denied && !dec.Limited && dec.Status != "allowlisted" && !st.refund {
				// All or nothing: another descriptor's denial took nothing from this one.
				rem = min(rem+items[st.item].Cost, dec.Limit)
			}
			if st.rule.PerUnit == 0 || dec.Status == "shadow" && rem < 0 {
				rem = 0
			}
			ds.LimitRemaining = uint32(min(max(rem, 0), math.MaxUint32))
			reset := dec.ResetMs
			if dec.Limited {
				ds.Code = rlsv3.RateLimitResponse_OVER_LIMIT
				resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
				if dec.RetryMs > 0 {
					reset = dec.RetryMs
				}
			}
			ds.DurationUntilReset = durationpb.New(time.Duration(max(reset, 0)) * time.Millisecond)
			if most < 0 || dec.Limited && !decisions[states[most].item].Limited ||
				dec.Limited == decisions[states[most].item].Limited && dec.Remaining < decisions[states[most].item].Remaining {
				most = i
			}
		}
	}
	if d != nil && d.Headers && most >= 0 {
		st := &states[most]
		resp.ResponseHeadersToAdd = headers(st.rule, decisions[st.item])
	}
	return resp, nil
}

// headers are the RateLimit headers of a decision: RateLimit-Policy and RateLimit as
// draft-ietf-httpapi-ratelimit-headers writes them, the legacy X-RateLimit-* and, when
// denied, Retry-After.
func headers(r *Rule, d Decision) []*corev3.HeaderValue {
	secs := func(ms int64) string { return strconv.FormatInt((max(ms, 0)+999)/1000, 10) }
	window := r.Window
	rem := max(d.Remaining, 0)
	reset := d.ResetMs
	if d.Limited && d.RetryMs > 0 {
		reset = d.RetryMs
	}
	q := strconv.FormatInt(d.Limit, 10)
	if r.PerUnit == 0 {
		q, rem = "0", 0
	}
	h := []*corev3.HeaderValue{
		{Key: "RateLimit-Policy", Value: `"` + r.Policy + `";q=` + q + ";w=" + strconv.FormatInt(window, 10)},
		{Key: "RateLimit", Value: `"` + r.Policy + `";r=` + strconv.FormatInt(rem, 10) + ";t=" + secs(reset)},
		{Key: "X-RateLimit-Limit", Value: q},
		{Key: "X-RateLimit-Remaining", Value: strconv.FormatInt(rem, 10)},
		{Key: "X-RateLimit-Reset", Value: secs(reset)},
	}
	if d.Limited {
		h = append(h, &corev3.HeaderValue{Key: "Retry-After", Value: secs(reset)})
	}
	return h
}

func unitCode(u string) rlsv3.RateLimitResponse_RateLimit_Unit {
	switch u {
	case "second":
		return rlsv3.RateLimitResponse_RateLimit_SECOND
	case "minute":
		return rlsv3.RateLimitResponse_RateLimit_MINUTE
	case "hour":
		return rlsv3.RateLimitResponse_RateLimit_HOUR
	case "day":
		return rlsv3.RateLimitResponse_RateLimit_DAY
	case "week":
		return rlsv3.RateLimitResponse_RateLimit_WEEK
	case "month":
		return rlsv3.RateLimitResponse_RateLimit_MONTH
	case "year":
		return rlsv3.RateLimitResponse_RateLimit_YEAR
	}
	return rlsv3.RateLimitResponse_RateLimit_UNKNOWN
}
