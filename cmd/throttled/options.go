package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"throttled/server"
)

// loadOptions builds the server's configuration from a redis.conf-style
// file (when the first argument does not start with --) and then
// --option value pairs, which override the file, as redis-server does.
func loadOptions(args []string) (server.Config, error) {
	cfg := server.DefaultConfig()
	if len(args) > 0 && !strings.HasPrefix(args[0], "--") {
		if err := loadFile(&cfg, args[0]); err != nil {
			return cfg, err
		}
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok || name == "" {
			return cfg, fmt.Errorf("%q: options look like --port 7000", args[i])
		}
		var values []string
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			values = append(values, args[i+1])
			i++
		}
		if err := setOption(&cfg, name, values); err != nil {
			return cfg, err
		}
	}
	return cfg, cfg.Validate()
}

// loadFile reads "directive value" lines; blank lines and # comments are skipped.
func loadFile(cfg *server.Config, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words, err := splitLine(line)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if err := setOption(cfg, words[0], words[1:]); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// splitLine splits a config line into words; "double" and 'single' quotes group words.
func splitLine(line string) ([]string, error) {
	var words []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if q := line[0]; q == '"' || q == '\'' {
			end := strings.IndexByte(line[1:], q)
			if end < 0 {
				return nil, fmt.Errorf("unbalanced quotes in %q", line)
			}
			words = append(words, line[1:1+end])
			line = line[2+end:]
			continue
		}
		end := strings.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		words = append(words, line[:end])
		line = line[end:]
	}
	return words, nil
}

// setOption applies one option by its Redis name.
func setOption(cfg *server.Config, name string, values []string) error {
	name = strings.ToLower(name)
	one := func() (string, error) {
		if len(values) != 1 {
			return "", fmt.Errorf("%s: takes one value, got %d", name, len(values))
		}
		return values[0], nil
	}
	number := func(dst *int) error {
		v, err := one()
		if err != nil {
			return err
		}
		n, err := parseSize(v)
		if err != nil {
			return fmt.Errorf("%s: %q is not a number", name, v)
		}
		*dst = n
		return nil
	}
	str := func(dst *string) error {
		v, err := one()
		*dst = v
		return err
	}
	switch name {
	case "port":
		return number(&cfg.Port)
	case "bind":
		if len(values) > 1 {
			return fmt.Errorf("bind: one address is supported, got %d", len(values))
		}
		return str(&cfg.Bind)
	case "dir":
		return str(&cfg.Dir)
	case "appendonly":
		v, err := one()
		if err != nil {
			return err
		}
		switch strings.ToLower(v) {
		case "yes":
			cfg.AppendOnly = true
		case "no":
			cfg.AppendOnly = false
		default:
			return fmt.Errorf("appendonly: %q is not yes or no", v)
		}
		return nil
	case "appendfsync":
		return str(&cfg.AppendFsync)
	case "requirepass":
		return str(&cfg.RequirePass)
	case "loglevel":
		return str(&cfg.LogLevel)
	case "maxclients":
		return number(&cfg.MaxClients)
	case "proto-max-bulk-len":
		return number(&cfg.ProtoMaxBulkLen)
	case "shards":
		return number(&cfg.Shards)
	case "io-threads":
		return number(&cfg.IOThreads)
	case "upstream":
		return str(&cfg.Upstream)
	case "upstream-cluster":
		cfg.UpstreamCluster = nil
		for _, v := range values {
			for _, node := range strings.Split(v, ",") {
				if node != "" {
					cfg.UpstreamCluster = append(cfg.UpstreamCluster, node)
				}
			}
		}
		if len(cfg.UpstreamCluster) == 0 {
			return fmt.Errorf("upstream-cluster: takes host:port[,host:port...]")
		}
		return nil
	case "upstream-timeout":
		v, err := one()
		if err != nil {
			return err
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			ms, merr := strconv.Atoi(v)
			if merr != nil {
				return fmt.Errorf("upstream-timeout: %q is not a duration (50ms, 1s) or a number of milliseconds", v)
			}
			d = time.Duration(ms) * time.Millisecond
		}
		cfg.UpstreamTimeout = d
		return nil
	case "upstream-fallback-share":
		v, err := one()
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("upstream-fallback-share: %q is not a number", v)
		}
		cfg.UpstreamFallbackShare = f
		return nil
	}
	return fmt.Errorf("%s: unknown option", name)
}

// parseSize reads a number with an optional Redis memory unit: 1k, 5mb, 2gb.
func parseSize(v string) (int, error) {
	units := []struct {
		suffix string
		mult   int
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}}
	lower := strings.ToLower(v)
	for _, u := range units {
		if n, ok := strings.CutSuffix(lower, u.suffix); ok {
			x, err := strconv.Atoi(n)
			return x * u.mult, err
		}
	}
	return strconv.Atoi(v)
}
