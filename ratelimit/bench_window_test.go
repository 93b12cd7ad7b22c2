package ratelimit

import (
	"testing"

	"github.com/throttledhq/throttled/keyspace"
)

// BenchmarkWindowCall is WINDOW's own work, without the server around it: parsing a call
// and evaluating it on a key's state, for a fixed window and for calendar ones, so that a
// call without TZ can be compared with the same call before calendar windows existed (the
// parse and take of WINDOW k 100 1m did not change signature) on a machine too busy for
// BenchmarkOptions' ns/op to tell a few ns apart.
func BenchmarkWindowCall(b *testing.B) {
	for _, tc := range []struct{ name, window, tz string }{
		{"1m", "1m", ""}, {"1mo", "1mo", ""}, {"1mo_TZ", "1mo", "Europe/Berlin"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			args := [][]byte{[]byte("k"), []byte("1000000000"), []byte(tc.window)}
			if tc.tz != "" {
				args = append(args, []byte("TZ"), []byte(tc.tz))
			}
			now := int64(1_764_234_030_123_456_789)
			var v keyspace.Value
			exists := false
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				var l limit
				if _, err := l.parse("window", 2, args, false); err != nil {
					b.Fatal(err)
				}
				var d decision
				var next keyspace.Value
				store, err := l.take(now+int64(i), &v, exists, nil, &d, &next)
				if err != nil || d.limited {
					b.Fatal(err, d)
				}
				if store {
					v, exists = next, true
				}
			}
		})
	}
}
