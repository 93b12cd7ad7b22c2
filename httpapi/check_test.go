package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheckArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"one policy", Request{Policies: []string{"api"}, Subject: "k", Cost: 1}, "CHECK api k"},
		{"policies joined", Request{Policies: []string{"a", "b"}, Subject: "k", Cost: 1}, "CHECK a,b k"},
		{"cost", Request{Policies: []string{"api"}, Subject: "k", Cost: 3}, "CHECK api k COST 3"},
		{"peek", Request{Policies: []string{"api"}, Subject: "k", Cost: 1, Peek: true}, "CHECK api k PEEK"},
		{"refund", Request{Policies: []string{"api"}, Subject: "k", Cost: 1, Refunding: true, Refund: 5}, "CHECK api k REFUND 5"},
		{"priority", Request{Policies: []string{"api"}, Subject: "k", Cost: 2, Priority: "gold"}, "CHECK api k COST 2 PRIORITY gold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range CheckArgs(tc.req) {
				got = append(got, string(a))
			}
			require.Equal(t, tc.want, strings.Join(got, " "))
		})
	}
}

// decision is CHECK's RESP2 reply for one policy.
func decision(limited, limit, remaining, retry, reset int, status string) string {
	return "*6\r\n:" + itoa(limited) + "\r\n:" + itoa(limit) + "\r\n:" + itoa(remaining) + "\r\n:" + itoa(retry) +
		"\r\n:" + itoa(reset) + "\r\n$" + itoa(len(status)) + "\r\n" + status + "\r\n"
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestParseCheckReply(t *testing.T) {
	allowed := Decision{Limit: 10, Remaining: 9, RetryAfterMs: -1, ResetAfterMs: 100, Status: "ok"}
	denied := Decision{Limited: true, Limit: 5, RetryAfterMs: 200, ResetAfterMs: 1000, Status: "warning"}
	for _, tc := range []struct {
		name     string
		reply    string
		policies int
		want     Result
		err      error  // wrapped, when not nil
		text     string // the error's text, when not empty
	}{
		{name: "one policy", reply: decision(0, 10, 9, -1, 100, "ok"), policies: 1,
			want: Result{Decision: allowed, Policies: []PolicyDecision{{Decision: allowed}}}},
		{name: "LEAKYBUCKET's delay_ms is skipped", policies: 1,
			reply: "*7\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:100\r\n:40\r\n$2\r\nok\r\n",
			want:  Result{Decision: allowed, Policies: []PolicyDecision{{Decision: allowed}}}},
		{name: "combined then each", policies: 2,
			reply: "*3\r\n" + decision(1, 5, 0, 200, 1000, "warning") + decision(0, 10, 9, -1, 100, "ok") + decision(1, 5, 0, 200, 1000, "warning"),
			want:  Result{Decision: denied, Policies: []PolicyDecision{{Decision: allowed}, {Decision: denied}}}},
		{name: "NOPERM is forbidden", reply: "-NOPERM no permissions to access a key\r\n", policies: 1, err: ErrForbidden},
		{name: "an unknown policy", reply: "-ERR no such policy 'x'\r\n", policies: 1, err: ErrUnknownPolicy},
		{name: "a bad argument", reply: "-ERR invalid cost\r\n", policies: 1, err: ErrBadRequest, text: "bad request: invalid cost"},
		{name: "a syntax error", reply: "-ERR syntax error\r\n", policies: 1, err: ErrBadRequest},
		{name: "another error stays itself", reply: "-NOREPLICAS Not enough good replicas to write.\r\n", policies: 1,
			text: "NOREPLICAS Not enough good replicas to write."},
		{name: "too few decisions", reply: "*2\r\n" + decision(0, 10, 9, -1, 100, "ok"), policies: 2, err: errBadReply},
		{name: "trailing bytes", reply: decision(0, 10, 9, -1, 100, "ok") + ":1\r\n", policies: 1, err: errBadReply},
		{name: "a short decision", reply: "*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:100\r\n", policies: 1, err: errBadReply},
		{name: "truncated", reply: decision(0, 10, 9, -1, 100, "ok")[:10], policies: 1, err: errBadReply},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCheckReply([]byte(tc.reply), tc.policies)
			if tc.err == nil && tc.text == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
				return
			}
			require.Error(t, err)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			}
			if tc.text != "" {
				require.Equal(t, tc.text, err.Error())
			}
		})
	}
}

// TestCheckDecider: the decider hands run the request's CHECK, its remote and AnyTier, and
// names each policy's decision with its window; run's error is the decision's.
func TestCheckDecider(t *testing.T) {
	var gotArgs []string
	var gotRemote string
	var gotAnyTier bool
	reply := "*3\r\n" + decision(0, 5, 4, -1, 100, "ok") + decision(0, 10, 9, -1, 100, "ok") + decision(0, 5, 4, -1, 100, "ok")
	run := func(cred Credentials, remote string, anyTier bool, args [][]byte, b []byte) ([]byte, error) {
		if cred.Given && cred.Password != "pw" {
			return b, ErrUnauthorized
		}
		gotArgs = gotArgs[:0]
		for _, a := range args {
			gotArgs = append(gotArgs, string(a))
		}
		gotRemote, gotAnyTier = remote, anyTier
		return append(b, reply...), nil
	}
	window := func(policy string, limit int64) time.Duration { return time.Duration(limit) * time.Second }
	d := NewCheckDecider(run, window)
	req := Request{Policies: []string{"a", "b"}, Subject: "s", Cost: 1, Priority: "gold", AnyTier: true, Remote: "192.0.2.1:5"}
	for range 3 { // the reply's buffer is reused
		res, err := d.Decide(Credentials{}, req)
		require.NoError(t, err)
		require.Equal(t, []string{"CHECK", "a,b", "s", "PRIORITY", "gold"}, gotArgs)
		require.Equal(t, "192.0.2.1:5", gotRemote)
		require.True(t, gotAnyTier)
		require.Equal(t, int64(4), res.Remaining)
		require.Len(t, res.Policies, 2)
		require.Equal(t, "a", res.Policies[0].Policy)
		require.Equal(t, 10*time.Second, res.Policies[0].Window)
		require.Equal(t, "b", res.Policies[1].Policy)
		require.Equal(t, 5*time.Second, res.Policies[1].Window)
		require.Equal(t, "ok", res.Policies[1].Status)
	}
	_, err := d.Decide(Credentials{Given: true, Password: "wrong"}, req)
	require.ErrorIs(t, err, ErrUnauthorized)
}
