package server

import (
	"context"
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
	"github.com/throttledhq/throttled/envoyrls"
	"github.com/throttledhq/throttled/httpapi"
)

// Authentication at grpc-port, as at the RESP and HTTP ports: a request names its ACL user
// in its authorization metadata, in the forms http-port takes (Basic user:password, Bearer
// user:password, Bearer password for the default user), which Envoy sends as its
// grpc_service's initial_metadata. Without it, over grpc-tls with tls-auth-clients-user CN,
// the client certificate's common name names the user, as on tls-port; else a request acts
// as the default user, which needs none unless requirepass (or its rules) asks for one. The
// interceptor leaves the user in the request's context; edgeDecider.Decide applies its ACL
// to CHECK and to the key of each descriptor's policy and subject, as CHECK over RESP does.
// gRPC health checking stays open, as /healthz does: it tells nothing and spends nothing.
//
// Envoy sends the same credential on every request, so a verified one is remembered
// (acl.Verified) rather than hashed and looked up under the ACL's lock each time. It is
// remembered with the ACL's change count (acl.Registry.Changes): any ACL SETUSER, DELUSER or
// LOAD, a new password or requirepass included, makes every remembered credential be
// verified again at its next use. The user's permissions are read at each request, as a
// RESP connection's are.

// edgeUserKey is the context key of a gRPC or /json request's ACL user.
type edgeUserKey struct{}

// withEdgeUser returns ctx carrying the request's user.
func withEdgeUser(ctx context.Context, u *acl.User) context.Context {
	return context.WithValue(ctx, edgeUserKey{}, u)
}

// edgeUser returns the user of an authenticated request; nil when none authenticated it.
func edgeUser(ctx context.Context) *acl.User {
	u, _ := ctx.Value(edgeUserKey{}).(*acl.User)
	return u
}

// grpcHealthPrefix starts the methods of gRPC health checking, which need no user.
const grpcHealthPrefix = "/grpc.health.v1.Health/"

// grpcAuth is grpc-port's interceptor: it finds the request's user, or refuses the request
// with UNAUTHENTICATED before anything is read or written.
func (s *Server) grpcAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if strings.HasPrefix(info.FullMethod, grpcHealthPrefix) {
		return h(ctx, req)
	}
	u, err := s.grpcUser(ctx)
	if err != nil {
		return nil, status.Error(codes.Unauthenticated, err.Error())
	}
	return h(withEdgeUser(ctx, u), req)
}

// grpcUser is the user a gRPC request's metadata names; without any, the user its client
// certificate names (tls-auth-clients-user CN), or the default user when that one needs no
// password.
func (s *Server) grpcUser(ctx context.Context) (*acl.User, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	switch {
	case len(vals) > 1:
		return nil, fmt.Errorf("%w: one authorization metadata entry, got %d", envoyrls.ErrUnauthenticated, len(vals))
	case len(vals) == 1:
		return s.credentialUser(vals[0])
	}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			if u := s.certUser(info.State); u != nil {
				return u, nil
			}
		}
	}
	if s.passwordSet() {
		return nil, fmt.Errorf("%w: authorization metadata (Basic user:password or Bearer password)", envoyrls.ErrUnauthenticated)
	}
	return s.acl.Default(), nil
}

// credentialUser verifies an authorization value, or finds it verified since the ACL's last
// change.
func (s *Server) credentialUser(v string) (*acl.User, error) {
	changes := s.acl.Changes()
	if u := s.edge.creds.Get(changes, v); u != nil {
		return u, nil
	}
	cred, err := httpapi.ParseAuthorization(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", envoyrls.ErrUnauthenticated, err)
	}
	name := cred.User
	if name == "" {
		name = acl.DefaultUser
	}
	u, err := s.authenticate([]byte(name), []byte(cred.Password))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", envoyrls.ErrUnauthenticated, command.ErrorText(err))
	}
	s.edge.creds.Put(changes, v, u)
	return u, nil
}

// checkEdgeACL checks that c's user may decide items: run CHECK, on the key CHECK derives
// for each item's policy and subject. The error wraps envoyrls.ErrPermissionDenied.
func (s *Server) checkEdgeACL(c *client, cmd *cmdEntry, items []envoyrls.Item) error {
	p := c.user.Load().Perms()
	if p.All {
		return nil
	}
	for _, it := range items {
		if err := s.checkACL(c, p, cmd, [][]byte{bCheck, []byte(it.Policy), []byte(it.Subject)}); err != nil {
			return fmt.Errorf("%w: %s", envoyrls.ErrPermissionDenied, command.ErrorText(err))
		}
	}
	return nil
}
