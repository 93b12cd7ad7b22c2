package server

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStatusPageChromium renders the status page in headless Chromium (make deps installs
// it): the DOM it builds has the live parts, and it takes a screenshot. With
// THROTTLED_SCREENSHOT=path the screenshot is kept there (the README's docs/status.png).
func TestStatusPageChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	require.NoError(t, err, "chromium is needed: make deps installs it")
	ts := startServer(t, func(c *Config) { c.Now = nil })
	base := serveMetrics(t, ts)
	rdb := ts.client(t, 2)
	get(t, base+"/")            // the rates are from here
	time.Sleep(2 * time.Second) // ... until the page's span of rates has passed
	for i := 0; i < 40; i++ {
		do(t, rdb, "THROTTLE", "user:42", 4, 10, "1m")
		do(t, rdb, "THROTTLE", "ip:203.0.113.7", 2, 10, "1m")
		do(t, rdb, "TOKENBUCKET", "api:search", 30, 10, "1s")
	}
	for i := 0; i < 5; i++ {
		do(t, rdb, "CL.THROTTLE", "user:7", 1, 5, 60)
	}

	dir := t.TempDir()
	chromium := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
			"--no-first-run", "--user-data-dir=" + filepath.Join(dir, "profile")}, args...)
		cmd := exec.CommandContext(ctx, bin, args...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		require.NoError(t, cmd.Run(), errOut.String())
		return out.Bytes()
	}
	shot := os.Getenv("THROTTLED_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(dir, "status.png")
	}
	chromium("--window-size=1000,820", "--screenshot="+shot, base+"/")
	png, err := os.ReadFile(shot)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG")
	require.Greater(t, len(png), 10000, "a page, not a blank")

	dom := string(chromium("--dump-dom", base+"/"))
	for _, want := range []string{"<title>throttled status</title>", "<td>user:42</td>", "<td>ip:203.0.113.7</td>",
		"<td>throttle</td>", "<td>tokenbucket</td>", "Persistence", "Replication", "Upstream", "ready"} {
		require.Contains(t, dom, want)
	}
}
