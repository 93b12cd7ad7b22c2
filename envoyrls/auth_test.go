package envoyrls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/throttledhq/throttled/acl"
)

// errWrongPass is what the test's authenticate answers, as AUTH would.
var errWrongPass = errors.New("WRONGPASS invalid username-password pair or user is disabled.")

// testAuth is an Auth over a registry of its own; verified counts the passwords checked,
// and a client certificate's common name is its user.
func testAuth(t *testing.T) (a *Auth, users *acl.Registry, verified *int) {
	users = acl.New(acl.NewCatalog([]acl.Command{{Name: "check", Parent: -1}}))
	verified = new(int)
	authenticate := func(name, pass []byte) (*acl.User, error) {
		*verified++
		if u := users.Authenticate(name, pass); u != nil {
			return u, nil
		}
		return nil, errWrongPass
	}
	certUser := func(st tls.ConnectionState) *acl.User {
		if len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
			return nil
		}
		return users.Enabled(st.VerifiedChains[0][0].Subject.CommonName)
	}
	return NewAuth(users, authenticate, certUser), users, verified
}

func withAuthorization(vals ...string) context.Context {
	md := metadata.MD{}
	for _, v := range vals {
		md.Append("authorization", v)
	}
	return metadata.NewIncomingContext(context.Background(), md)
}

func TestAuthUser(t *testing.T) {
	a, users, _ := testAuth(t)
	u, err := a.User(context.Background())
	require.NoError(t, err)
	require.Equal(t, users.Default(), u, "the default user needs no password")

	_, err = users.SetUser("default", []string{"resetpass", ">s3cret"})
	require.NoError(t, err)
	_, err = users.SetUser("app", []string{"on", ">apppw", "+check", "~*"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string // the user's name; empty for a refusal
		err  string
	}{
		{"no credentials", context.Background(), "", "authorization metadata (Basic user:password or Bearer password)"},
		{"two entries", withAuthorization("Bearer s3cret", "Bearer s3cret"), "", "one authorization metadata entry, got 2"},
		{"the default user's password", withAuthorization("Bearer s3cret"), "default", ""},
		{"Basic", withAuthorization("Basic YXBwOmFwcHB3"), "app", ""}, // app:apppw
		{"Bearer user:password", withAuthorization("Bearer app:apppw"), "app", ""},
		{"a wrong password", withAuthorization("Bearer app:nope"), "", "WRONGPASS"},
		{"an unknown scheme", withAuthorization("Digest x"), "", "authentication required"},
		{"a certificate's user", certificate("app"), "app", ""},
		{"a certificate of no user", certificate("nobody"), "", "authorization metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := a.User(tc.ctx)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrUnauthenticated)
				require.ErrorContains(t, err, tc.err)
				require.Nil(t, u)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, u.Name())
		})
	}
}

// certificate is a context whose peer showed a verified client certificate for cn.
func certificate(cn string) context.Context {
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	info := credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}}
	return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{}, AuthInfo: info})
}

// TestAuthRemembers: a credential verified once is not verified again until the ACL
// changes; a wrong one is never remembered.
func TestAuthRemembers(t *testing.T) {
	a, users, verified := testAuth(t)
	_, err := users.SetUser("default", []string{"resetpass", ">s3cret"})
	require.NoError(t, err)
	for range 3 {
		u, err := a.CredentialUser("Bearer s3cret")
		require.NoError(t, err)
		require.Equal(t, users.Default(), u)
	}
	require.Equal(t, 1, *verified)
	for range 2 {
		_, err := a.CredentialUser("Bearer wrong")
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	require.Equal(t, 3, *verified)

	_, err = users.SetUser("default", []string{"resetpass", ">other"})
	require.NoError(t, err)
	_, err = a.CredentialUser("Bearer s3cret")
	require.ErrorIs(t, err, ErrUnauthenticated, "the old password, after the ACL changed")
	require.Equal(t, 4, *verified)
}

// TestAuthInterceptor: health checking needs no user; the rate-limit service gets the
// request's user in its context, or UNAUTHENTICATED without calling the handler.
func TestAuthInterceptor(t *testing.T) {
	a, users, _ := testAuth(t)
	_, err := users.SetUser("default", []string{"resetpass", ">s3cret"})
	require.NoError(t, err)
	var got *acl.User
	called := false
	h := func(ctx context.Context, req any) (any, error) {
		called, got = true, UserFrom(ctx)
		return "answer", nil
	}
	health := &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"}
	rls := &grpc.UnaryServerInfo{FullMethod: "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"}

	resp, err := a.Interceptor(context.Background(), nil, health, h)
	require.NoError(t, err)
	require.Equal(t, "answer", resp)
	require.True(t, called)
	require.Nil(t, got)

	called = false
	_, err = a.Interceptor(context.Background(), nil, rls, h)
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	require.False(t, called)

	_, err = a.Interceptor(withAuthorization("Bearer s3cret"), nil, rls, h)
	require.NoError(t, err)
	require.True(t, called)
	require.Equal(t, users.Default(), got)
}
