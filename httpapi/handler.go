package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/ratelimit"
)

// The paths served.
const (
	checkPath = "/v1/check"
	authPath  = "/v1/auth/"
	// credHeader carries throttled's own credentials on forward-auth, where Authorization
	// is the end client's, forwarded by the proxy.
	credHeader = "X-Throttled-Authorization"
)

// ServeHTTP answers one request. Nothing a client sends panics it: a handler's panic would
// be net/http's to recover, and it is a bug.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.opt.Routes[r.URL.Path]; h != nil {
		h.ServeHTTP(w, r)
		return
	}
	switch p := r.URL.Path; {
	case p == checkPath:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "POST "+checkPath+" takes a JSON body")
			return
		}
		s.check(w, r)
	case strings.HasPrefix(p, authPath):
		s.auth(w, r)
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint '%s': POST %s or any method on %s<policy>", truncate(p, 64), checkPath, authPath))
	}
}

// checkBody is POST /v1/check's body.
type checkBody struct {
	Policy   string   `json:"policy"`   // a name, or several separated by commas
	Policies []string `json:"policies"` // or a list of names
	Subject  *string  `json:"subject"`
	Cost     *int64   `json:"cost"` // 1 when absent
	Peek     bool     `json:"peek"`
	Refund   *int64   `json:"refund"`   // units to give back, taking nothing
	Priority *string  `json:"priority"` // the call's tier
}

// check answers POST /v1/check {"policy", "subject", "cost", "peek", "refund", "priority"}.
func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	cred, err := credentials(r, true)
	if err != nil {
		writeError(w, http.StatusUnauthorized, err.Error())
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	var b checkBody
	if err := dec.Decode(&b); err != nil {
		writeError(w, http.StatusBadRequest, bodyError(err))
		return
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "bad JSON: more than one value in the body")
		return
	}
	req := Request{Cost: 1, Peek: b.Peek, Remote: r.RemoteAddr}
	names := b.Policies
	if b.Policy != "" {
		if len(names) > 0 {
			writeError(w, http.StatusBadRequest, "give 'policy' or 'policies', not both")
			return
		}
		names = strings.Split(b.Policy, ",")
	}
	if req.Policies, err = policyNames(names); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if b.Subject == nil {
		writeError(w, http.StatusBadRequest, "missing 'subject'")
		return
	}
	if req.Subject, err = subject(*b.Subject, "'subject'"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if b.Cost != nil {
		if *b.Cost < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("'cost' must be a whole number >= 0, got %d", *b.Cost))
			return
		}
		req.Cost = *b.Cost
	}
	if b.Refund != nil {
		switch {
		case b.Cost != nil:
			writeError(w, http.StatusBadRequest, "give 'cost' or 'refund', not both: a refund takes nothing")
			return
		case *b.Refund < 0:
			writeError(w, http.StatusBadRequest, fmt.Sprintf("'refund' must be a whole number >= 0, got %d", *b.Refund))
			return
		}
		req.Refunding, req.Refund = true, *b.Refund
	}
	if b.Priority != nil {
		if req.Priority, err = tier(*b.Priority, "'priority'"); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	res, ok := s.decide(w, cred, req)
	if !ok {
		return
	}
	status := http.StatusOK
	if res.Limited {
		status = http.StatusTooManyRequests
	}
	writeJSON(w, status, resultJSON(res))
}

// bodyError names what is wrong with a body json refused.
func bodyError(err error) string {
	var te *json.UnmarshalTypeError
	var me *http.MaxBytesError
	switch {
	case errors.As(err, &me):
		return fmt.Sprintf("body larger than %d bytes", maxBody)
	case errors.As(err, &te) && te.Field != "":
		return fmt.Sprintf("bad JSON: '%s' cannot be %s", te.Field, te.Value)
	case errors.Is(err, io.EOF):
		return "empty body: want {\"policy\": ..., \"subject\": ...}"
	}
	return "bad JSON: " + err.Error()
}

