package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParse reads ns/op and cpu-ns/op by name and -cpu from go test's lines.
func TestParse(t *testing.T) {
	out := []byte("goos: linux\n" +
		"BenchmarkGet             \t 1000\t 200.5 ns/op\t 210.0 cpu-ns/op\t 0 B/op\t 0 allocs/op\n" +
		"BenchmarkGet-2           \t 1000\t 101.0 ns/op\t 215.0 cpu-ns/op\t 0 B/op\t 0 allocs/op\n" +
		"BenchmarkEvalshaRedisRate-2 \t 10\t 900 ns/op\t 14 B/op\t 0 allocs/op\n" +
		"PASS\n")
	ns, cpu := parse(out)
	require.Equal(t, []float64{200.5}, ns["Get"][1])
	require.Equal(t, []float64{101}, ns["Get"][2])
	require.Equal(t, []float64{215}, cpu["Get"][2])
	require.Equal(t, []float64{900}, ns["EvalshaRedisRate"][2])
	require.Empty(t, cpu["EvalshaRedisRate"])
	require.Equal(t, 1.75, median([]float64{3, 1, 2, 1.5}))
}
