package latency

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/resp"
)

// run calls the subcommand named sub of Commands(cfg) with args after "LATENCY sub",
// replying in RESP3; it returns the reply and the error.
func run(t *testing.T, cfg Config, sub string, args ...string) (string, error) {
	t.Helper()
	var spec *command.Spec
	for _, sp := range Commands(cfg)[0].Subcommands {
		if sp.Name == sub {
			spec = sp
		}
	}
	require.NotNil(t, spec, sub)
	all := [][]byte{[]byte("LATENCY"), []byte(sub)}
	for _, a := range args {
		all = append(all, []byte(a))
	}
	c := &command.Ctx{W: resp.Writer{Proto: 3}}
	err := spec.Handler(c, all)
	return string(c.W.B), err
}

// TestHistogram: every command called when none is named; a container named stands for
// itself and its subcommands, each once; commands never called are left out.
func TestHistogram(t *testing.T) {
	get, cfgGet, cfgSet := Command{"get", 0}, Command{"config|get", 1}, Command{"config|set", 2}
	snap := func(ns ...int64) *Snapshot {
		var s Snapshot
		for _, n := range ns {
			s.Counts[index(n)]++
			s.Total++
		}
		return &s
	}
	snaps := []*Snapshot{snap(500, 3000), nil, snap(100_000)}
	cfg := Config{
		Commands: func() []Command { return []Command{get, cfgGet, cfgSet} },
		Named: func(name string) []Command {
			switch strings.ToLower(name) {
			case "get":
				return []Command{get}
			case "config":
				return []Command{{"config", 3}, cfgGet, cfgSet}
			case "config|set":
				return []Command{cfgSet}
			}
			return nil
		},
		Snapshots: func(*command.Ctx) []*Snapshot { return append(snaps, nil) },
	}
	getReply := "$3\r\nget\r\n%2\r\n$5\r\ncalls\r\n:2\r\n$14\r\nhistogram_usec\r\n%2\r\n:1\r\n:1\r\n:4\r\n:2\r\n"
	setReply := "$10\r\nconfig|set\r\n%2\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n%1\r\n:132\r\n:1\r\n"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"all", nil, "%2\r\n" + getReply + setReply},
		{"one", []string{"GET"}, "%1\r\n" + getReply},
		{"container", []string{"config", "nosuch", "config|set", "get"}, "%2\r\n" + setReply + getReply},
		{"none called", []string{"nosuch"}, "%0\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := run(t, cfg, "histogram", tc.args...)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestMonitorCommands: LATEST, HISTORY, GRAPH and RESET reply the monitor's events.
func TestMonitorCommands(t *testing.T) {
	var m Monitor
	cfg := Config{Monitor: &m}
	got, err := run(t, cfg, "latest")
	require.NoError(t, err)
	require.Equal(t, "*0\r\n", got)
	_, err = run(t, cfg, "graph", "command")
	require.EqualError(t, err, "No samples available for event 'command'")

	m.Add(EventCommand, 50, 1000)
	got, err = run(t, cfg, "latest")
	require.NoError(t, err)
	require.Equal(t, "*1\r\n*4\r\n$7\r\ncommand\r\n:1000\r\n:50\r\n:50\r\n", got)
	got, err = run(t, cfg, "history", "command")
	require.NoError(t, err)
	require.Equal(t, "*1\r\n*2\r\n:1000\r\n:50\r\n", got)
	got, err = run(t, cfg, "graph", "command")
	require.NoError(t, err)
	require.Contains(t, got, "command - high 50 ms, low 50 ms")

	got, err = run(t, cfg, "reset", "command", "nosuch")
	require.NoError(t, err)
	require.Equal(t, ":1\r\n", got)
	require.Empty(t, m.Latest())
}

// TestDoctorDisabled: with the monitor off and no events, DOCTOR says how to turn it on.
func TestDoctorDisabled(t *testing.T) {
	cfg := Config{Monitor: &Monitor{}, Advice: func() Advice { return Advice{SlowlogSlowerThan: 10000, Hz: 10} }}
	got, err := run(t, cfg, "doctor")
	require.NoError(t, err)
	require.Contains(t, got, "Latency monitoring is disabled in this Redis instance.")
}

// TestParseThreshold: latency-monitor-threshold's values and errors, as Redis's.
func TestParseThreshold(t *testing.T) {
	n, err := ParseThreshold("100")
	require.NoError(t, err)
	require.Equal(t, int64(100), n)
	_, err = ParseThreshold("abc")
	require.EqualError(t, err, "argument couldn't be parsed into an integer")
	_, err = ParseThreshold("-1")
	require.EqualError(t, err, "argument must be between 0 and 9223372036854775807 inclusive")
}

// TestParseAnonHugePages: the AnonHugePages line of smaps_rollup, in bytes.
func TestParseAnonHugePages(t *testing.T) {
	smaps := []byte("Rss:                1234 kB\nAnonHugePages:      2048 kB\nShared_Hugetlb:        0 kB\n")
	require.Equal(t, int64(2048<<10), parseAnonHugePages(smaps))
	require.Equal(t, int64(0), parseAnonHugePages([]byte("Rss: 1 kB\n")))
}