// auth answers forward-auth: any method on /v1/auth/<policy>[/anything], the subject taken
// from the request as the query's subject= says (see subjectFrom).
func (s *Server) auth(w http.ResponseWriter, r *http.Request) {
	cred, err := credentials(r, false)
	if err != nil {
		writeError(w, http.StatusUnauthorized, err.Error())
		return
	}
	names, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, authPath), "/")
	q := r.URL.Query()
	req := Request{Cost: 1, Remote: r.RemoteAddr}
	if req.Policies, err = policyNames(strings.Split(names, ",")); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	proxies, trusted := s.trustedPeer(r)
	if req.Subject, err = subjectFrom(r, q.Get("subject"), proxies, trusted); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if v := q.Get("cost"); v != "" {
		if req.Cost, err = strconv.ParseInt(v, 10, 64); err != nil || req.Cost < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query 'cost' must be a whole number >= 0, got '%s'", truncate(v, 32)))
			return
		}
	}
	if v := q.Get("peek"); v != "" {
		if req.Peek, err = strconv.ParseBool(v); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query 'peek' must be true or false, got '%s'", truncate(v, 32)))
			return
		}
	}
	if req.Priority, req.AnyTier, err = priorityFrom(r, q.Get("priority"), trusted); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	deny := http.StatusTooManyRequests
	if v := q.Get("deny"); v != "" {
		switch n, _ := strconv.Atoi(v); n {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
			deny = n
		default:
			writeError(w, http.StatusBadRequest, fmt.Sprintf("query 'deny' must be 401, 403 or 429, got '%s'", truncate(v, 32)))
			return
		}
	}
	res, ok := s.decide(w, cred, req)
	if !ok {
		return
	}
	if res.Limited {
		writeJSON(w, deny, resultJSON(res))
		return
	}
	w.WriteHeader(http.StatusOK)
}

// decide asks the Decider and sets the headers; false when it answered an error.
func (s *Server) decide(w http.ResponseWriter, cred Credentials, req Request) (Result, bool) {
	s.gate.RLock()
	if s.done {
		s.gate.RUnlock()
		writeError(w, http.StatusServiceUnavailable, "server is shutting down")
		return Result{}, false
	}
	res, err := s.d.Decide(cred, req)
	s.gate.RUnlock()
	if err != nil {
		status := http.StatusServiceUnavailable
		switch {
		case errors.Is(err, ErrUnauthorized):
			status = http.StatusUnauthorized
		case errors.Is(err, ErrForbidden):
			status = http.StatusForbidden
		case errors.Is(err, ErrUnknownPolicy), errors.Is(err, ErrBadRequest):
			status = http.StatusBadRequest
		default:
			s.log.Warn("http decision failed", "err", err)
		}
		writeError(w, status, err.Error())
		return res, false
	}
	s.setHeaders(w.Header(), res)
	return res, true
}

// policyNames checks the names CHECK will get.
func policyNames(names []string) ([]string, error) {
	if len(names) == 0 || len(names) == 1 && names[0] == "" {
		return nil, errors.New("missing 'policy'")
	}
	if len(names) > 64 {
		return nil, fmt.Errorf("%d policies in one request: at most 64", len(names))
	}
	for _, n := range names {
		if !policy.ValidName([]byte(n)) {
			return nil, fmt.Errorf("invalid policy name '%s': %v", truncate(n, 64), policy.ErrName)
		}
	}
	return names, nil
}

// subject checks a subject's size.
func subject(v, what string) (string, error) {
	switch {
	case v == "":
		return "", fmt.Errorf("empty subject: %s", what)
	case len(v) > ratelimit.MaxSubject:
		return "", fmt.Errorf("subject longer than %d bytes: %s", ratelimit.MaxSubject, what)
	}
	return v, nil
}

// subjectFrom takes forward-auth's subject from r, as from names it. A header is believed
// only from a trusted proxy (forwarded.go); from any other peer, each of the header sources
// is the peer's address.
//
//	"" or "x-forwarded-for": X-Forwarded-For's rightmost hop that is not a trusted proxy;
//	   without that header, the peer's address (a client that came straight in)
//	"forwarded": RFC 7239 Forwarded's for=, read as X-Forwarded-For's hops
//	"x-real-ip": X-Real-IP
//	"user": the user of the request's Authorization (Basic), or its bearer token
//	"ip": the peer's address
//	"header:<Name>": the header Name, such as header:X-Merchant-Id
func subjectFrom(r *http.Request, from string, proxies Proxies, trusted bool) (string, error) {
	h := r.Header
	switch strings.ToLower(from) {
	case "", "x-forwarded-for", "xff":
		if v := h.Values("X-Forwarded-For"); trusted && len(v) > 0 {
			return fromRight(forwardedFor(v), proxies, "X-Forwarded-For")
		}
		return peerIP(r), nil
	case "forwarded":
		if v := h.Values("Forwarded"); trusted && len(v) > 0 {
			hops, err := forwardedHops(v)
			switch {
			case err != nil:
				return "", err
			case len(hops) == 0:
				return peerIP(r), nil // no element names a client: the peer is all we know
			}
			return fromRight(hops, proxies, "Forwarded's for=")
		}
		return peerIP(r), nil
	case "x-real-ip":
		if !trusted {
			return peerIP(r), nil
		}
		v := strings.TrimSpace(h.Get("X-Real-IP"))
		if v != "" {
			v, _, _ = node(v)
		}
		return subject(v, "header X-Real-IP")
	case "ip":
		return peerIP(r), nil
	case "user":
		scheme, v, _ := strings.Cut(h.Get("Authorization"), " ")
		switch {
		case strings.EqualFold(scheme, "Basic"):
			if u, _, ok := basicAuth(v); ok {
				return subject(u, "the user of Authorization")
			}
		case strings.EqualFold(scheme, "Bearer"):
			return subject(strings.TrimSpace(v), "the token of Authorization")
		}
		return "", errors.New("empty subject: no Basic user or Bearer token in Authorization")
	}
	if name, ok := strings.CutPrefix(from, "header:"); ok && name != "" {
		if !trusted {
			return peerIP(r), nil
		}
		return subject(strings.TrimSpace(h.Get(name)), "header "+truncate(name, 64))
	}
	return "", fmt.Errorf("query 'subject' must be x-forwarded-for, forwarded, x-real-ip, user, ip or header:<name>, got '%s'", truncate(from, 64))
}

