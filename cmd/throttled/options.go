package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/conffile"
	"github.com/throttledhq/throttled/internal/version"
	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/server"
)

// settings is what the options set: the server's configuration, and what only the command
// decides.
type settings struct {
	server.Config
	// daemonize is redis.conf's daemonize: throttled stays in the foreground, so yes is
	// refused unless a supervisor (supervised systemd) runs it, as Redis ignores it then.
	daemonize bool
}

// option is one configuration option: the config file, the command line (--name) and the
// environment (THROTTLED_NAME) all set it through set, and --help and the sample
// throttled.conf show it from the same entry, so that they cannot drift apart.
type option struct {
	name    string
	aliases []string // older or other names: Redis's slaveof, the ziplist thresholds
	arg     string   // what the value looks like, for --help
	help    string   // one line
	many    bool     // takes several words (bind 127.0.0.1 ::1); others take exactly one
	set     func(s *settings, name string, values []string) error
	get     func(s *settings) string // the value as a config line writes it
	def     string                   // the default shown, where get's depends on the machine
}

// defaultText is the option's default as --help and the sample config show it.
func (o *option) defaultText() string {
	if o.def != "" || o.get == nil {
		return o.def
	}
	s := settings{Config: server.DefaultConfig()}
	return o.get(&s)
}

// ignoredOptions are redis.conf's options that mean nothing to throttled: RDB and AOF files
// (the state is a Pebble log in dir), logical databases (there is one), Redis's own timers,
// memory allocator, lazy freeing, encodings of types throttled has not, and the tuning of
// Redis's replication transfer. A config file may hold them (Debian's stock redis.conf does):
// they are warned about once, by name, and ignored, as KeyDB and Dragonfly do.
var ignoredOptions = []string{
	"acllog-max-len", "activedefrag", "active-defrag-cycle-max", "active-defrag-cycle-min",
	"active-defrag-ignore-bytes", "active-defrag-threshold-lower", "active-defrag-threshold-upper",
	"activerehashing", "always-show-logo", "aof-load-truncated", "aof-rewrite-incremental-fsync",
	"aof-timestamp-enabled", "aof-use-rdb-preamble", "appenddirname", "appendfilename",
	"auto-aof-rewrite-min-size", "auto-aof-rewrite-percentage", "crash-log-enabled",
	"crash-memcheck-enabled", "databases", "dbfilename", "disable-thp", "dynamic-hz",
	"hll-sparse-max-bytes", "hz", "jemalloc-bg-thread",
	"lazyfree-lazy-eviction", "lazyfree-lazy-expire", "lazyfree-lazy-server-del",
	"lazyfree-lazy-user-del", "lazyfree-lazy-user-flush", "lfu-decay-time", "lfu-log-factor",
	"no-appendfsync-on-rewrite", "oom-score-adj",
	"oom-score-adj-values", "proc-title-template", "rdb-del-sync-files", "rdb-key-save-delay",
	"rdb-save-incremental-fsync", "rdbchecksum", "rdbcompression", "repl-diskless-load",
	"repl-diskless-sync", "repl-diskless-sync-delay", "repl-diskless-sync-max-replicas",
	"repl-disable-tcp-nodelay", "repl-ping-replica-period", "repl-timeout", "replica-lazy-flush",
	"replica-serve-stale-data", "save", "set-proc-title", "stop-writes-on-bgsave-error",
	"stream-node-max-bytes", "stream-node-max-entries", "syslog-enabled", "syslog-facility",
	"syslog-ident",
}

// one is the single value of an option that takes one.
func one(name string, values []string) (string, error) {
	if len(values) != 1 {
		return "", fmt.Errorf("%s: takes one value, got %d", name, len(values))
	}
	return values[0], nil
}

