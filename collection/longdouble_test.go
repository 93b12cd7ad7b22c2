package collection

import (
	"bufio"
	"encoding/json"
	"math/big"
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
	n := 0
	for sc.Scan() {
		var c [3]*string
		require.NoError(t, json.Unmarshal(sc.Bytes(), &c))
		cur := "0"
		if c[0] != nil {
			cur = *c[0]
		}
		got, err := AddLongDouble(nil, []byte(cur), []byte(*c[1]))
		if err != nil {
			require.Equal(t, *c[2], "ERR "+err.Error(), "%q + %q", cur, *c[1])
		} else {
			require.Equal(t, *c[2], string(got), "%q + %q", cur, *c[1])
		}
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 3000)
}

// FuzzAddLongDouble: no input panics; a sum parses back as the same long double, and adding
// 0 to it writes it again the same (a stored result reads back).
func FuzzAddLongDouble(f *testing.F) {
	for _, s := range [][2]string{{"10.5", "0.1"}, {"0x1p-16445", "-0"}, {"1e4932", "1e4931"}, {"-5e-18", "1e-17"}, {"inf", "1"}, {"0x.8p1", "1."}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cur, incr string) {
		got, err := AddLongDouble(nil, []byte(cur), []byte(incr))
		if err != nil {
			return
		}
		require.True(t, IsLongDouble(got), "%q + %q = %q", cur, incr, got)
		again, err := AddLongDouble(nil, got, []byte("0"))
		require.NoError(t, err)
		require.Equal(t, string(got), string(again))
		// Near the value float64 would compute, when that is a plain number: the sum is
		// right to a few ulps of it or 1e-17.
		a, errA := strconv.ParseFloat(cur, 64)
		b, errB := strconv.ParseFloat(incr, 64)
		g, errG := strconv.ParseFloat(string(got), 64)
		if errA == nil && errB == nil && errG == nil && !strings.ContainsAny(cur+incr, "xX") {
			want := new(big.Float).Add(big.NewFloat(a), big.NewFloat(b))
			diff := new(big.Float).Sub(want, big.NewFloat(g))
			tol := new(big.Float).Mul(new(big.Float).Abs(want), big.NewFloat(1e-15))
			if tol.Cmp(big.NewFloat(1e-16)) < 0 {
				tol = big.NewFloat(1e-16)
			}
			require.True(t, diff.Abs(diff).Cmp(tol) <= 0, "%q + %q = %q", cur, incr, got)
		}
	})
}
