package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/server"
)

// loadOptions builds the server's configuration from a redis.conf-style
// file (when the first argument does not start with --) and then
// --option value pairs, which override the file, as redis-server does.
func loadOptions(args []string) (server.Config, error) {
	cfg := server.DefaultConfig()
	if len(args) > 0 && !strings.HasPrefix(args[0], "--") {
		path, err := filepath.Abs(args[0])
		if err != nil {
			return cfg, fmt.Errorf("config file: %w", err)
		}
		if err := loadFile(&cfg, path); err != nil {
			return cfg, err
		}
		cfg.ConfigFile = path // CONFIG REWRITE writes here, whatever the directory later
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
		words, err := server.SplitConfigLine(line)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if policy.Directive(strings.ToLower(words[0])) {
			continue // the server reads these, and reads them again on SIGHUP
		}
		if err := setOption(cfg, words[0], words[1:]); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
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
		n, err := server.ParseSize(v)
		if err != nil || n != int64(int(n)) {
			return fmt.Errorf("%s: %q is not a number", name, v)
		}
		*dst = int(n)
		return nil
	}
	yes := func() (bool, error) {
		v, err := one()
		if err != nil {
			return false, err
		}
		switch strings.ToLower(v) {
		case "yes":
			return true, nil
		case "no":
			return false, nil
		}
		return false, fmt.Errorf("%s: %q is not yes or no", name, v)
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
		on, err := yes()
		cfg.AppendOnly = on
		return err
	case "appendfsync":
		return str(&cfg.AppendFsync)
	case "requirepass":
		return str(&cfg.RequirePass)
	case "aclfile":
		return str(&cfg.ACLFile)
	case "user":
		if len(values) == 0 {
			return fmt.Errorf("user: takes a name and rules")
		}
		cfg.Users = append(cfg.Users, values)
		return nil
	case "loglevel":
		return str(&cfg.LogLevel)
	case "maxmemory":
		v, err := one()
		if err != nil {
			return err
		}
		n, err := server.ParseSize(v)
		if err != nil {
			return fmt.Errorf("maxmemory: %q is not a size (64mb, 1gb)", v)
		}
		cfg.MaxMemory = n
		return nil
	case "maxmemory-policy":
		return str(&cfg.MaxMemoryPolicy)
	case "maxmemory-samples":
		return number(&cfg.MaxMemorySamples)
	case "prefetch-batch-max-size":
		return number(&cfg.PrefetchBatch)
	case "tls-port":
		return number(&cfg.TLSPort)
	case "tls-cert-file":
		return str(&cfg.TLSCertFile)
	case "tls-key-file":
		return str(&cfg.TLSKeyFile)
	case "tls-ca-cert-file":
		return str(&cfg.TLSCACertFile)
	case "tls-auth-clients":
		return str(&cfg.TLSAuthClients)
	case "tls-replication":
		on, err := yes()
		cfg.TLSReplication = on
		return err
	case "timeout":
		return number(&cfg.Timeout)
	case "tcp-keepalive":
		return number(&cfg.TCPKeepAlive)
	case "protected-mode":
		on, err := yes()
		cfg.ProtectedMode = on
		return err
	case "client-output-buffer-limit":
		// One class per line in redis.conf; the classes accumulate.
		if cfg.ClientOutputBufferLimit != "" {
			cfg.ClientOutputBufferLimit += " "
		}
		cfg.ClientOutputBufferLimit += strings.Join(values, " ")
		return nil
	case "maxclients":
		return number(&cfg.MaxClients)
	case "proto-max-bulk-len":
		return number(&cfg.ProtoMaxBulkLen)
	case "shards":
		return number(&cfg.Shards)
	case "io-threads":
		return number(&cfg.IOThreads)

	// Observability.
	case "slowlog-log-slower-than":
		v, err := one()
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("slowlog-log-slower-than: %q is not an integer", v)
		}
		cfg.SlowlogLogSlowerThan = n
		return nil
	case "slowlog-max-len":
		return number(&cfg.SlowlogMaxLen)
	case "denied-events-per-second":
		return number(&cfg.DeniedEventsPerSecond)
	case "metrics-port":
		return number(&cfg.MetricsPort)
	case "http-port":
		return number(&cfg.HTTPPort)
	case "http-tls":
		on, err := yes()
		cfg.HTTPTLS = on
		return err
	case "http-legacy-headers":
		on, err := yes()
		cfg.HTTPLegacyHeaders = on
		return err
	case "latency-tracking":
		on, err := yes()
		cfg.LatencyTracking = on
		return err
	case "latency-tracking-info-percentiles": // quoted as one value, or as several
		cfg.LatencyTrackingInfoPercentiles = strings.Join(values, " ")
		return nil
	case "busy-reply-threshold", "lua-time-limit":
		return number(&cfg.BusyReplyThreshold)
	case "grpc-port":
		return number(&cfg.GRPCPort)
	case "grpc-tls":
		on, err := yes()
		cfg.GRPCTLS = on
		return err
	case "ratelimit-config":
		if err := str(&cfg.RateLimitConfig); err != nil {
			return err
		}
		if cfg.RateLimitConfig != "" {
			abs, err := filepath.Abs(cfg.RateLimitConfig)
			if err != nil {
				return fmt.Errorf("ratelimit-config: %w", err)
			}
			cfg.RateLimitConfig = abs // read again on SIGHUP, whatever the directory then
		}
		return nil

	// The data types' thresholds, with Redis's names and their older ziplist aliases.
	case "hash-max-listpack-entries", "hash-max-ziplist-entries":
		return number(&cfg.HashMaxListpackEntries)
	case "hash-max-listpack-value", "hash-max-ziplist-value":
		return number(&cfg.HashMaxListpackValue)
	case "zset-max-listpack-entries", "zset-max-ziplist-entries":
		return number(&cfg.ZsetMaxListpackEntries)
	case "zset-max-listpack-value", "zset-max-ziplist-value":
		return number(&cfg.ZsetMaxListpackValue)
	case "set-max-intset-entries":
		return number(&cfg.SetMaxIntsetEntries)
	case "set-max-listpack-entries":
		return number(&cfg.SetMaxListpackEntries)
	case "set-max-listpack-value":
		return number(&cfg.SetMaxListpackValue)
	case "list-max-listpack-size", "list-max-ziplist-size":
		return number(&cfg.ListMaxListpackSize)

	// Replication, with Redis's names and their older aliases. Redis's tuning options of its
	// own replication (repl-diskless-sync, repl-timeout, ...) are refused as unknown: neither
	// Sentinel nor throttled's replication needs them, and accepting them would pretend.
	case "replicaof", "slaveof":
		if len(values) == 1 { // --replicaof "host port"
			values = strings.Fields(values[0])
		}
		switch {
		case len(values) != 2:
			return fmt.Errorf("%s: takes a host and a port, got %d values", name, len(values))
		case strings.EqualFold(values[0], "no") && strings.EqualFold(values[1], "one"):
			cfg.ReplicaOf = ""
		default:
			cfg.ReplicaOf = values[0] + " " + values[1]
		}
		return nil
	case "masterauth":
		return str(&cfg.MasterAuth)
	case "masteruser":
		return str(&cfg.MasterUser)
	case "repl-backlog-size":
		return number(&cfg.ReplBacklogSize)
	case "replica-priority", "slave-priority":
		return number(&cfg.ReplicaPriority)
	case "replica-announce-ip", "slave-announce-ip":
		return str(&cfg.ReplicaAnnounceIP)
	case "replica-announce-port", "slave-announce-port":
		return number(&cfg.ReplicaAnnouncePort)
	case "min-replicas-to-write", "min-slaves-to-write":
		return number(&cfg.MinReplicasToWrite)
	case "min-replicas-max-lag", "min-slaves-max-lag":
		return number(&cfg.MinReplicasMaxLag)
	case "replica-read-only", "slave-read-only":
		if on, err := yes(); err != nil || !on {
			return fmt.Errorf("%s: throttled replicas are always read-only: only yes is accepted", name)
		}
		return nil
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
