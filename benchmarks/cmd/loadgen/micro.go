package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// microRow is one Go benchmark of a verb's whole path in the server: parsing, dispatch,
// the keyspace and the reply.
type microRow struct {
	name          string
	nsPerOp       string
	bytesPerOp    string
	allocsPerOp   string
	allocsNonZero bool
}

// micro runs the server package's Go benchmarks and returns their figures.
func micro() ([]microRow, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", ".", "-benchmem", "./server")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go test -bench ./server: %w", err)
	}
	var rows []microRow
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// BenchmarkCellThrottle-2   3692480   323.1 ns/op   0 B/op   0 allocs/op
		f := strings.Fields(sc.Text())
		if len(f) != 8 || !strings.HasPrefix(f[0], "Benchmark") || f[3] != "ns/op" || f[7] != "allocs/op" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(f[0], "Benchmark"), "-")
		rows = append(rows, microRow{name: name, nsPerOp: f[2], bytesPerOp: f[4], allocsPerOp: f[6], allocsNonZero: f[6] != "0"})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("go test -bench ./server printed no benchmark")
	}
	return rows, nil
}