// priorityFrom takes forward-auth's tier as from, the query's priority=, names it:
//
//	"": none, the default tier
//	"header:<Name>": the header Name's value (none when it is absent or empty, or when the
//	   peer is not a trusted proxy: a client must not claim a better tier); anyTier, since a
//	   header's value must neither fail the request nor pick a tier that is not there
//	anything else: that tier, as the location the proxy guards names it
func priorityFrom(r *http.Request, from string, trusted bool) (name string, anyTier bool, err error) {
	if from == "" {
		return "", false, nil
	}
	if h, ok := strings.CutPrefix(from, "header:"); ok && h != "" {
		v := strings.TrimSpace(r.Header.Get(h))
		if v == "" || !trusted {
			return "", false, nil
		}
		name, err = tier(v, "header "+truncate(h, 64))
		return name, true, err
	}
	name, err = tier(from, "query 'priority'")
	return name, false, err
}

// tier checks a tier's name.
func tier(v, what string) (string, error) {
	switch {
	case v == "":
		return "", fmt.Errorf("empty tier: %s", what)
	case len(v) > maxTier:
		return "", fmt.Errorf("tier longer than %d bytes: %s", maxTier, what)
	}
	return v, nil
}

// peerIP is the host of the peer's address, written as node writes a hop's (an IPv4 peer of
// a dual-stack listener, ::ffff:192.0.2.1, is 192.0.2.1), so that one client is one subject
// whether it came straight in or through a proxy.
func peerIP(r *http.Request) string {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().WithZone("").String()
	}
	host := r.RemoteAddr
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if len(host) > ratelimit.MaxSubject { // no listener gives such an address; a handler's caller may
		host = host[:ratelimit.MaxSubject]
	}
	return host
}

// ReadCredentials reads a request's credentials as POST /v1/check does, for the other HTTP
// ports that take the same users (the metrics port's status page).
func ReadCredentials(r *http.Request) (Credentials, error) { return credentials(r, true) }

// credentials reads the request's credentials: X-Throttled-Authorization, or on /v1/check
// (withAuthorization) Authorization.
func credentials(r *http.Request, withAuthorization bool) (Credentials, error) {
	v := r.Header.Get(credHeader)
	if v == "" && withAuthorization {
		v = r.Header.Get("Authorization")
	}
	return ParseAuthorization(v)
}

// RequestCredentials are the credentials r gives: X-Throttled-Authorization, else
// Authorization, as Authorize reads them; for a route that needs the user Authorize let in.
func RequestCredentials(r *http.Request) (Credentials, error) { return credentials(r, true) }

// ParseAuthorization reads credentials as an Authorization header gives them: Basic
// user:password, or Bearer user:password or Bearer password (the default user's, as AUTH
// password); none when v is empty. The gRPC port reads its authorization metadata with it,
// so that one credential works on both doors.
func ParseAuthorization(v string) (Credentials, error) {
	if v == "" {
		return Credentials{}, nil
	}
	scheme, rest, _ := strings.Cut(v, " ")
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "Basic"):
		if u, p, ok := basicAuth(rest); ok {
			return Credentials{Given: true, User: u, Password: p}, nil
		}
		return Credentials{}, errors.New("bad Basic credentials: want base64 of user:password")
	case strings.EqualFold(scheme, "Bearer") && rest != "":
		if u, p, ok := strings.Cut(rest, ":"); ok {
			return Credentials{Given: true, User: u, Password: p}, nil
		}
		return Credentials{Given: true, Password: rest}, nil
	}
	return Credentials{}, errors.New("unsupported authorization: Basic or Bearer")
}

