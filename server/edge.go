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
		out[d].Transport = doorNames[d]
		for _, sl := range s.slots {
			out[d].Allowed += sl.byDoor[d][0].Load()
			out[d].Denied += sl.byDoor[d][1].Load()
		}
	}
	// The totals are read after every slot's doors' counts, which decided adds after
	// them: RESP's never go below the truth, nor back, but across a RESETSTAT.
	resp := &out[doorRESP]
	t := s.totals()
	*resp = metrics.Transport{Transport: doorNames[doorRESP], Allowed: t.allowed, Denied: t.denied}
	for d := doorHTTP; d < doors; d++ {
		resp.Allowed -= out[d].Allowed
		resp.Denied -= out[d].Denied
	}
	resp.Allowed, resp.Denied = max(resp.Allowed, 0), max(resp.Denied, 0)
	return out
}
