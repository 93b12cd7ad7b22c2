package server

import "github.com/throttledhq/throttled/metrics"

// door is the way a decision came in: a RESP connection (or a script), http-port, or
// grpc-port. Envoy's /json form on http-port is http-port's.
type door uint8

const (
	doorRESP door = iota
	doorHTTP
	doorGRPC
	doors
)

var doorNames = [doors]string{"resp", "http", "grpc"}

// transports splits the decisions by the door they came in, for the metrics' transport
// label: the edge's doors count their own, and RESP's are the rest.
func (s *Server) transports() []metrics.Transport {
	out := make([]metrics.Transport, doors)
	for d := doorHTTP; d < doors; d++ {
		out[d] = metrics.Transport{Transport: doorNames[d], Allowed: s.stats.byDoor[d][0].Load(), Denied: s.stats.byDoor[d][1].Load()}
	}
	// The totals are read after the doors' counts, which decided adds after them: RESP's
	// never go below the truth, nor back, but across a RESETSTAT.
	resp := &out[doorRESP]
	*resp = metrics.Transport{Transport: doorNames[doorRESP], Allowed: s.stats.allowed.Load(), Denied: s.stats.denied.Load()}
	for d := doorHTTP; d < doors; d++ {
		resp.Allowed -= out[d].Allowed
		resp.Denied -= out[d].Denied
	}
	resp.Allowed, resp.Denied = max(resp.Allowed, 0), max(resp.Denied, 0)
	return out
}
