package server

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// BenchmarkOptions stays in server while the verbs' tests are ratelimit's: it calls s.run in
// process, without a connection, so that allocs/op is the call's own.
//
// BenchmarkOptions sets each native verb's call, CHECK's and ALLOF's beside the same call
// with each of issue 23's options, so that `go test -bench Options` shows with and without
// side by side:
//   - none: the call as it is; an option that is not used must cost it nothing.
//   - REFUND: REFUND 1 on keys first taken 60 units deep, so that each call gives a unit back
//     and writes.
//   - TIERS: the tier "default" of TIERS payments=1 default=0.8: the call passes only where
//     cost + 20% of the limit would, so the limit is evaluated twice.
//   - PRIORITY: the same TIERS with PRIORITY payments (share 1): evaluated once.
//   - WINDOW/1mo and WINDOW/TZ (issue 38): a calendar window, in UTC and with TZ
//     Europe/Berlin, beside WINDOW/none, which must not pay for them.
//   - BLOCK: BLOCK 1m (issue 38's penalty box) on keys that have room, so that it costs what
//     an allowed call with it costs; a call without it pays one test of the key's first byte.
//   - BLOCKED: the same call on keys in their penalty box: denied by the block.
//
// Each runs on 1000 keys in turn, as benchVerb; every argument "k" is the key, "k2" a second
// key of its own.
func BenchmarkOptions(b *testing.B) {
	const tiers, payments = "TIERS payments=1 default=0.8", "TIERS payments=1 default=0.8 PRIORITY payments"
	verbs := []struct{ name, call string }{
		{"THROTTLE", "THROTTLE k 100 10 1m"},
		{"TOKENBUCKET", "TOKENBUCKET k 100 10 1s"},
		{"LEAKYBUCKET", "LEAKYBUCKET k 100 10 1s"},
		{"SLIDE", "SLIDE k 100 1m"},
		{"SLIDE_APPROX", "SLIDE k 100 1m APPROX"},
		{"WINDOW", "WINDOW k 100 1m"},
	}
	type option struct{ name, call, fill string }
	var cases []option
	for _, v := range verbs {
		cases = append(cases,
			option{v.name + "/none", v.call, ""},
			option{v.name + "/REFUND", v.call + " REFUND 1", v.call + " COST 60"},
			option{v.name + "/TIERS", v.call + " " + tiers, ""},
			option{v.name + "/PRIORITY", v.call + " " + payments, ""},
			option{v.name + "/BLOCK", v.call + " BLOCK 1m", ""},
			option{v.name + "/BLOCKED", v.call + " BLOCK 1m", v.call + " COST 100\n" + v.call + " BLOCK 1m"},
		)
	}
	cases = append(cases,
		option{"WINDOW/1mo", "WINDOW k 100 1mo", ""},
		option{"WINDOW/TZ", "WINDOW k 100 1mo TZ Europe/Berlin", ""},
		option{"ALLOF/none", "ALLOF THROTTLE k 100 10 1m WINDOW k2 100 1m", ""},
		option{"ALLOF/REFUND", "ALLOF THROTTLE k 100 10 1m REFUND 1 WINDOW k2 100 1m REFUND 1", "ALLOF THROTTLE k 100 10 1m COST 60 WINDOW k2 100 1m COST 60"},
		option{"ALLOF/TIERS", "ALLOF THROTTLE k 100 10 1m " + tiers + " WINDOW k2 100 1m " + tiers, ""},
		option{"ALLOF/PRIORITY", "ALLOF THROTTLE k 100 10 1m " + payments + " WINDOW k2 100 1m " + payments, ""},
		option{"ALLOF/BLOCK", "ALLOF THROTTLE k 100 10 1m BLOCK 1m WINDOW k2 100 1m BLOCK 1m", ""},
		option{"CHECK/none", "CHECK plain k", ""},
		option{"CHECK/BLOCK", "CHECK blocking k", ""},
		option{"CHECK/REFUND", "CHECK plain k REFUND 1", "CHECK plain k COST 60"},
		option{"CHECK/TIERS", "CHECK tiered k", ""},
		option{"CHECK/PRIORITY", "CHECK tiered k PRIORITY payments", ""},
	)
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			s, c := fuzzServer(b)
			for _, p := range []string{"POLICY.SET plain THROTTLE 100 10 1m", "POLICY.SET tiered THROTTLE 100 10 1m " + tiers,
				"POLICY.SET blocking THROTTLE 100 10 1m BLOCK 1m"} {
				benchDo(b, s, c, fields(p))
			}
			keys, keys2 := benchKeyNames(1000), benchKeyNames(1000)
			for i := range keys2 {
				keys2[i] = append(keys2[i], ":2"...)
			}
			for _, fill := range strings.Split(tc.fill, "\n") {
				if fill == "" {
					continue
				}
				req := fields(fill)
				for i := range keys {
					benchDo(b, s, c, withKeys(req, fields(fill), keys[i], keys2[i]))
				}
			}
			call := fields(tc.call)
			b.ResetTimer()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				nc, peer := net.Pipe()
				defer peer.Close()
				c := s.newClient(nc)
				req := make([][]byte, len(call))
				for i := 0; pb.Next(); i++ {
					withKeys(req, call, keys[i%len(keys)], keys2[i%len(keys)])
					s.run(c, req)
					if c.W.B[0] == '-' {
						b.Fatalf("%q: %s", req, c.W.B)
					}
					c.W.B = c.W.B[:0]
				}
			})
		})
	}
}

// fields splits a command line at spaces into its arguments.
func fields(line string) [][]byte { return bytes.Fields([]byte(line)) }

// withKeys copies call into req with each argument "k" replaced by key and "k2" by key2,
// and returns req.
func withKeys(req, call [][]byte, key, key2 []byte) [][]byte {
	for i, a := range call {
		switch string(a) {
		case "k":
			req[i] = key
		case "k2":
			req[i] = key2
		default:
			req[i] = a
		}
	}
	return req
}

// benchDo runs one request on s for c and fails on an error reply.
func benchDo(b *testing.B, s *Server, c *client, req [][]byte) {
	s.run(c, req)
	if len(c.W.B) == 0 || c.W.B[0] == '-' {
		b.Fatalf("%q: %s", req, c.W.B)
	}
	c.W.B = c.W.B[:0]
}