// basicAuth decodes Basic credentials.
func basicAuth(v string) (user, pass string, ok bool) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(b), ":")
}

// setHeaders writes a result's fields: RateLimit-Policy and RateLimit
// (draft-ietf-httpapi-ratelimit-headers-09/-10: one item per policy, q the quota, w the
// window in seconds, r the remaining units, t the seconds until the quota is back in full),
// Retry-After on a denial that can pass later, and the legacy X-RateLimit-* of the combined
// decision, seconds until reset in X-RateLimit-Reset.
func (s *Server) setHeaders(h http.Header, res Result) {
	var pol, cur []byte
	for i, p := range res.Policies {
		if i > 0 {
			pol = append(pol, ", "...)
			cur = append(cur, ", "...)
		}
		pol = strconv.AppendQuote(pol, p.Policy) // names are letters, digits, '_', '-', '.': a valid sf-string
		pol = append(pol, ";q="...)
		pol = strconv.AppendInt(pol, p.Limit, 10)
		if p.Window > 0 {
			pol = append(pol, ";w="...)
			pol = strconv.AppendInt(pol, ceilSeconds(p.Window.Milliseconds()), 10)
		}
		cur = strconv.AppendQuote(cur, p.Policy)
		cur = append(cur, ";r="...)
		cur = strconv.AppendInt(cur, p.Remaining, 10)
		cur = append(cur, ";t="...)
		cur = strconv.AppendInt(cur, ceilSeconds(p.ResetAfterMs), 10)
	}
	h.Set("RateLimit-Policy", string(pol))
	h.Set("RateLimit", string(cur))
	if res.Limited && res.RetryAfterMs >= 0 {
		h.Set("Retry-After", strconv.FormatInt(max(1, ceilSeconds(res.RetryAfterMs)), 10))
	}
	if s.opt.LegacyHeaders == nil || s.opt.LegacyHeaders() {
		h.Set("X-RateLimit-Limit", strconv.FormatInt(res.Limit, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(res.Remaining, 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilSeconds(res.ResetAfterMs), 10))
	}
}

// ceilSeconds rounds milliseconds up to whole seconds, never below 0.
func ceilSeconds(ms int64) int64 {
	if ms <= 0 {
		return 0
	}
	return (ms + 999) / 1000
}

// decisionJSON is a decision in a JSON body.
type decisionJSON struct {
	Policy       string `json:"policy,omitempty"`
	Allowed      bool   `json:"allowed"`
	Limit        int64  `json:"limit"`
	Remaining    int64  `json:"remaining"`
	RetryAfterMs int64  `json:"retry_after_ms"`
	ResetAfterMs int64  `json:"reset_after_ms"`
	Status       string `json:"status"`
}

// resultBody is a Result in a JSON body: the combined decision and each policy's.
type resultBody struct {
	decisionJSON
	Policies []decisionJSON `json:"policies"`
}

func toJSON(name string, d Decision) decisionJSON {
	return decisionJSON{Policy: name, Allowed: !d.Limited, Limit: d.Limit, Remaining: d.Remaining,
		RetryAfterMs: d.RetryAfterMs, ResetAfterMs: d.ResetAfterMs, Status: d.Status}
}

func resultJSON(res Result) resultBody {
	b := resultBody{decisionJSON: toJSON("", res.Decision), Policies: make([]decisionJSON, len(res.Policies))}
	for i, p := range res.Policies {
		b.Policies[i] = toJSON(p.Policy, p.Decision)
	}
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError answers status with {"error": msg}; 401 asks for Basic credentials.
func writeError(w http.ResponseWriter, status int, msg string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="throttled"`)
	}
	writeJSON(w, status, struct {
		Error string `json:"error"`
	}{msg})
}

// truncate bounds what an error repeats of a client's input.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Authorize wraps h, a route of Options.Routes, behind the same users as the decisions:
// the credentials a request gives (Basic, or a bearer token) go to check, which returns
// ErrUnauthorized or ErrForbidden to refuse it.
func Authorize(h http.Handler, check func(Credentials) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, err := credentials(r, true)
		if err == nil {
			err = check(cred)
		}
		switch {
		case err == nil:
			h.ServeHTTP(w, r)
		case errors.Is(err, ErrForbidden):
			writeError(w, http.StatusForbidden, err.Error())
		default:
			writeError(w, http.StatusUnauthorized, err.Error())
		}
	})
}
