package httpapi

import (
	"errors"
	"time"
)

// Decider makes the decisions: it evaluates policies as the CHECK command does.
type Decider interface {
	// Decide evaluates req for the user cred names (the default user when cred is not
	// given). It returns an error that wraps ErrUnauthorized when the credentials are wrong
	// or missing where a password is needed, ErrForbidden when the user may not run CHECK on
	// the policies' keys, ErrUnknownPolicy for a policy that does not exist, ErrBadRequest
	// for an argument CHECK refuses, and any other error when the server cannot decide now.
	Decide(cred Credentials, req Request) (Result, error)
}

// Credentials are the user and password a request authenticates with.
type Credentials struct {
	Given          bool // false: the request sent none, and acts as the default user
	User, Password string
}

// Request is what a caller asks: CHECK policies subject [COST n|REFUND n] [PEEK]
// [PRIORITY tier].
type Request struct {
	Policies []string // one or more names, evaluated all or nothing as CHECK a,b does
	Subject  string
	Cost     int64
	Peek     bool
	// Refunding asks to give Refund units back instead of taking Cost (CHECK's REFUND).
	Refunding bool
	Refund    int64
	// Priority is the call's tier (CHECK's PRIORITY); empty for none. With AnyTier, a tier
	// a policy's limit does not name is no tier rather than an error: the tier came from a
	// request header, which must neither fail the request nor pick a tier that is not there.
	Priority string
	AnyTier  bool
	Remote   string // the peer's address, for SLOWLOG and MONITOR
}

// Decision is one decision, as CHECK replies it.
type Decision struct {
	Limited      bool
	Limit        int64
	Remaining    int64
	RetryAfterMs int64 // -1 when allowed, or when the cost can never fit
	ResetAfterMs int64
	Status       string // ok, warning, allowlisted, denylisted, shadow
}

// PolicyDecision is one policy's part of a Result.
type PolicyDecision struct {
	Policy string
	// Window is the policy's period, for RateLimit-Policy's w; 0 when unknown.
	Window time.Duration
	Decision
}

// Result is a request's outcome: the combined decision, then each policy's.
type Result struct {
	Decision
	Policies []PolicyDecision
}

// Errors a Decider wraps, each with the HTTP status it becomes.
var (
	// ErrUnauthorized is for missing or wrong credentials: 401.
	ErrUnauthorized = errors.New("authentication required")
	// ErrForbidden is for a user the ACL refuses: 403.
	ErrForbidden = errors.New("forbidden")
	// ErrUnknownPolicy is for a policy that does not exist: 400.
	ErrUnknownPolicy = errors.New("unknown policy")
	// ErrBadRequest is for an argument refused: 400.
	ErrBadRequest = errors.New("bad request")
)
