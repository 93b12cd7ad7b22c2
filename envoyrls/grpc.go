package envoyrls

import (
	"crypto/tls"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/httpapi"
)

// GRPCServer returns a gRPC server with the service registered (Register), its requests
// authenticated by auth: at most 1 MiB a message and 1024 streams a connection, 10 seconds
// for a handshake, keepalive pings no more often than every 10 seconds, idle connections
// closed after idle (0: never), and TLS with conf when it is not nil.
func (s *Service) GRPCServer(auth *Auth, idle time.Duration, conf *tls.Config) *grpc.Server {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(1 << 20),
		grpc.MaxConcurrentStreams(1024),
		grpc.ConnectionTimeout(10 * time.Second),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(auth.Interceptor),
	}
	if idle > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: idle}))
	}
	if conf != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(WithH2(conf))))
	}
	g := grpc.NewServer(opts...)
	s.Register(g)
	return g
}

// WithH2 returns base with HTTP/2's ALPN name, which gRPC clients ask for, in it and in
// every configuration its GetConfigForClient returns.
func WithH2(base *tls.Config) *tls.Config {
	base = base.Clone()
	base.NextProtos = []string{"h2"}
	get := base.GetConfigForClient
	if get == nil {
		return base
	}
	base.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		c, err := get(h)
		if c == nil || err != nil {
			return c, err
		}
		c = c.Clone()
		c.NextProtos = []string{"h2"}
		return c, nil
	}
	return base
}

// JSONHandler is ServeJSON behind http-port's users: user finds the user a request's
// credentials name (an error wrapping httpapi.ErrUnauthorized refuses it), and may refuses
// one the decision is not for (httpapi.ErrForbidden). The decision applies the user's ACL
// to each descriptor's key, so the user let in goes with the request (WithUser).
func (s *Service) JSONHandler(user func(httpapi.Credentials) (*acl.User, error), may func(*acl.User) error) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, _ := httpapi.RequestCredentials(r)
		u, _ := user(cred) // Authorize verified it; nil, refused, if it just changed
		s.ServeJSON(w, r.WithContext(WithUser(r.Context(), u)))
	})
	return httpapi.Authorize(inner, func(cred httpapi.Credentials) error {
		u, err := user(cred)
		if err != nil {
			return err
		}
		return may(u)
	})
}