// parseYes reads yes or no.
func parseYes(name string, values []string) (bool, error) {
	v, err := one(name, values)
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

// quote writes a string value so that SplitConfigLine reads it back.
func quote(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\"'\\#") || strings.IndexFunc(v, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
		return strconv.Quote(v)
	}
	return v
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func str(name, arg, help string, field func(*server.Config) *string) option {
	return option{name: name, arg: arg, help: help,
		set: func(s *settings, name string, values []string) error {
			v, err := one(name, values)
			*field(&s.Config) = v
			return err
		},
		get: func(s *settings) string { return quote(*field(&s.Config)) },
	}
}

func boolean(name, help string, field func(*server.Config) *bool) option {
	return option{name: name, arg: "yes|no", help: help,
		set: func(s *settings, name string, values []string) error {
			on, err := parseYes(name, values)
			*field(&s.Config) = on
			return err
		},
		get: func(s *settings) string { return yesNo(*field(&s.Config)) },
	}
}

// integer is an option of a whole number; Redis's units (1k, 1kb, 1mb) are read too.
func integer(name, help string, field func(*server.Config) *int) option {
	return option{name: name, arg: "n", help: help,
		set: func(s *settings, name string, values []string) error {
			v, err := one(name, values)
			if err != nil {
				return err
			}
			n, err := conffile.ParseSize(v)
			if err != nil || n != int64(int(n)) {
				return fmt.Errorf("%s: %q is not a number", name, v)
			}
			*field(&s.Config) = int(n)
			return nil
		},
		get: func(s *settings) string { return strconv.Itoa(*field(&s.Config)) },
	}
}

// duration is an option of a time: a Go duration (50ms, 1s) or a number of milliseconds.
func duration(name, help string, field func(*server.Config) *time.Duration) option {
	return option{name: name, arg: "duration", help: help + " (50ms, 1s, or milliseconds)",
		set: func(s *settings, name string, values []string) error {
			v, err := one(name, values)
			if err != nil {
				return err
			}
			d, err := time.ParseDuration(v)
			if err != nil {
				ms, merr := strconv.Atoi(v)
				if merr != nil {
					return fmt.Errorf("%s: %q is not a duration (50ms, 1s) or a number of milliseconds", name, v)
				}
				d = time.Duration(ms) * time.Millisecond
			}
			*field(&s.Config) = d
			return nil
		},
		get: func(s *settings) string { return field(&s.Config).String() },
	}
}

// size is an integer shown with Redis's units.
func size(name, help string, field func(*server.Config) *int) option {
	o := integer(name, help, field)
	o.arg = "bytes"
	o.get = func(s *settings) string { return conffile.FormatSize(int64(*field(&s.Config))) }
	return o
}

// alias gives o older names.
func alias(o option, names ...string) option {
	o.aliases = names
	return o
}

// withDefault shows def as o's default: the real one depends on the machine.
func withDefault(o option, def string) option {
	o.def = def
	return o
}

// optionTable is every option, in the order --help and the sample config show them.
func optionTable() []option {
	type C = server.Config
	return []option{
		// Network.
		{name: "bind", arg: "addr...", many: true, help: `addresses to listen on; a leading "-" makes one optional (skipped when it cannot be bound); * is every IPv4 address, ::* every IPv6 one`,
			set: func(s *settings, name string, values []string) error {
				if len(values) == 0 {
					return fmt.Errorf("%s: takes one address or more", name)
				}
				s.Bind = strings.Join(values, " ")
				return nil
			},
			get: func(s *settings) string { return s.Bind }},
		integer("port", "TCP port; 0 picks a free one (with tls-port set, 0 serves TLS only)", func(c *C) *int { return &c.Port }),
		integer("tcp-backlog", "the backlog of connections the kernel completes before they are accepted (capped by net.core.somaxconn)", func(c *C) *int { return &c.TCPBacklog }),
		str("unixsocket", "path", "a Unix socket to listen on too; empty for none", func(c *C) *string { return &c.UnixSocket }),
		{name: "unixsocketperm", arg: "octal", help: "the Unix socket's permissions, in octal (700); 0 leaves the umask's",
			set: func(s *settings, name string, values []string) error {
				v, err := one(name, values)
				if err != nil {
					return err
				}
				n, err := strconv.ParseUint(v, 8, 32)
				if err != nil || n > 0o777 {
					return fmt.Errorf("%s: %q is not permissions in octal, 0 to 777", name, v)
				}
				s.UnixSocketPerm = uint32(n)
				return nil
			},
			get: func(s *settings) string { return strconv.FormatUint(uint64(s.UnixSocketPerm), 8) }},
		boolean("protected-mode", "with no password for the default user, refuse clients that are not on the loopback", func(c *C) *bool { return &c.ProtectedMode }),
		integer("timeout", "close a client idle for this many seconds (never replicas or subscribers); 0 never", func(c *C) *int { return &c.Timeout }),
		integer("tcp-keepalive", "seconds of silence before the kernel probes a client's connection; 0 for none", func(c *C) *int { return &c.TCPKeepAlive }),
		integer("maxclients", "connections served at once", func(c *C) *int { return &c.MaxClients }),
		withDefault(integer("io-threads", "event loops serving the connections, each on a thread of its own; 0 serves each connection from a goroutine", func(c *C) *int { return &c.IOThreads }), "one per CPU, at least 1"),
		integer("shards", "lock-striped shards of the keyspace, a power of two", func(c *C) *int { return &c.Shards }),
		integer("prefetch-batch-max-size", "keys of a read's pipelined requests prefetched together before they run; below 2, none", func(c *C) *int { return &c.PrefetchBatch }),
		size("proto-max-bulk-len", "the largest argument a request may carry", func(c *C) *int { return &c.ProtoMaxBulkLen }),

		// Process.
		{name: "daemonize", arg: "no", help: "only no: throttled runs in the foreground, under systemd (supervised systemd) or a container runtime",
			set: func(s *settings, name string, values []string) error {
				on, err := parseYes(name, values)
				s.daemonize = on
				return err
			},
			get: func(s *settings) string { return yesNo(s.daemonize) }},
		{name: "supervised", arg: "no|auto|systemd", help: "systemd: tell systemd when the server is ready and stopping (sd_notify over $NOTIFY_SOCKET, for Type=notify); auto: when $NOTIFY_SOCKET is set",
			set: func(s *settings, name string, values []string) error {
				v, err := one(name, values)
				s.Supervised = strings.ToLower(v)
				return err
			},
			get: func(s *settings) string { return s.Supervised }},
		str("pidfile", "path", "write the process id here at start and remove it at exit; empty for none", func(c *C) *string { return &c.PidFile }),
		str("dir", "path", "the directory of the state on disk: a Pebble store only throttled writes to", func(c *C) *string { return &c.Dir }),
		{name: "include", arg: "path", help: "read another config file at this point (a path relative to the working directory)"},

		// Logs.
		str("loglevel", "level", "debug, verbose, notice or warning", func(c *C) *string { return &c.LogLevel }),
		str("log-format", "text|json", "the logs' format: log/slog's text or JSON handler", func(c *C) *string { return &c.LogFormat }),
		str("logfile", "path", "append the logs to this file; empty for standard error", func(c *C) *string { return &c.LogFile }),

		// Persistence.
		boolean("appendonly", "keep the state durable in dir; no keeps it in memory only, and a restart forgets it", func(c *C) *bool { return &c.AppendOnly }),
		str("appendfsync", "policy", "when changes are synced to disk: always (before the reply), everysec or no (the OS decides)", func(c *C) *string { return &c.AppendFsync }),
		boolean("aof-load-truncated", "at start, cut off a torn tail of the newest log (a machine crash leaves one) and log it; no refuses to start", func(c *C) *bool { return &c.AOFLoadTruncated }),
		boolean("aof-load-broken", "at start, drop a corrupt part of the logs, from the bad record on, if at most aof-load-broken-max-size, and log it; no refuses to start", func(c *C) *bool { return &c.AOFLoadBroken }),
		size("aof-load-broken-max-size", "the most aof-load-broken may drop", func(c *C) *int { return &c.AOFLoadBrokenMaxSize }),

		// Security.
		str("requirepass", "password", "the default user's password, given with AUTH; empty for none", func(c *C) *string { return &c.RequirePass }),
		{name: "user", arg: "name rule...", many: true, help: "an ACL user, as ACL SETUSER name rule... takes it; one line each",
			set: func(s *settings, name string, values []string) error {
				if len(values) == 0 {
					return fmt.Errorf("%s: takes a name and rules", name)
				}
				s.Users = append(s.Users, values)
				return nil
			},
			get: func(s *settings) string {
				var lines []string
				for _, u := range s.Users {
					lines = append(lines, strings.Join(u, " "))
				}
				return strings.Join(lines, "; ")
			}},
		str("aclfile", "path", "a file of user lines instead, for ACL LOAD and ACL SAVE", func(c *C) *string { return &c.ACLFile }),
		integer("tls-port", "a port for TLS clients; 0 for none", func(c *C) *int { return &c.TLSPort }),
		str("tls-cert-file", "path", "the server's certificate (PEM), read again when it changes", func(c *C) *string { return &c.TLSCertFile }),
		str("tls-key-file", "path", "the server's private key (PEM)", func(c *C) *string { return &c.TLSKeyFile }),
		str("tls-ca-cert-file", "path", "CA certificates that clients' certificates (and the primary's) are verified against", func(c *C) *string { return &c.TLSCACertFile }),
		str("tls-auth-clients", "yes|optional|no", "whether clients must present a certificate the CA signed", func(c *C) *string { return &c.TLSAuthClients }),
		str("tls-auth-clients-user", "CN|off", "CN: a client whose verified certificate's common name is an ACL user that is on acts as that user without AUTH (tls-port, and grpc-port with grpc-tls)", func(c *C) *string { return &c.TLSAuthClientsUser }),
		boolean("tls-replication", "a replica connects to its primary over TLS", func(c *C) *bool { return &c.TLSReplication }),
		{name: "client-output-buffer-limit", arg: "class hard soft seconds", many: true, help: "output buffer limits of the classes normal, replica and pubsub, as Redis; one class a line",
			def: "pubsub 32mb 8mb 60",
			set: func(s *settings, name string, values []string) error {
				if s.ClientOutputBufferLimit != "" { // one class per line: the classes accumulate
					s.ClientOutputBufferLimit += " "
				}
				s.ClientOutputBufferLimit += strings.Join(values, " ")
				return nil
			},
			get: func(s *settings) string { return s.ClientOutputBufferLimit }},

		// Memory.
		{name: "maxmemory", arg: "bytes", help: "the most bytes the keyspace may hold, by its own accounting; 0 for no limit",
			set: func(s *settings, name string, values []string) error {
				v, err := one(name, values)
				if err != nil {
					return err
				}
				n, err := conffile.ParseSize(v)
				if err != nil {
					return fmt.Errorf("%s: %q is not a size (64mb, 1gb)", name, v)
				}
				s.MaxMemory = n
				return nil
			},
			get: func(s *settings) string { return conffile.FormatSize(s.MaxMemory) }},
		str("maxmemory-policy", "policy", "what goes over maxmemory: volatile-ttl, noeviction, allkeys-lru, volatile-lru, allkeys-random, volatile-random; volatile-ttl by default, not Redis's noeviction: every rate-limit key expires, the one nearest expiry is the least use, and a flood of new subjects evicts those rather than fail decisions", func(c *C) *string { return &c.MaxMemoryPolicy }),
		integer("maxmemory-samples", "keys compared to choose each one evicted", func(c *C) *int { return &c.MaxMemorySamples }),
		str("notify-keyspace-events", "classes", "keyspace events published on pub/sub, Redis's letters (K E g $ l s h z x e t m d n A, e.g. KEA); empty for none", func(c *C) *string { return &c.NotifyKeyspaceEvents }),

		// Replication.
		{name: "replicaof", aliases: []string{"slaveof"}, arg: "host port", many: true, help: "the primary to replicate; no one for none",
			set: func(s *settings, name string, values []string) error {
				if len(values) == 1 { // --replicaof "host port"
					values = strings.Fields(values[0])
				}
				switch {
				case len(values) != 2:
					return fmt.Errorf("%s: takes a host and a port, got %d values", name, len(values))
				case strings.EqualFold(values[0], "no") && strings.EqualFold(values[1], "one"):
					s.ReplicaOf = ""
				default:
					s.ReplicaOf = values[0] + " " + values[1]
				}
				return nil
			},
			get: func(s *settings) string { return s.ReplicaOf }},
		str("masterauth", "password", "the password of a primary with requirepass", func(c *C) *string { return &c.MasterAuth }),
		str("masteruser", "user", "the user a replica authenticates as to its primary", func(c *C) *string { return &c.MasterUser }),
		size("repl-backlog-size", "bytes of the change stream a primary keeps for replicas that reconnect", func(c *C) *int { return &c.ReplBacklogSize }),
		alias(integer("replica-priority", "Sentinel promotes the lowest first; 0 never", func(c *C) *int { return &c.ReplicaPriority }), "slave-priority"),
		alias(str("replica-announce-ip", "addr", "the address a replica gives its primary to show, instead of its own", func(c *C) *string { return &c.ReplicaAnnounceIP }), "slave-announce-ip"),
		alias(integer("replica-announce-port", "the port a replica gives its primary to show; 0 for its own", func(c *C) *int { return &c.ReplicaAnnouncePort }), "slave-announce-port"),
		alias(integer("min-replicas-to-write", "refuse writes while fewer replicas than this acknowledged within min-replicas-max-lag", func(c *C) *int { return &c.MinReplicasToWrite }), "min-slaves-to-write"),
		alias(integer("min-replicas-max-lag", "seconds within which a replica must have acknowledged to count", func(c *C) *int { return &c.MinReplicasMaxLag }), "min-slaves-max-lag"),
		{name: "replica-read-only", aliases: []string{"slave-read-only"}, arg: "yes", help: "only yes: a throttled replica is always read-only",
			set: func(s *settings, name string, values []string) error {
				if on, err := parseYes(name, values); err != nil || !on {
					return fmt.Errorf("%s: throttled replicas are always read-only: only yes is accepted", name)
				}
				return nil
			},
			get: func(*settings) string { return "yes" }},

		// Upstream mode.
		str("upstream", "url", "redis://[user:password@]host:port[/db] (or rediss://): keep every limit in that Redis, shared with other instances", func(c *C) *string { return &c.Upstream }),
		{name: "upstream-cluster", arg: "host:port,...", many: true, help: "the nodes of a Redis Cluster to keep the limits in instead",
			set: func(s *settings, name string, values []string) error {
				s.UpstreamCluster = nil
				for _, v := range values {
					for _, node := range strings.Split(v, ",") {
						if node != "" {
							s.UpstreamCluster = append(s.UpstreamCluster, node)
						}
					}
				}
				if len(s.UpstreamCluster) == 0 {
					return fmt.Errorf("%s: takes host:port[,host:port...]", name)
				}
				return nil
			},
			get: func(s *settings) string { return strings.Join(s.UpstreamCluster, ",") }},
		duration("upstream-timeout", "a round trip to the upstream longer than this counts as a failure", func(c *C) *time.Duration { return &c.UpstreamTimeout }),
		{name: "upstream-fallback-share", arg: "fraction", help: "the share of each limit one instance grants alone while the upstream is away, in (0, 1]",
			set: func(s *settings, name string, values []string) error {
				v, err := one(name, values)
				if err != nil {
					return err
				}
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return fmt.Errorf("%s: %q is not a number", name, v)
				}
				s.UpstreamFallbackShare = f
				return nil
			},
			get: func(s *settings) string { return strconv.FormatFloat(s.UpstreamFallbackShare, 'g', -1, 64) }},
		duration("global-sync-interval", "how often an instance agrees on its GLOBAL limits through the upstream, 10ms to 1m", func(c *C) *time.Duration { return &c.GlobalSyncInterval }),

		// Observability.
		{name: "slowlog-log-slower-than", arg: "µs", help: "microseconds from which a command goes into SLOWLOG; 0 logs every command, negative none",
			set: func(s *settings, name string, values []string) error {
				v, err := one(name, values)
				if err != nil {
					return err
				}
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return fmt.Errorf("%s: %q is not an integer", name, v)
				}
				s.SlowlogLogSlowerThan = n
				return nil
			},
			get: func(s *settings) string { return strconv.FormatInt(s.SlowlogLogSlowerThan, 10) }},
		integer("slowlog-max-len", "entries SLOWLOG keeps", func(c *C) *int { return &c.SlowlogMaxLen }),
		boolean("latency-tracking", "keep each command's latency histogram (INFO latencystats, LATENCY HISTOGRAM, /metrics)", func(c *C) *bool { return &c.LatencyTracking }),
		integer("latency-monitor-threshold", "milliseconds from which the latency monitor samples an event (LATENCY LATEST, HISTORY, DOCTOR); 0 off", func(c *C) *int { return &c.LatencyMonitorThreshold }),
		{name: "latency-tracking-info-percentiles", arg: "p...", many: true, help: "the percentiles INFO latencystats shows",
			set: func(s *settings, name string, values []string) error { // quoted as one value, or as several
				s.LatencyTrackingInfoPercentiles = strings.Join(values, " ")
				return nil
			},
			get: func(s *settings) string { return quote(s.LatencyTrackingInfoPercentiles) }},
		alias(integer("busy-reply-threshold", "milliseconds after which a script that still runs makes other clients' commands answer BUSY; 0 never", func(c *C) *int { return &c.BusyReplyThreshold }), "lua-time-limit"),
		integer("denied-events-per-second", "deny events published on __throttled__:denied a second at most; the rest are dropped and counted", func(c *C) *int { return &c.DeniedEventsPerSecond }),
		integer("metrics-port", "HTTP port, on bind, of /metrics, /healthz, /readyz and the status page; 0 for none", func(c *C) *int { return &c.MetricsPort }),

		// The edge.
		integer("http-port", "HTTP port, on bind, of rate-limit decisions (POST /v1/check, forward-auth /v1/auth/<policy>); 0 for none", func(c *C) *int { return &c.HTTPPort }),
		boolean("http-tls", "serve http-port over TLS with the tls-* files", func(c *C) *bool { return &c.HTTPTLS }),
		boolean("http-legacy-headers", "HTTP decisions carry X-RateLimit-Limit, -Remaining and -Reset beside the draft's RateLimit fields", func(c *C) *bool { return &c.HTTPLegacyHeaders }),
		{name: "http-trusted-proxies", arg: "cidr...", many: true, help: `the proxies (CIDRs or addresses) whose X-Forwarded-For, Forwarded, X-Real-IP or header:<name> names a forward-auth subject or tier; from any other peer the subject is its address; "" trusts nobody`,
			set: func(s *settings, name string, values []string) error { // quoted as one value, or as several
				s.HTTPTrustedProxies = strings.Join(values, " ")
				return nil
			},
			get: func(s *settings) string {
				if s.HTTPTrustedProxies == "" {
					return `""`
				}
				return s.HTTPTrustedProxies
			}},
		integer("grpc-port", "gRPC port, on bind, of Envoy's rate-limit service; 0 for none (needs ratelimit-config)", func(c *C) *int { return &c.GRPCPort }),
		boolean("grpc-tls", "serve grpc-port over TLS with the tls-* files", func(c *C) *bool { return &c.GRPCTLS }),
		{name: "ratelimit-config", arg: "path", help: "an envoyproxy/ratelimit YAML file, or a directory of them, whose descriptors become policies; read again when it changes",
			set: func(s *settings, name string, values []string) error {
				v, err := one(name, values)
				if err != nil {
					return err
				}
				s.RateLimitConfig = v
				if v != "" {
					abs, err := filepath.Abs(v)
					if err != nil {
						return fmt.Errorf("%s: %w", name, err)
					}
					s.RateLimitConfig = abs // read again on SIGHUP, whatever the directory then
				}
				return nil
			},
			get: func(s *settings) string { return quote(s.RateLimitConfig) }},

		// The data types, with Redis's names and their older ziplist aliases.
		alias(integer("hash-max-listpack-entries", "a hash with more fields takes the hashtable encoding", func(c *C) *int { return &c.HashMaxListpackEntries }), "hash-max-ziplist-entries"),
		alias(integer("hash-max-listpack-value", "a hash with a longer field or value takes the hashtable encoding", func(c *C) *int { return &c.HashMaxListpackValue }), "hash-max-ziplist-value"),
		alias(integer("zset-max-listpack-entries", "a sorted set with more members takes the skiplist encoding", func(c *C) *int { return &c.ZsetMaxListpackEntries }), "zset-max-ziplist-entries"),
		alias(integer("zset-max-listpack-value", "a sorted set with a longer member takes the skiplist encoding", func(c *C) *int { return &c.ZsetMaxListpackValue }), "zset-max-ziplist-value"),
		integer("set-max-intset-entries", "a set of integers keeps the intset encoding up to this many members", func(c *C) *int { return &c.SetMaxIntsetEntries }),
		integer("set-max-listpack-entries", "a set with more members gets an index", func(c *C) *int { return &c.SetMaxListpackEntries }),
		integer("set-max-listpack-value", "a set with a longer member gets an index", func(c *C) *int { return &c.SetMaxListpackValue }),
		alias(integer("list-max-listpack-size", "Redis's quicklist node size: the elements (or, negative, the bytes) of a big list's node", func(c *C) *int { return &c.ListMaxListpackSize }), "list-max-ziplist-size"),
		integer("list-compress-depth", "Redis's quicklist nodes left uncompressed at each end, kept and shown only", func(c *C) *int { return &c.ListCompressDepth }),
	}
}

