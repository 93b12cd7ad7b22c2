package collection

import (
	"bufio"
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAddLongDouble(t *testing.T) {
	for _, tc := range []struct {
		name, cur, incr, want string
		err                   error
	}{
		{"the float64 trap", "10.5", "0.1", "10.6", nil},
		{"integers", "5", "-7", "-2", nil},
		{"a missing key is 0", "0", "3.0e3", "3000", nil},
		{"zero written plainly", "-0", "-0", "0", nil},
		{"a negative rounding to zero", "0", "-1e-18", "0", nil},
		{"half to even down", "0", "0.000003814697265625", "0.00000381469726562", nil},
		{"half to even up", "0", "0.000011444091796875", "0.00001144409179688", nil},
		{"64 bits of mantissa", "18446744073709551615", "0", "18446744073709551615", nil},
		{"65 bits round", "36893488147419103231", "0", "36893488147419103232", nil},
		{"hexadecimal", "0x10", "0X1P-3", "16.125", nil},
		{"the smallest subnormal", "0x1p-16445", "0", "0", nil},
		{"infinity parses", "inf", "1", "", ErrNaNOrInf},
		{"infinity minus infinity", "Infinity", "-inf", "", ErrNaNOrInf},
		{"overflow of the sum", "0xffffffffffffffffp16320", "0xffffffffffffffffp16320", "", ErrNaNOrInf},
		{"nan", "0", "nan", "", ErrNotFloat},
		{"a blank first", "0", " 1", "", ErrNotFloat},
		{"a blank after", "0", "1 ", "", ErrNotFloat},
		{"a nul inside", "0", "1\x00", "", ErrNotFloat},
		{"empty", "", "1", "", ErrNotFloat},
		{"an exponent without digits", "0", "1e", "", ErrNotFloat},
		{"0x alone", "0", "0x", "", ErrNotFloat},
		{"overflow of an operand", "0", "1.2e4932", "", ErrNotFloat},
		{"underflow to zero", "0", "1e-4951", "", ErrNotFloat},
		{"half the smallest subnormal", "0", "0x1p-16446", "", ErrNotFloat},
		{"zero with a huge exponent", "0e99999999999999999999", "1", "1", nil},
		{"too long", strings.Repeat("1", ldMaxChars), "1", "", ErrNotFloat},
		{"the current value is read first", "x", "inf", "", ErrNotFloat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AddLongDouble([]byte("prefix:"), []byte(tc.cur), []byte(tc.incr))
			require.Equal(t, tc.err, err)
			if err == nil {
				require.Equal(t, "prefix:"+tc.want, string(got))
			}
		})
	}
}

// TestAddLongDoubleAsRedis replays INCRBYFLOAT cases answered by a real redis-server 7.0.15
// (testdata/incrbyfloat.jsonl: the value at the key, null when missing, the increment, and
// the reply: the new value or the error's text): random decimals and hexadecimal floats
// of every length and exponent, operands near the ends of the format, ties at the 17th
// decimal, bad forms.
func TestAddLongDoubleAsRedis(t *testing.T) {
	f, err := os.Open("testdata/incrbyfloat.jsonl")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n, fast := 0, 0
	for sc.Scan() {
		var c [3]*string
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c))
		cur := "0"
		if c[0] != nil {
			cur = *c[0]
		}
		for _, add := range []func(dst, cur, incr []byte) ([]byte, error){AddLongDouble, addExact} {
			got, err := add(nil, []byte(cur), []byte(*c[1]))
			if err != nil {
				require.Equal(t, *c[2], "ERR "+err.Error(), "%q + %q", cur, *c[1])
			} else {
				require.Equal(t, *c[2], string(got), "%q + %q", cur, *c[1])
			}
		}
		if _, ok := addFast(nil, []byte(cur), []byte(*c[1])); ok {
			fast++
		}
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 3000)
	require.Greater(t, fast, 500, "cases the fast path took")
}

// FuzzAddLongDouble: no input panics; the fast path, when it takes an input, writes what
// the exact one does; a sum parses back, and adding 0 to it writes it again the same (a
// stored result reads back).
func FuzzAddLongDouble(f *testing.F) {
	for _, s := range [][2]string{{"10.5", "0.1"}, {"0x1p-16445", "-0"}, {"1e4932", "1e4931"}, {"-5e-18", "1e-17"}, {"inf", "1"}, {"0x.8p1", "1."},
		{"9223372036854775807", "9223372036854775807"}, {"0.1", "-0.1"}, {"1e-19", "1e19"}, {"-1.5", "0.75"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cur, incr string) {
		got, err := addExact(nil, []byte(cur), []byte(incr))
		if fast, ok := addFast(nil, []byte(cur), []byte(incr)); ok {
			require.NoError(t, err, "%q + %q: the fast path found a sum", cur, incr)
			require.Equal(t, string(got), string(fast), "%q + %q: the fast path", cur, incr)
		}
		if err != nil {
			return
		}
		require.True(t, IsLongDouble(got), "%q + %q = %q", cur, incr, got)
		again, err := AddLongDouble(nil, got, []byte("0"))
		require.NoError(t, err)
		require.Equal(t, string(got), string(again))
		// Near the value float64 would compute, when that is a plain number.
		a, errA := strconv.ParseFloat(cur, 64)
		b, errB := strconv.ParseFloat(incr, 64)
		g, errG := strconv.ParseFloat(string(got), 64)
		if errA == nil && errB == nil && errG == nil && !strings.ContainsAny(cur+incr, "xX") {
			want := new(big.Float).Add(big.NewFloat(a), big.NewFloat(b))
			diff := new(big.Float).Sub(want, big.NewFloat(g))
			// float64 holds each operand to a relative 1.1e-16, the 17 places write to 5e-18.
			tol := big.NewFloat((math.Abs(a) + math.Abs(b) + math.Abs(g)) * 1e-15)
			tol.Add(tol, big.NewFloat(1e-16))
			require.True(t, diff.Abs(diff).Cmp(tol) <= 0, "%q + %q = %q", cur, incr, got)
		}
	})
}

// TestFastPathAsExact draws plain decimals of up to 19 digits with every exponent the
// fast path takes, near integers, near ties and cancelling, and requires the bytes of the
// exact path.
func TestFastPathAsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	num := func() string {
		digits := make([]byte, 1+r.IntN(19))
		for i := range digits {
			digits[i] = byte('0' + r.IntN(10))
		}
		s := string(digits)
		if p := r.IntN(len(s) + 1); p < len(s) && r.IntN(2) == 0 {
			s = s[:p] + "." + s[p:]
		}
		if r.IntN(3) == 0 {
			s += "e" + strconv.Itoa(r.IntN(41)-20)
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		return s
	}
	fast := 0
	for i := 0; i < 200000; i++ {
		a, b := num(), num()
		if i%4 == 0 {
			b = "-" + strings.TrimPrefix(a, "-") // cancels, or doubles
		}
		want, err := addExact(nil, []byte(a), []byte(b))
		got, ok := addFast(nil, []byte(a), []byte(b))
		if !ok {
			continue
		}
		fast++
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%q + %q", a, b)
	}
	require.Greater(t, fast, 100000)
}
