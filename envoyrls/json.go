package envoyrls

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// maxJSONBody bounds a /json request's body.
const maxJSONBody = 1 << 20

// overHTTP is the context key ServeJSON marks its requests with.
type overHTTP struct{}

// OverHTTP reports whether a request came by ServeJSON rather than by gRPC: the door its
// decisions count under.
func OverHTTP(ctx context.Context) bool {
	v, _ := ctx.Value(overHTTP{}).(bool)
	return v
}

// ServeJSON answers envoyproxy/ratelimit's /json form of ShouldRateLimit, so that curl can
// ask: POST a RateLimitRequest in protobuf's JSON mapping, get the RateLimitResponse the same
// way, with 200 when its overall code is OK and 429 when OVER_LIMIT. A bad request gets 400
// and a JSON error naming the problem. The HTTP port mounts it at /json.
func (s *Service) ServeJSON(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, msg string) {
		b, _ := json.Marshal(map[string]string{"error": msg})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write(b)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, "POST a RateLimitRequest as JSON")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			fail(http.StatusRequestEntityTooLarge, "the body is larger than 1 MiB")
			return
		}
		fail(http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	var req rlsv3.RateLimitRequest
	if err := protojson.Unmarshal(body, &req); err != nil {
		fail(http.StatusBadRequest, "not a RateLimitRequest: "+err.Error())
		return
	}
	resp, err := s.ShouldRateLimit(context.WithValue(context.WithoutCancel(r.Context()), overHTTP{}, true), &req)
	if err != nil {
		st := status.Convert(err)
		code := http.StatusServiceUnavailable
		switch st.Code() {
		case codes.InvalidArgument:
			code = http.StatusBadRequest
		case codes.Unauthenticated:
			code = http.StatusUnauthorized
		case codes.PermissionDenied:
			code = http.StatusForbidden
		}
		fail(code, st.Message())
		return
	}
	b, err := protojson.Marshal(resp)
	if err != nil {
		fail(http.StatusInternalServerError, err.Error())
		return
	}
	for _, h := range resp.ResponseHeadersToAdd {
		w.Header().Set(h.Key, h.Value)
	}
	w.Header().Set("Content-Type", "application/json")
	if resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT {
		w.WriteHeader(http.StatusTooManyRequests)
	}
	w.Write(b)
}
