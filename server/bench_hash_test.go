package server

import "testing"

// The hot hash commands of a token bucket kept in a hash, as the classic Lua limiters keep
// it: HSET of its two fields and HMGET of them, over 100,000 keys drawn at random.

func BenchmarkHSet(b *testing.B) {
	benchHash(b, true, "HSET", "k", "tokens", "9", "last_refill", "1732512345123")
}

func BenchmarkHMGet(b *testing.B) {
	benchHash(b, true, "HMGET", "k", "tokens", "last_refill")
}

func BenchmarkHIncrBy(b *testing.B) {
	benchHash(b, true, "HINCRBY", "k", "tokens", "1")
}

// benchHash runs args, its "k" a random one of 100,000 keys, which hold the two-field hash
// first when filled.
func benchHash(b *testing.B, filled bool, args ...string) {
	var fill []string
	if filled {
		fill = []string{"HSET", "k", "tokens", "10", "last_refill", "1732512345000"}
	}
	benchFilled(b, 100_000, true, fill, args...)
}
