package collection

import (
	"crypto/md5"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hincrbyfloat is HINCRBYFLOAT's arithmetic on a stored value cur, with its error texts.
func hincrbyfloat(cur, incr string) string {
	by, ok := ParseLongDouble([]byte(incr))
	if !ok {
		return "ERR value is not a valid float"
	}
	if by.IsInf() {
		return "ERR value is NaN or Infinity"
	}
	x, ok := ParseLongDouble([]byte(cur))
	if !ok {
		return "ERR hash value is not a float"
	}
	sum, ok := AddLongDouble(x, by)
	if !ok {
		return "ERR increment would produce NaN or Infinity"
	}
	return string(AppendLongDouble(nil, sum))
}

// TestLongDouble: each want is what redis-server 7.0.15 on x86-64 replied to HSET h f cur,
// HINCRBYFLOAT h f incr.
func TestLongDouble(t *testing.T) {
	for _, tc := range []struct{ cur, incr, want string }{
		{"0.1", "0.2", "0.3"},
		{"10.5", "0.1", "10.6"},
		{"1e17", "1", "100000000000000001"},
		{"3.0e3", "0", "3000"},
		{"5.0e3", "0", "5000"},
		{"0", "0.000003814697265625", "0.00000381469726562"}, // a tie at the 18th decimal: to even
		{"0", "0.000011444091796875", "0.00001144409179688"},
		{"0", "-1e-30", "0"},
		{"0", "-0", "0"},
		{"0", "1e4933", "ERR value is not a valid float"},
		{"0", "1e-4940", "0"},
		{"0", "1e-5000", "ERR value is not a valid float"},
		{"0", "0e-5000", "0"},
		{"0", "inf", "ERR value is NaN or Infinity"},
		{"0", "-inf", "ERR value is NaN or Infinity"},
		{"0", "nan", "ERR value is not a valid float"},
		{"0", "INFINITY", "ERR value is NaN or Infinity"},
		{"0", "0x1p3", "8"},
		{"0", " 1", "ERR value is not a valid float"},
		{"0", "1 ", "ERR value is not a valid float"},
		{"0", "+1", "1"},
		{"0", ".5", "0.5"},
		{"0", "5.", "5"},
		{"0", ".", "ERR value is not a valid float"},
		{"0", "1e", "ERR value is not a valid float"},
		{"0", "0x", "ERR value is not a valid float"},
		{"1.5", "1e100", "9999999999999999999669353532207342619498699019828496079271391541752018669482644324418977840117055488"},
		{"0", "1e18", "1000000000000000000"},
		{"0", "123456789012345678", "123456789012345678"},
		{"0", "-1.5", "-1.5"},
		{"1", "-1", "0"},
		{"-1", "0.5", "-0.5"},
		{"0.1", "0.1", "0.2"},
		{"1.1", "2.2", "3.3"},
		{"3", "-3.00000000000000000001", "0"},
		{"9223372036854775807", "1", "9223372036854775808"},
		{"-9223372036854775808", "-1", "-9223372036854775809"},
		{"1e308", "1e308", "md5 e9ed3f846762c2151cb635319b3c4c02"}, // 309 digits
		{"0", "0x1p-16446", "ERR value is not a valid float"},
		{"0", "0x1.0000001p-16446", "0"},
		{"0", "0x1.ffffffffffffffffp16383", "ERR value is not a valid float"},
		{"0", "1.18973149535723176502e4932", "md5 73292351932e29d51a41596e26f4f1d1"}, // the largest long double: 4933 digits
		{"0", "1.18973149535723176509e4932", "ERR value is not a valid float"},
		{"0", "0X.8P1", "1"},
		{"0", "0x.p1", "ERR value is not a valid float"},
		{"0", "1e+3", "1000"},
		{"0", "1E-1", "0.1"},
		{"0", "00012", "12"},
		{"0", "1e-", "ERR value is not a valid float"},
		{"0", "1e+", "ERR value is not a valid float"},
		{"0", "e5", "ERR value is not a valid float"},
		{"0", "-", "ERR value is not a valid float"},
		{"0", "+", "ERR value is not a valid float"},
		{"0", "0x1p", "ERR value is not a valid float"},
		{"0", "1.5.5", "ERR value is not a valid float"},
		{"0", "--1", "ERR value is not a valid float"},
		{"0", "infinit", "ERR value is not a valid float"},
		{"0", "nan(123)", "ERR value is not a valid float"},
		{"0", "3\x00abc", "ERR value is not a valid float"},
		{"0", "1e999999999999999999999", "ERR value is not a valid float"},
		{"0", "0e999999999999999999999", "0"},
		{"0", "1e-999999999999999999999", "ERR value is not a valid float"},
		{"abc", "1", "ERR hash value is not a float"},
		{" 1", "1", "ERR hash value is not a float"},
		{"", "1", "ERR hash value is not a float"},
		{"1.5", "abc", "ERR value is not a valid float"},
		{"inf", "1", "ERR increment would produce NaN or Infinity"},
		{"-inf", "-1", "ERR increment would produce NaN or Infinity"},
		{"1e4932", "1e4932", "ERR increment would produce NaN or Infinity"},
		{"1e4932", "-1e4932", "0"},
		{"0.30000000000000004", "0", "0.30000000000000004"},
		{"2.5", "0.00000000000000001", "2.50000000000000001"},
		{"2.5", "0.000000000000000005", "2.5"},
		{"1", "1e-18", "1"},
		{"-1e-18", "0", "0"},
		{"7", "0.1e1", "8"},
		{"1e-17", "0", "0.00000000000000001"},
	} {
		t.Run(tc.cur+"+"+tc.incr, func(t *testing.T) {
			got := hincrbyfloat(tc.cur, tc.incr)
			if strings.HasPrefix(tc.want, "md5 ") { // a long reply: the md5 of its line, as md5sum printed it
				got = fmt.Sprintf("md5 %x", md5.Sum([]byte(got+"\n")))
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestLongDoubleLength: Redis takes a number of up to 5119 bytes.
func TestLongDoubleLength(t *testing.T) {
	long := func(zeros int) string {
		s := "1"
		for range zeros {
			s += "0"
		}
		return s + "e-" + strconv.Itoa(zeros)
	}
	require.Len(t, long(5112), 5119)
	require.Equal(t, "1", hincrbyfloat("0", long(5112)))
	require.Equal(t, "ERR value is not a valid float", hincrbyfloat("0", long(5113)))
}

func TestLongDoubleFromInt(t *testing.T) {
	require.Equal(t, "-9223372036854775808", string(AppendLongDouble(nil, LongDoubleFromInt(-1<<63))))
}
