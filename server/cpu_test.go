package server

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInfoCPU: INFO cpu has Redis's six fields, in seconds with six decimals, in the default
// INFO as in Redis's; and MSETNX and GETSET answer as Redis (the differential test compares
// them to the byte).
func TestInfoCPU(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	info := do(t, rdb, "INFO", "cpu").(string)
	for _, f := range []string{"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children",
		"used_cpu_sys_main_thread", "used_cpu_user_main_thread"} {
		require.Regexp(t, regexp.MustCompile(`(?m)^`+f+`:\d+\.\d{6}\r$`), info)
	}
	require.Contains(t, do(t, rdb, "INFO").(string), "# CPU\r\n")

	require.Equal(t, int64(1), do(t, rdb, "MSETNX", "a", "1", "b", "2"))
	require.Equal(t, int64(0), do(t, rdb, "MSETNX", "c", "3", "a", "x"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "c"), "none set when one exists")
	do(t, rdb, "SET", "e", "old", "EX", "100")
	require.Equal(t, "old", do(t, rdb, "GETSET", "e", "new"))
	require.Equal(t, int64(-1), do(t, rdb, "TTL", "e"), "GETSET drops the expiry, as SET")
}
