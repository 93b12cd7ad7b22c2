package envoyrls

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/httpapi"
)

// Authentication at grpc-port, as at the RESP and HTTP ports: a request names its ACL user
// in its authorization metadata, in the forms http-port takes (Basic user:password, Bearer
// user:password, Bearer password for the default user), which Envoy sends as its
// grpc_service's initial_metadata. Without it, over grpc-tls with tls-auth-clients-user CN,
// the client certificate's common name names the user, as on tls-port; else a request acts
// as the default user, which needs none unless requirepass (or its rules) asks for one. The
// interceptor leaves the user in the request's context (WithUser); the server's decision
// applies its ACL to CHECK and to the key of each descriptor's policy and subject, as CHECK
// over RESP does. gRPC health checking stays open, as /healthz does: it tells nothing and
// spends nothing.
//
// Envoy sends the same credential on every request, so a verified one is remembered
// (acl.Verified) rather than hashed and looked up under the ACL's lock each time. It is
// remembered with the ACL's change count (acl.Registry.Changes): any ACL SETUSER, DELUSER or
// LOAD, a new password or requirepass included, makes every remembered credential be
// verified again at its next use. The user's permissions are read at each request, as a
// RESP connection's are.

// userKey is the context key of a gRPC or /json request's ACL user.
type userKey struct{}

// WithUser returns ctx carrying the request's user, as Auth's interceptor leaves it.
func WithUser(ctx context.Context, u *acl.User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user of an authenticated request; nil when none authenticated it.
func UserFrom(ctx context.Context) *acl.User {
	u, _ := ctx.Value(userKey{}).(*acl.User)
	return u
}

// healthPrefix starts the methods of gRPC health checking, which need no user.
const healthPrefix = "/grpc.health.v1.Health/"

// Auth finds the users of grpc-port's requests.
type Auth struct {
	users *acl.Registry
	// authenticate is the user a name and password name, or the error AUTH would answer.
	authenticate func(name, password []byte) (*acl.User, error)
	// certUser is the user a client certificate names (tls-auth-clients-user CN); nil for none.
	certUser func(tls.ConnectionState) *acl.User
	creds    acl.Verified // the authorization values verified lately
}

// NewAuth returns the authentication of users' requests: authenticate checks a name and
// password (logging a failure), certUser finds the user a verified client certificate
// names, nil for none.
func NewAuth(users *acl.Registry, authenticate func(name, password []byte) (*acl.User, error),
	certUser func(tls.ConnectionState) *acl.User) *Auth {
	return &Auth{users: users, authenticate: authenticate, certUser: certUser}
}

// Interceptor is grpc-port's unary interceptor: it finds the request's user, or refuses the
// request with UNAUTHENTICATED before anything is read or written.
func (a *Auth) Interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if strings.HasPrefix(info.FullMethod, healthPrefix) {
		return h(ctx, req)
	}
	u, err := a.User(ctx)
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, err.Error())
	}
	return h(WithUser(ctx, u), req)
}

// User is the user a gRPC request's metadata names; without any, the user its client
// certificate names (tls-auth-clients-user CN), or the default user when that one needs no
// password. The error wraps ErrUnauthenticated.
func (a *Auth) User(ctx context.Context) (*acl.User, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	switch {
	case len(vals) > 1:
		return nil, fmt.Errorf("%w: one authorization metadata entry, got %d", ErrUnauthenticated, len(vals))
	case len(vals) == 1:
		return a.CredentialUser(vals[0])
	}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			if u := a.certUser(info.State); u != nil {
				return u, nil
			}
		}
	}
	if !a.users.DefaultOpen() {
		return nil, fmt.Errorf("%w: authorization metadata (Basic user:password or Bearer password)", ErrUnauthenticated)
	}
	return a.users.Default(), nil
}

// CredentialUser verifies an authorization value, or finds it verified since the ACL's
// last change. The error wraps ErrUnauthenticated.
func (a *Auth) CredentialUser(v string) (*acl.User, error) {
	changes := a.users.Changes()
	if u := a.creds.Get(changes, v); u != nil {
		return u, nil
	}
	cred, err := httpapi.ParseAuthorization(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnauthenticated, err)
	}
	name := cred.User
	if name == "" {
		name = acl.DefaultUser
	}
	u, err := a.authenticate([]byte(name), []byte(cred.Password))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrUnauthenticated, command.ErrorText(err))
	}
	a.creds.Put(changes, v, u)
	return u, nil
}