// loader reads the options from their sources in order of precedence.
type loader struct {
	settings
	byName  map[string]*option // by name and alias, lower case
	ignored map[string]bool    // ignoredOptions
	// where is where each option (by its name) was last set: "file:line", "--port" or
	// "THROTTLED_PORT", so that a value Validate refuses is traced to its line.
	where    map[string]string
	warned   []string // the ignored options seen, in order
	includes int      // include depth
}

func newLoader() *loader {
	l := &loader{settings: settings{Config: server.DefaultConfig()}, byName: map[string]*option{},
		ignored: map[string]bool{}, where: map[string]string{}}
	table := optionTable()
	for i := range table {
		o := &table[i]
		for _, n := range append([]string{o.name}, o.aliases...) {
			if l.byName[n] != nil {
				panic("option " + n + " twice in the table")
			}
			l.byName[n] = o
		}
	}
	for _, n := range ignoredOptions {
		l.ignored[n] = true
	}
	return l
}

// loadOptions builds the server's configuration from the process's arguments, environment
// and standard input.
func loadOptions(args []string) (server.Config, error) {
	return loadOptionsFrom(args, os.LookupEnv, os.Stdin)
}

// loadOptionsFrom builds the server's configuration as redis-server does: the defaults, then
// THROTTLED_<OPTION> variables of the environment, then the config file (the first argument
// when it does not start with --; "-" reads it from stdin), then --option value pairs.
func loadOptionsFrom(args []string, lookupEnv func(string) (string, bool), stdin io.Reader) (server.Config, error) {
	l := newLoader()
	if err := l.loadEnv(lookupEnv); err != nil {
		return l.Config, err
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "--") {
		if args[0] == "-" {
			if err := l.loadReader(stdin, "stdin"); err != nil {
				return l.Config, err
			}
		} else {
			path, err := filepath.Abs(args[0])
			if err != nil {
				return l.Config, fmt.Errorf("config file: %w", err)
			}
			if err := l.loadFile(path); err != nil {
				return l.Config, err
			}
			l.ConfigFile = path // CONFIG REWRITE writes here, whatever the directory later
		}
		args = args[1:]
	}
	for i := 0; i < len(args); i++ {
		name, ok := strings.CutPrefix(args[i], "--")
		if !ok || name == "" {
			return l.Config, fmt.Errorf("%q: options look like --port 7000", args[i])
		}
		var values []string
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			values = append(values, args[i+1])
			i++
		}
		if err := l.set(name, values, "--"+name); err != nil {
			return l.Config, err
		}
	}
	return l.finish()
}

