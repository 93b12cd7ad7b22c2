package compat

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
)

// latencyPy reads INFO latencystats and LATENCY HISTOGRAM through redis-py, Debian's
// python3-redis (make deps installs it), and prints the shape of what it parsed: for each
// command, its percentiles' names and whether each is a number; the histogram's commands
// and fields.
const latencyPy = `
import json, sys, redis
r = redis.Redis(port=int(sys.argv[1]))
for _ in range(50):
    r.set("k", "v"); r.get("k")
info = r.info("latencystats")
shape = {k: sorted((p, isinstance(v, float)) for p, v in d.items()) for k, d in info.items()
         if k in ("latency_percentiles_usec_set", "latency_percentiles_usec_get")}
h = r.execute_command("LATENCY", "HISTOGRAM", "set")
print(json.dumps({"info": shape, "histogram": [h[0].decode(), [x.decode() if isinstance(x, bytes) else type(x).__name__ for x in h[1][:3]]]}, sort_keys=True))
`

// TestLatencyStatsRedisPy: redis-py parses throttled's INFO latencystats and LATENCY
// HISTOGRAM into what it makes of redis-server's.
func TestLatencyStatsRedisPy(t *testing.T) {
	rs := redistest.Start(t)
	th := start(t, "--appendonly", "no")
	parse := func(port string) string {
		out, err := exec.Command("/usr/bin/python3", "-c", latencyPy, port).CombinedOutput()
		require.NoError(t, err, "%s", out)
		var v map[string]any
		require.NoError(t, json.Unmarshal(out, &v), "%s", out)
		return string(out)
	}
	want := parse(fmt.Sprint(rs.Port))
	got := parse(fmt.Sprint(th.port))
	require.Contains(t, want, `"latency_percentiles_usec_set": [["p50", true], ["p99", true], ["p99.9", true]]`)
	require.Equal(t, want, got)
}
