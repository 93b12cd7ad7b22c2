package scripting

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// math.random and math.randomseed as Redis has them: Lua 5.1's functions, their errors
// ("bad argument #1 to 'random' (interval is empty)", "wrong number of arguments") and
// their arithmetic in C ints, over Redis's generator instead of libc's rand(): the 48-bit
// linear congruence of drand48 (redisLrand48), so that a script that seeds it draws the
// same numbers as on Redis. Each interpreter has a generator of its own, started where
// Redis's starts; Redis 7 does not reseed it per script either.

// rand48 is drand48's state: x' = a*x + c mod 2^48.
type rand48 uint64

const (
	rand48A    = 0x5DEECE66D
	rand48C    = 0xB
	rand48Init = 0x1234ABCD330E // X2 X1 X0: where drand48 starts unseeded
	rand48Max  = math.MaxInt32  // REDIS_LRAND48_MAX
)

// next is redisLrand48: the next state's top 31 bits.
func (x *rand48) next() int32 {
	*x = (*x*rand48A + rand48C) & (1<<48 - 1)
	return int32(*x >> 17)
}

// seed is redisSrand48: the seed's 32 bits above drand48's fixed low 16.
func (x *rand48) seed(s int32) { *x = rand48(uint32(s))<<16 | 0x330E }

// mathRandom is math.random([m [, n]]).
func (st *state) mathRandom(L *lua.LState) int {
	r := float64(st.rand.next()%rand48Max) / rand48Max
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := int32(checkInt(L, 1))
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := int32(checkInt(L, 1)), int32(checkInt(L, 2))
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l))) // u-l+1 wraps as C's int
	default:
		luaLError(L, "wrong number of arguments")
	}
	return 1
}

// mathRandomSeed is math.randomseed(x).
func (st *state) mathRandomSeed(L *lua.LState) int {
	st.rand.seed(int32(checkInt(L, 1)))
	return 0
}