// loadEnv reads THROTTLED_<OPTION> for each option: dashes become underscores, the name upper
// case (THROTTLED_REQUIREPASS, THROTTLED_TLS_CERT_FILE). An option of one value takes the
// variable as it is, a password with blanks too; one of several words splits it as a config
// line (THROTTLED_BIND="127.0.0.1 ::1").
func (l *loader) loadEnv(lookupEnv func(string) (string, bool)) error {
	for _, o := range optionTable() {
		if o.set == nil {
			continue // include
		}
		env := envName(o.name)
		v, ok := lookupEnv(env)
		if !ok {
			continue
		}
		values := []string{v}
		if o.many {
			var err error
			if values, err = conffile.SplitLine(v); err != nil {
				return fmt.Errorf("%s: %w", env, err)
			}
		}
		if err := l.set(o.name, values, env); err != nil {
			return fmt.Errorf("%s: %w", env, err)
		}
	}
	return nil
}

// envName is the environment variable of an option.
func envName(option string) string {
	return "THROTTLED_" + strings.ToUpper(strings.ReplaceAll(option, "-", "_"))
}

// loadFile reads a config file.
func (l *loader) loadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	return l.loadReader(f, path)
}

// loadReader reads "directive value" lines; blank lines and # comments are skipped.
func (l *loader) loadReader(r io.Reader, path string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		at := path + ":" + strconv.Itoa(n)
		words, err := conffile.SplitLine(line)
		if err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		name := strings.ToLower(words[0])
		if policy.Directive(name) {
			continue // the server reads these, and reads them again on SIGHUP
		}
		if name == "include" {
			if err := l.include(words[1:], at); err != nil {
				return err
			}
			continue
		}
		if err := l.set(name, words[1:], at); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// include reads another file where an include line stands, as Redis does.
func (l *loader) include(values []string, at string) error {
	v, err := one("include", values)
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	if l.includes >= 16 {
		return fmt.Errorf("%s: include: more than 16 levels deep (a file that includes itself?)", at)
	}
	l.includes++
	defer func() { l.includes-- }()
	path, err := filepath.Abs(v)
	if err == nil {
		err = l.loadFile(path)
	}
	if err != nil {
		return fmt.Errorf("%s: include: %w", at, err)
	}
	return nil
}

// set applies one option by any of its names; where says where it came from.
func (l *loader) set(name string, values []string, where string) error {
	name = strings.ToLower(name)
	if l.ignored[name] {
		if !sortedContains(l.warned, name) {
			l.warned = insertSorted(l.warned, name)
		}
		return nil
	}
	o := l.byName[name]
	if o == nil || o.set == nil {
		if name == "include" {
			return fmt.Errorf("include: only in a config file")
		}
		return fmt.Errorf("%s: unknown option", name)
	}
	if err := o.set(&l.settings, name, values); err != nil {
		return err
	}
	l.where[o.name] = where
	return nil
}

// finish checks the options together; an error names where the option was set.
func (l *loader) finish() (server.Config, error) {
	l.Ignored = l.warned
	if l.daemonize {
		if l.Supervised != "systemd" && (l.Supervised != "auto" || os.Getenv("NOTIFY_SOCKET") == "") {
			return l.Config, l.located("daemonize", fmt.Errorf("daemonize: yes is not supported: throttled stays in the foreground; "+
				"run it under systemd (supervised systemd, Type=notify) or give --daemonize no"))
		}
	}
	if err := l.Validate(); err != nil {
		name, _, _ := strings.Cut(err.Error(), ":")
		return l.Config, l.located(name, err)
	}
	return l.Config, nil
}

// located puts where the option name was set before err.
func (l *loader) located(name string, err error) error {
	if o := l.byName[name]; o != nil {
		if at, ok := l.where[o.name]; ok && !strings.HasPrefix(at, "--") {
			return fmt.Errorf("%s: %w", at, err)
		}
	}
	return err
}

func sortedContains(s []string, v string) bool {
	i := sort.SearchStrings(s, v)
	return i < len(s) && s[i] == v
}

func insertSorted(s []string, v string) []string {
	i := sort.SearchStrings(s, v)
	s = append(s, "")
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

// informational answers --help (-h) and --version (-v), which touch nothing on disk, and
// reports whether args asked for one of them. -h and -v only as the first argument: later,
// they may be an option's value.
func informational(args []string, w io.Writer) bool {
	for i, a := range args {
		switch {
		case a == "--help" || (i == 0 && a == "-h"):
			usage(w)
			return true
		case a == "--version" || (i == 0 && a == "-v"):
			fmt.Fprintf(w, "throttled %s (%s %s/%s)\n", version.String(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return true
		}
	}
	return false
}

// usage writes --help: the command line, then every option with its default and a line of
// help, from the option table.
func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: throttled [config-file | -] [--option value ...]
       throttled -h | --help | -v | --version

throttled is a rate-limit server that speaks the Redis protocol. As redis-server, it reads a
config file of "option value" lines (redis.conf's; "-" reads it from standard input), and
--option value pairs after it override the file. Every option can also come from the
environment as THROTTLED_<OPTION>, dashes as underscores (THROTTLED_REQUIREPASS): the
command line overrides the file, the file the environment, the environment the defaults.

Options:
`)
	for _, o := range optionTable() {
		names := "--" + o.name
		for _, a := range o.aliases {
			names += ", --" + a
		}
		fmt.Fprintf(w, "  %s %s\n", names, o.arg)
		help := o.help
		if o.get != nil {
			def := o.defaultText()
			if def == "" || def == `""` {
				def = "none"
			}
			help += " (default " + def + ")"
		}
		fmt.Fprintln(w, wrap(help, 100, "        "))
	}
	fmt.Fprintf(w, `
Accepted from a redis.conf and ignored, with a warning (they have no meaning here):
%s

Policies come from the config file as well: policy, policy-override, policy-allow and
policy-deny lines (read again on SIGHUP).
`, wrap(strings.Join(ignoredOptions, ", "), 92, "  "))
}

// sampleConfig is throttled.conf: every option, commented out at its default, under its help.
func sampleConfig() string {
	var b strings.Builder
	b.WriteString(`# throttled.conf: every option throttled reads, each commented out at its default.
#
# As redis.conf: "option value" lines; "double quotes" take C escapes, sizes take Redis's units
# (1k is 1000, 1kb 1024; mb and gb likewise). Start with
#
#     throttled /etc/throttled/throttled.conf [--option value ...]
#
# Options on the command line override this file, which overrides THROTTLED_<OPTION> variables
# of the environment, which override the defaults. throttled --help lists the same options.
#
# Generated from the option table in cmd/throttled/options.go by
# "go generate ./cmd/throttled"; a test fails when the two differ.
`)
	for _, o := range optionTable() {
		b.WriteString("\n")
		b.WriteString(wrap(o.help, 96, "# "))
		b.WriteString("\n")
		if len(o.aliases) > 0 {
			b.WriteString("# Also read as " + strings.Join(o.aliases, ", ") + ".\n")
		}
		def := o.defaultText()
		switch {
		case o.get == nil:
			b.WriteString("# " + o.name + " " + o.arg + "\n")
		case o.def != "":
			b.WriteString("# " + o.name + " " + o.arg + "    (default: " + o.def + ")\n")
		case def == "" && o.many:
			b.WriteString("# " + o.name + " " + o.arg + "\n")
		case def == "":
			b.WriteString("# " + o.name + " \"\"\n")
		default:
			b.WriteString("# " + o.name + " " + def + "\n")
		}
	}
	b.WriteString("\n# Policies: named limits kept on the server, read again on SIGHUP.\n")
	b.WriteString("# policy api THROTTLE 99 100 1m SOFT 0.8\n")
	b.WriteString("\n")
	b.WriteString(wrap("Accepted from a redis.conf and ignored, with a warning (no meaning here): "+strings.Join(ignoredOptions, ", ")+".", 96, "# "))
	b.WriteString("\n")
	return b.String()
}

// wrap breaks text into lines of at most width characters, each starting with prefix.
func wrap(text string, width int, prefix string) string {
	var lines []string
	line := prefix
	for _, word := range strings.Fields(text) {
		if len(line) > len(prefix) && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = prefix
		}
		if len(line) > len(prefix) {
			line += " "
		}
		line += word
	}
	return strings.Join(append(lines, line), "\n")
}
