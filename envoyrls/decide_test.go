package envoyrls

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/ratelimit"
)

// TestCheckDecider: the request's user, its door and its items go to the check; the
// results come back as Decisions; without a user nothing is checked.
func TestCheckDecider(t *testing.T) {
	user := acl.New(acl.NewCatalog(nil)).Default()
	var (
		gotUser  *acl.User
		gotHTTP  bool
		gotItems []ratelimit.EdgeItem
		fail     error
	)
	check := func(u *acl.User, overHTTP bool, items []ratelimit.EdgeItem, out []ratelimit.EdgeResult) ([]ratelimit.EdgeResult, error) {
		gotUser, gotHTTP, gotItems = u, overHTTP, append(gotItems[:0], items...)
		if fail != nil {
			return out, fail
		}
		for _, it := range items {
			out = append(out, ratelimit.EdgeResult{Limited: it.Cost > 1, Limit: 10, Remaining: 10 - it.Cost, RetryMs: -1, ResetMs: 5, Status: "ok", Refunded: 7})
		}
		return out, nil
	}
	var table policy.Table
	d := NewCheckDecider(check, func(t policy.Table) { table = t })
	d.SetPolicies(policy.Table{"p": nil})
	require.Contains(t, table, "p")

	items := []Item{{Policy: "p", Subject: "s", Cost: 1}, {Policy: "q", Subject: "t", Cost: 3, Priority: "gold", Refund: true}}
	_, err := d.Decide(context.Background(), items)
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.Nil(t, gotUser, "nothing checked without a user")

	ctx := WithUser(context.Background(), user)
	for range 2 { // the scratch is reused
		got, err := d.Decide(ctx, items)
		require.NoError(t, err)
		require.Equal(t, user, gotUser)
		require.False(t, gotHTTP)
		require.Equal(t, []ratelimit.EdgeItem{{Policy: "p", Subject: "s", Cost: 1}, {Policy: "q", Subject: "t", Cost: 3, Priority: "gold", Refund: true}}, gotItems)
		require.Equal(t, []Decision{
			{Limit: 10, Remaining: 9, RetryMs: -1, ResetMs: 5, Status: "ok"},
			{Limited: true, Limit: 10, Remaining: 7, RetryMs: -1, ResetMs: 5, Status: "ok"},
		}, got)
	}
	_, err = d.Decide(context.WithValue(ctx, overHTTP{}, true), items[:1])
	require.NoError(t, err)
	require.True(t, gotHTTP, "ServeJSON's requests count under http-port")

	fail = errors.New("NOREPLICAS")
	got, err := d.Decide(ctx, items)
	require.ErrorIs(t, err, fail)
	require.Nil(t, got)
}

// TestWithH2: gRPC's ALPN name in the configuration and in each one it hands a client.
func TestWithH2(t *testing.T) {
	inner := &tls.Config{NextProtos: []string{"http/1.1"}}
	base := &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return inner, nil }}
	conf := WithH2(base)
	require.Equal(t, []string{"h2"}, conf.NextProtos)
	require.Equal(t, uint16(tls.VersionTLS12), conf.MinVersion)
	c, err := conf.GetConfigForClient(&tls.ClientHelloInfo{})
	require.NoError(t, err)
	require.Equal(t, []string{"h2"}, c.NextProtos)
	require.Equal(t, []string{"http/1.1"}, inner.NextProtos, "the inner configuration is not changed")
	require.Nil(t, base.NextProtos, "nor the base")

	none := WithH2(&tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return nil, nil }})
	c, err = none.GetConfigForClient(&tls.ClientHelloInfo{})
	require.NoError(t, err)
	require.Nil(t, c, "no configuration of its own: the base's")
}
