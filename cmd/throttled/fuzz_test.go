package main

import (
	"os"
	"strings"
	"testing"
)

// FuzzConfigFile: no config file, however malformed, panics the reader; it loads or it fails
// with an error.
func FuzzConfigFile(f *testing.F) {
	if stock, err := os.ReadFile("/etc/redis/redis.conf"); err == nil {
		f.Add(string(stock))
	}
	sample, err := os.ReadFile(sampleConfigPath)
	if err == nil {
		f.Add(string(sample))
	}
	for _, seed := range []string{
		"port 7000\nbind 127.0.0.1 -::1\n",
		"replicaof \"10.0.0.1 6380\"\nunixsocketperm 0777\n",
		"user alice on >pw ~* +@all\nclient-output-buffer-limit pubsub 32mb 8mb 60\n",
		"requirepass \"a\\x41\\n\"\nsave 900 1\ninclude /nonexistent\n",
		"maxmemory 1gb\nupstream-timeout 50ms\nupstream-fallback-share 0.5\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, conf string) {
		if strings.Contains(conf, "include") {
			return // reads other files: not this test's business
		}
		loadOptionsFrom([]string{"-"}, noEnv, strings.NewReader(conf))
	})
}
