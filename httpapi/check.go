package httpapi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/throttledhq/throttled/ratelimit"
	"github.com/throttledhq/throttled/resp"
)

// The Decider the server lends: a Request becomes a CHECK command (CheckArgs), which the
// server runs as the request's user on a client of its own, as a RESP request goes (the
// same ACL checks, gate, commandstats, INFO throttle, TOPDENIED, deny events, SLOWLOG and
// MONITOR), and CHECK's RESP2 reply becomes a Result (ParseCheckReply).

// RunFunc runs args, a CHECK command, as the user cred names, for a request from remote
// (for SLOWLOG and MONITOR), with a tier the policies do not name taken as none when
// anyTier (Request.AnyTier); it appends CHECK's RESP2 reply, an error reply included, to
// reply and returns it. Its error wraps ErrUnauthorized when cred names no user (or none
// where a password is needed); then nothing ran.
type RunFunc func(cred Credentials, remote string, anyTier bool, args [][]byte, reply []byte) ([]byte, error)

// CheckDecider is a Decider that runs each request as a CHECK command.
type CheckDecider struct {
	run     RunFunc
	window  func(policy string, limit int64) time.Duration
	replies sync.Pool // of *[]byte: a reply's bytes, reused
}

// NewCheckDecider returns the Decider that runs CHECK through run; window is a policy's
// period for RateLimit-Policy's w, given its limit (0 when unknown).
func NewCheckDecider(run RunFunc, window func(policy string, limit int64) time.Duration) *CheckDecider {
	return &CheckDecider{run: run, window: window}
}

// Decide implements Decider.
func (d *CheckDecider) Decide(cred Credentials, req Request) (Result, error) {
	buf, _ := d.replies.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	defer d.replies.Put(buf)
	reply, err := d.run(cred, req.Remote, req.AnyTier, CheckArgs(req), (*buf)[:0])
	*buf = reply
	if err != nil {
		return Result{}, err
	}
	res, err := ParseCheckReply(reply, len(req.Policies))
	if err != nil {
		return res, err
	}
	for i := range res.Policies {
		res.Policies[i].Policy = req.Policies[i]
		res.Policies[i].Window = d.window(req.Policies[i], res.Policies[i].Limit)
	}
	return res, nil
}

var (
	bCheck    = []byte("CHECK")
	bCost     = []byte("COST")
	bPeek     = []byte("PEEK")
	bRefund   = []byte("REFUND")
	bPriority = []byte("PRIORITY")
)

// CheckArgs is req as a CHECK command: CHECK policies subject [COST n] [PEEK] [REFUND n]
// [PRIORITY tier], the policies joined by ','. Its arguments are new: the server may keep
// them (SLOWLOG, MONITOR).
func CheckArgs(req Request) [][]byte {
	names := strings.Join(req.Policies, ",")
	args := [][]byte{bCheck, []byte(names), []byte(req.Subject)}
	if req.Cost != 1 {
		args = append(args, bCost, strconv.AppendInt(nil, req.Cost, 10))
	}
	if req.Peek {
		args = append(args, bPeek)
	}
	if req.Refunding {
		args = append(args, bRefund, strconv.AppendInt(nil, req.Refund, 10))
	}
	if req.Priority != "" {
		args = append(args, bPriority, []byte(req.Priority))
	}
	return args
}

// errBadReply: CHECK wrote what a decision never is (a bug).
var errBadReply = errors.New("CHECK's reply did not parse")

// ParseCheckReply reads CHECK's RESP2 reply for a request of policies policies: one
// decision with its status, or the combined decision and each policy's. An error reply
// becomes an error that wraps ErrForbidden (NOPERM), ErrUnknownPolicy or ErrBadRequest
// (CHECK's refusals of its arguments), or a plain error (the server cannot decide now). The
// Policies' names and windows are left for the caller.
func ParseCheckReply(b []byte, policies int) (Result, error) {
	var res Result
	if len(b) > 0 && b[0] == '-' {
		text := strings.TrimRight(string(b[1:]), "\r\n")
		switch {
		case strings.HasPrefix(text, "NOPERM"):
			return res, fmt.Errorf("%w: %s", ErrForbidden, text)
		case strings.HasPrefix(text, "ERR "+ratelimit.ErrNoPolicy.Error()):
			return res, fmt.Errorf("%w: %s", ErrUnknownPolicy, strings.TrimPrefix(text, "ERR "))
		case strings.HasPrefix(text, "ERR invalid"), strings.HasPrefix(text, "ERR CHECK policy"), strings.HasPrefix(text, "ERR syntax"),
			strings.HasPrefix(text, "ERR "+ratelimit.ErrSubjectTooLong.Error()):
			return res, fmt.Errorf("%w: %s", ErrBadRequest, strings.TrimPrefix(text, "ERR "))
		}
		return res, errors.New(text)
	}
	r := decisionReader{resp.ReplyReader{B: b}}
	if policies > 1 {
		if n := r.Header('*'); n != int64(policies+1) {
			return res, errBadReply
		}
		res.Decision = r.decision()
	}
	res.Policies = make([]PolicyDecision, policies)
	for i := range res.Policies {
		res.Policies[i].Decision = r.decision()
	}
	if policies == 1 {
		res.Decision = res.Policies[0].Decision
	}
	if r.Bad || len(r.B) != 0 {
		return res, errBadReply
	}
	return res, nil
}

// decisionReader reads CHECK's decisions from its RESP2 reply.
type decisionReader struct{ resp.ReplyReader }

// decision reads [limited, limit, remaining, retry_after_ms, reset_after_ms, (delay_ms,) status].
func (r *decisionReader) decision() Decision {
	var d Decision
	n := r.Header('*')
	if r.Bad || n < 6 || n > 7 {
		r.Bad = true
		return d
	}
	d.Limited = r.Header(':') == 1
	d.Limit = r.Header(':')
	d.Remaining = r.Header(':')
	d.RetryAfterMs = r.Header(':')
	d.ResetAfterMs = r.Header(':')
	if n == 7 {
		r.Header(':') // LEAKYBUCKET's delay_ms: no header says it
	}
	d.Status = string(r.Bulk())
	return d
}
