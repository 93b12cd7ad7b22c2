package ratelimit

import (
	"testing"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/global"
)

// BenchmarkGlobalCall is a GLOBAL call's whole path in the family, from the handler's
// arguments to the reply's bytes: parsing, the allowance's lookup and take, the reply. It
// allocates nothing. (No sync loop runs: the allowance is the first one, large enough.)
func BenchmarkGlobalCall(b *testing.B) {
	rl := New(Config{Global: global.New(global.Config{}),
		Decided: func(*command.Ctx, bool) {}, Denied: func(*command.Ctx, []byte, int64, int64, Block) {}})
	args := [][]byte{[]byte("THROTTLE"), []byte("hot"), []byte("999999999999"), []byte("1000000"), []byte("1s"), []byte("GLOBAL")}
	c := &command.Ctx{Env: &command.Env{}}
	b.ReportAllocs()
	for b.Loop() {
		c.W.B = c.W.B[:0]
		if err := rl.cmdLimit(c, args); err != nil {
			b.Fatal(err)
		}
	}
}
