package server

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/global"
	"github.com/throttledhq/throttled/httpapi"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/latency"
	"github.com/throttledhq/throttled/listen"
	"github.com/throttledhq/throttled/notify"
	"github.com/throttledhq/throttled/persistence"
	"github.com/throttledhq/throttled/resp"
)

// Config is what a server is built from. Options use Redis's names.
type Config struct {
	// Bind is the addresses to listen on, separated by blanks ("bind"); default 127.0.0.1. An
	// address with a leading "-" is optional: one that cannot be bound is skipped. * is every
	// IPv4 address, ::* every IPv6 one. metrics-port, http-port, grpc-port and tls-port
	// listen on the first address.
	Bind string
	// Port is the TCP port ("port"); 0 picks a free one.
	Port int
	// TCPBacklog is the length of the queue of connections the kernel completes before they
	// are accepted ("tcp-backlog"); default 511, as Redis. The kernel caps it at somaxconn.
	TCPBacklog int
	// UnixSocket is a Unix socket to listen on too ("unixsocket"); "" for none.
	UnixSocket string
	// UnixSocketPerm is the socket's permissions ("unixsocketperm", octal); 0 leaves the
	// umask's.
	UnixSocketPerm uint32
	// PidFile is written with the process id once the server listens, and removed when it
	// stops ("pidfile"); "" for none.
	PidFile string
	// Supervised is "systemd" to tell systemd, over $NOTIFY_SOCKET, that the server is ready
	// (READY=1) and stopping (STOPPING=1), for a unit of Type=notify; "auto" when
	// $NOTIFY_SOCKET is set; "no" (the default) never ("supervised").
	Supervised string
	// LogFormat is "text" (the default) or "json": log/slog's handlers ("log-format").
	LogFormat string
	// LogFile is the file the logs are appended to ("logfile"); "" for standard error.
	LogFile string
	// Ignored names the options of a redis.conf that have no meaning here: the server warns
	// about them once as it starts.
	Ignored []string
	// Dir is the directory of the state on disk ("dir"): a Pebble store that only
	// throttled writes to.
	Dir string
	// AppendOnly keeps the state durable in Dir, so that a restart, even a crash, never
	// hands out fresh quotas ("appendonly"); default true. False keeps it in memory only.
	AppendOnly bool
	// AppendFsync says when changes are synced to disk ("appendfsync"): always (before the
	// replies of a client that changed state), everysec (default: a crash loses about a
	// second at most) or no (the operating system decides).
	AppendFsync string
	// AOFLoadTruncated lets a start cut off a torn tail of the newest log, as a machine
	// crash leaves, and log it ("aof-load-truncated"); default true. False refuses to start.
	AOFLoadTruncated bool
	// AOFLoadBroken lets a start drop a corrupt part of the logs, from the bad record on,
	// when it is at most AOFLoadBrokenMaxSize bytes, and log it ("aof-load-broken",
	// "aof-load-broken-max-size"); default false: corruption refuses to start.
	AOFLoadBroken        bool
	AOFLoadBrokenMaxSize int
	// RequirePass, when set, must be given with AUTH before other commands ("requirepass"):
	// it is the default user's password.
	RequirePass string
	// Users are the ACL users of the config file's user lines ("user name rule..."): each
	// is the name, then the rules as ACL SETUSER takes them.
	Users [][]string
	// ACLFile is a file of users, one "user name rule..." line each, read at start and by
	// ACL LOAD, written by ACL SAVE ("aclfile"); not with Users.
	ACLFile string
	// MaxMemory is the most bytes the keyspace may hold, as keyspace.UsedMemory counts
	// them ("maxmemory"); 0 for no limit. Over it, MaxMemoryPolicy says what goes.
	MaxMemory int64
	// MaxMemoryPolicy is Redis's maxmemory-policy: volatile-ttl (the keys nearest to idle
	// go first), noeviction (commands that add data get OOM errors; rate-limit decisions
	// are answered without creating keys), allkeys-lru, volatile-lru, allkeys-random or
	// volatile-random. The default is volatile-ttl, where Redis's is noeviction: every
	// rate-limit key expires, the one nearest expiry is the least use (a spent limit's runs
	// longest), and a flood of new subjects must evict those, not fill the keyspace.
	MaxMemoryPolicy string
	// NotifyKeyspaceEvents is Redis's notify-keyspace-events: the classes of keyspace
	// events published on pub/sub, as letters (K, E, g, $, l, s, h, z, x, e, t, m, d, n, A);
	// "" (the default) publishes none.
	NotifyKeyspaceEvents string
	// MaxMemorySamples is how many keys eviction compares to choose each one it removes
	// ("maxmemory-samples"); default 5.
	MaxMemorySamples int
	// TLS, with Redis's names. TLSPort is a second port whose clients speak TLS
	// ("tls-port"); 0 for none. With TLSPort set, Port 0 serves no plain TCP at all.
	TLSPort int
	// TLSCertFile and TLSKeyFile are the server's certificate and key, in PEM
	// ("tls-cert-file", "tls-key-file"); read again when they change, without a restart.
	TLSCertFile, TLSKeyFile string
	// TLSCACertFile holds the CA certificates that clients' certificates (and with
	// TLSReplication, the primary's) are verified against ("tls-ca-cert-file").
	TLSCACertFile string
	// TLSAuthClients is yes (clients must present a certificate the CA signed; the
	// default), optional (verified when given) or no ("tls-auth-clients").
	TLSAuthClients string
	// TLSAuthClientsUser is CN (a client whose verified certificate's common name is an ACL
	// user that is on acts as that user, without AUTH; on tls-port and on grpc-port with
	// grpc-tls) or off, the default ("tls-auth-clients-user", as in Redis 8.6).
	TLSAuthClientsUser string
	// TLSReplication makes a replica connect to its primary over TLS, presenting
	// TLSCertFile ("tls-replication").
	TLSReplication bool
	// Timeout closes a client idle for this many seconds ("timeout"); 0, the default,
	// never does. Replicas and subscribers are never closed for it.
	Timeout int
	// TCPKeepAlive is the seconds of silence after which the kernel probes a client's
	// connection, so that a peer gone without a word is noticed ("tcp-keepalive"); default
	// 300, 0 for none.
	TCPKeepAlive int
	// ProtectedMode refuses clients from other hosts than the loopback while the default
	// user has no password, with Redis's DENIED error ("protected-mode"); default true.
	ProtectedMode bool
	// ClientOutputBufferLimit is Redis's client-output-buffer-limit: "class hard soft
	// seconds" for the classes normal, replica (slave) and pubsub; "" keeps Redis's
	// defaults (pubsub 32mb 8mb 60).
	ClientOutputBufferLimit string
	// LogLevel is debug, verbose, notice or warning ("loglevel").
	LogLevel string
	// MaxClients is the most connections served at once ("maxclients").
	MaxClients int
	// PrefetchBatch is how many keys of the requests one read brings are prefetched
	// together before they run ("prefetch-batch-max-size", 0 to 128; below 2, none).
	PrefetchBatch int
	// ProtoMaxBulkLen is the largest argument a request may carry ("proto-max-bulk-len").
	ProtoMaxBulkLen int
	// IOThreads is how many event loops serve the connections, each on a thread of its
	// own ("io-threads"); 0 serves each connection from a goroutine of its own instead.
	// See Procs.
	//
	// The default is one loop per CPU the process may use (GOMAXPROCS as it started, which
	// the GOMAXPROCS variable and a container's CPU limit set), at least one. The loops share
	// no line they write (counters per loop, counters.go), and a loop with nothing to do
	// sleeps in epoll_wait and costs nothing, so a loop per CPU only adds: on 8 CPUs, 8
	// loops answered CL.THROTTLE at pipeline 16 at 1.96M/s where the old default, half the
	// CPUs, answered 1.48M/s (issue 37, the load on 8 other CPUs), and on 16 CPUs the same
	// holds with twice the loops. The kernel's network work runs in the loops' own
	// syscalls, and the disk writer, the replication feed and the collector get Ps of their
	// own on top (Procs), not a share of the loops'. On 2 CPUs shared with the load tool, 2
	// loops did more than 1 at pipeline 16 in each of 3 interleaved rounds and were even at
	// pipeline 1, on a machine too loaded to say by how much (docs/performance.md).
	IOThreads int
	// Shards is how many lock-striped shards hold the keys; a power of two.
	Shards int
	// ConfigFile is the file the options were read from, "" when none: CONFIG REWRITE
	// writes the running options back into it.
	ConfigFile string

	// Replication, with Redis's names and defaults.
	// ReplicaOf is "host port" of the primary to replicate ("replicaof"); "" for a primary.
	ReplicaOf string
	// MasterAuth and MasterUser authenticate to a primary with requirepass ("masterauth",
	// "masteruser").
	MasterAuth, MasterUser string
	// ReplBacklogSize is the bytes of the change stream a primary keeps for replicas that
	// reconnect ("repl-backlog-size"); default 1 MiB.
	ReplBacklogSize int
	// ReplicaPriority ranks replicas for Sentinel's promotion, lower first, 0 never
	// ("replica-priority"); default 100.
	ReplicaPriority int
	// ReplicaAnnounceIP and ReplicaAnnouncePort are what a replica tells its primary to show
	// in INFO replication, instead of its address ("replica-announce-ip", "-port").
	ReplicaAnnounceIP   string
	ReplicaAnnouncePort int
	// MinReplicasToWrite refuses writes while fewer replicas than this have acknowledged
	// within MinReplicasMaxLag seconds ("min-replicas-to-write", "min-replicas-max-lag").
	MinReplicasToWrite int
	MinReplicasMaxLag  int

	// Upstream mode (upstream.go): the state of every limit lives in a Redis or Redis Cluster
	// shared by every instance pointing at it. Upstream is its URL ("upstream"):
	// redis://[user:password@]host:port[/db], or rediss:// for TLS.
	Upstream string
	// UpstreamCluster lists host:port nodes of a Redis Cluster instead ("upstream-cluster").
	UpstreamCluster []string
	// UpstreamTimeout bounds one round trip to the upstream ("upstream-timeout"); default 50ms.
	UpstreamTimeout time.Duration
	// UpstreamFallbackShare is the fraction of each limit one instance grants alone while the
	// upstream is away ("upstream-fallback-share"), in (0, 1]; default 1.
	UpstreamFallbackShare float64
	// GlobalSyncInterval is how often an instance agrees on its GLOBAL limits' allowances
	// through the upstream ("global-sync-interval"); default 500ms, 10ms to 1m.
	GlobalSyncInterval time.Duration

	// Observability (observe.go, metrics.go).
	// SlowlogLogSlowerThan is the time in µs from which a command goes into SLOWLOG
	// ("slowlog-log-slower-than"); default 10000, 0 logs every command, negative none.
	SlowlogLogSlowerThan int64
	// SlowlogMaxLen is how many entries SLOWLOG keeps ("slowlog-max-len"); default 128.
	SlowlogMaxLen int
	// LatencyTracking keeps each command's latency distribution ("latency-tracking"; default
	// yes), which INFO latencystats shows at LatencyTrackingInfoPercentiles
	// ("latency-tracking-info-percentiles", default "50 99 99.9").
	LatencyTracking                bool
	LatencyTrackingInfoPercentiles string
	// LatencyMonitorThreshold is the time in ms from which the latency monitor samples an
	// event (a command, an expiry or eviction cycle, a wait for the log): LATENCY LATEST,
	// HISTORY, GRAPH and DOCTOR ("latency-monitor-threshold"); default 0, off.
	LatencyMonitorThreshold int
	// BusyReplyThreshold is the time in ms after which a script that still runs makes other
	// clients' commands answer BUSY ("busy-reply-threshold", "lua-time-limit"); default 5000,
	// 0 never.
	BusyReplyThreshold int
	// DeniedEventsPerSecond caps the deny events published on __throttled__:denied and
	// __throttled__:denied:<verb> ("denied-events-per-second"); default 1000, 0 none. Events over
	// the cap are dropped and counted in INFO throttle.
	DeniedEventsPerSecond int
	// MetricsPort serves Prometheus metrics at /metrics, /healthz, /readyz and a status page
	// at / over HTTP on Bind ("metrics-port"); 0, the default, serves none.
	MetricsPort int
	// HTTPPort serves rate-limit decisions over HTTP on Bind (package httpapi: POST /v1/check,
	// forward-auth /v1/auth/<policy>) with the ACL users ("http-port"); 0, the default,
	// serves none.
	HTTPPort int
	// HTTPTLS serves http-port over TLS with the tls-* files ("http-tls"; default no).
	HTTPTLS bool
	// HTTPLegacyHeaders adds X-RateLimit-Limit, -Remaining and -Reset to HTTP decisions
	// beside the draft's RateLimit fields ("http-legacy-headers"; default yes).
	HTTPLegacyHeaders bool
	// HTTPTrustedProxies are the peers, CIDRs or addresses separated by blanks, whose headers
	// name a forward-auth subject or tier ("http-trusted-proxies"; default the loopback,
	// httpapi.DefaultProxies; empty trusts nobody). From any other peer the subject is the
	// peer's address.
	HTTPTrustedProxies string
	// GRPCPort serves Envoy's rate-limit service (envoy.service.ratelimit.v3) and gRPC health
	// checking on Bind ("grpc-port"); 0, the default, serves none.
	GRPCPort int
	// RateLimitConfig is an envoyproxy/ratelimit configuration: a YAML file, or a directory
	// of them ("ratelimit-config"). Its descriptors become policies; it is read again when
	// it changes and on SIGHUP. Empty: none.
	RateLimitConfig string
	// GRPCTLS serves grpc-port over TLS with the tls-* files ("grpc-tls"); default no.
	GRPCTLS bool

	// The data types (package datatype), with Redis's names: a hash or a sorted set with more
	// entries than ...Entries, or a field, value or member longer than ...Value bytes, takes
	// Redis's big encoding (OBJECT ENCODING hashtable, skiplist) and keeps it.
	// HashMaxListpackEntries is "hash-max-listpack-entries"; default 512, as Redis 7.0's.
	HashMaxListpackEntries int
	// HashMaxListpackValue is "hash-max-listpack-value"; default 64.
	HashMaxListpackValue int
	// ZsetMaxListpackEntries is "zset-max-listpack-entries"; default 128.
	ZsetMaxListpackEntries int
	// ZsetMaxListpackValue is "zset-max-listpack-value"; default 64.
	ZsetMaxListpackValue int
	// SetMaxIntsetEntries is "set-max-intset-entries"; default 512: a set of integers only
	// keeps Redis's intset encoding (sorted) up to that many members.
	SetMaxIntsetEntries int
	// SetMaxListpackEntries is "set-max-listpack-entries" (Redis 7.2's name; 7.0 has no
	// listpack sets); default 128: a set of more members, or of a member longer than
	// SetMaxListpackValue, gets an index that finds a member without walking it. OBJECT
	// ENCODING names 7.0's hashtable either way.
	SetMaxListpackEntries int
	// SetMaxListpackValue is "set-max-listpack-value"; default 64.
	SetMaxListpackValue int
	// ListMaxListpackSize is "list-max-listpack-size", Redis's size of a quicklist node;
	// default -2. A list here is one pack whatever it is, so it is kept and shown only.
	ListMaxListpackSize int
	// ListCompressDepth is "list-compress-depth", how many nodes at each end of a list
	// Redis leaves uncompressed; default 0 (none compressed). Nodes are never compressed
	// here, so it is kept and shown only.
	ListCompressDepth int

	// Logger receives the server's structured logs; nil builds one on stderr at LogLevel.
	Logger *slog.Logger
	// Now is the clock; nil uses the wall clock at start plus monotonic time since,
	// so that a wall clock stepping backwards never moves the server's time back.
	Now func() time.Time
}

// startProcs is GOMAXPROCS as the process started: the CPUs it may use (the runtime's
// default, or the GOMAXPROCS variable), before the binary gives each event loop a P of its
// own (Procs).
var startProcs = runtime.GOMAXPROCS(0)

// Procs is the GOMAXPROCS a process serving with c wants: the CPUs it started with plus
// one P per event loop. A loop holds its P nearly all the time and yields it only to the
// goroutines queued on it; without a P each, the replication feed, the disk writer, the
// upstream's dispatcher and the collector share what is left, and wait up to the
// runtime's 10 ms preemption for a turn while one of them runs. With one more P, the
// kernel shares the cores among them at its own finer grain: on 2 cores, replication lag
// p99 at P=1 went from 13 ms to 6 ms, and CL.THROTTLE over random keys at P=16 made no
// fewer requests a second.
func (c Config) Procs() int { return startProcs + c.IOThreads }

// DefaultConfig returns the configuration of a server started with no options.
func DefaultConfig() Config {
	return Config{
		Bind:                 "127.0.0.1",
		Port:                 6379,
		TCPBacklog:           511,
		Supervised:           "no",
		LogFormat:            "text",
		Dir:                  "./data",
		AppendOnly:           true,
		AppendFsync:          "everysec",
		AOFLoadTruncated:     true,
		AOFLoadBrokenMaxSize: 4096,
		HTTPLegacyHeaders:    true,
		HTTPTrustedProxies:   httpapi.DefaultProxies,
		LogLevel:             "notice",
		MaxMemoryPolicy:      "volatile-ttl",
		TLSAuthClients:       "yes",
		TCPKeepAlive:         300,
		ProtectedMode:        true,
		MaxMemorySamples:     5,
		MaxClients:           10000,
		PrefetchBatch:        defaultPrefetchBatch,
		ProtoMaxBulkLen:      resp.DefaultMaxBulk,
		Shards:               256,
		IOThreads:            max(1, startProcs),

		SlowlogLogSlowerThan:           10000,
		SlowlogMaxLen:                  128,
		LatencyTracking:                true,
		LatencyTrackingInfoPercentiles: "50 99 99.9",
		BusyReplyThreshold:             defaultBusyReplyThreshold,
		DeniedEventsPerSecond:          1000,

		HashMaxListpackEntries: 512,
		HashMaxListpackValue:   64,
		ZsetMaxListpackEntries: 128,
		ZsetMaxListpackValue:   64,
		ListMaxListpackSize:    -2,
		SetMaxIntsetEntries:    512,
		SetMaxListpackEntries:  128,
		SetMaxListpackValue:    64,

		UpstreamTimeout:       50 * time.Millisecond,
		UpstreamFallbackShare: 1,
		GlobalSyncInterval:    global.DefaultInterval,

		ReplBacklogSize:   1 << 20,
		ReplicaPriority:   100,
		MinReplicasMaxLag: 10,

		TLSAuthClientsUser: "off",
	}
}

// Validate reports the first option that is out of range, by name and value.
func (c Config) Validate() error {
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("port: %d is not between 0 and 65535", c.Port)
	}
	if err := listen.ParseBind(c.Bind); err != nil {
		return err
	}
	if c.TCPBacklog < 0 || c.TCPBacklog > math.MaxInt32 {
		return fmt.Errorf("tcp-backlog: %d is not between 0 and %d", c.TCPBacklog, math.MaxInt32)
	}
	if c.UnixSocketPerm > 0o777 {
		return fmt.Errorf("unixsocketperm: %o is not between 0 and 777", c.UnixSocketPerm)
	}
	switch strings.ToLower(c.Supervised) {
	case "no", "auto", "systemd", "":
	default:
		return fmt.Errorf("supervised: %q is not one of no, auto, systemd", c.Supervised)
	}
	switch c.LogFormat {
	case "text", "json", "":
	default:
		return fmt.Errorf("log-format: %q is not text or json", c.LogFormat)
	}
	if _, ok := logLevels[strings.ToLower(c.LogLevel)]; !ok {
		return fmt.Errorf("loglevel: %q is not one of debug, verbose, notice, warning", c.LogLevel)
	}
	if _, err := latency.ParsePercentiles(c.LatencyTrackingInfoPercentiles); err != nil {
		return fmt.Errorf("latency-tracking-info-percentiles: %q: %w", c.LatencyTrackingInfoPercentiles, err)
	}
	if c.BusyReplyThreshold < 0 {
		return fmt.Errorf("busy-reply-threshold: %d must not be negative", c.BusyReplyThreshold)
	}
	if c.MaxClients < 1 {
		return fmt.Errorf("maxclients: %d must be at least 1", c.MaxClients)
	}
	if err := c.tlsOptions().Validate(); err != nil {
		return err
	}
	if c.ACLFile != "" && len(c.Users) > 0 {
		return errors.New("aclfile: users in the config file and an ACL file at once are not valid; give one of them")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("timeout: %d must not be negative", c.Timeout)
	}
	if c.TCPKeepAlive < 0 {
		return fmt.Errorf("tcp-keepalive: %d must not be negative", c.TCPKeepAlive)
	}
	if c.ClientOutputBufferLimit != "" {
		if _, err := parseOutputLimits(c.ClientOutputBufferLimit, defaultOutputLimits); err != nil {
			return fmt.Errorf("client-output-buffer-limit: %w", err)
		}
	}
	if c.MaxMemory < 0 {
		return fmt.Errorf("maxmemory: %d must not be negative", c.MaxMemory)
	}
	if _, err := keyspace.ParsePolicy(c.MaxMemoryPolicy); err != nil {
		return fmt.Errorf("maxmemory-policy: %w", err)
	}
	if _, err := notify.Parse(c.NotifyKeyspaceEvents); err != nil {
		return fmt.Errorf("notify-keyspace-events: %q: %w", c.NotifyKeyspaceEvents, err)
	}
	if c.MaxMemorySamples < 1 || c.MaxMemorySamples > 64 {
		return fmt.Errorf("maxmemory-samples: %d is not between 1 and 64", c.MaxMemorySamples)
	}
	if c.ProtoMaxBulkLen < 1024*1024 {
		return fmt.Errorf("proto-max-bulk-len: %d must be at least 1mb", c.ProtoMaxBulkLen)
	}
	if _, err := persistence.ParseFsync(c.AppendFsync); err != nil {
		return fmt.Errorf("appendfsync: %w", err)
	}
	if c.AppendOnly && c.Dir == "" {
		return fmt.Errorf("dir: must name a directory when appendonly is yes")
	}
	if c.IOThreads < 0 || c.IOThreads > 128 {
		return fmt.Errorf("io-threads: %d is not between 0 and 128", c.IOThreads)
	}
	if c.Upstream != "" && len(c.UpstreamCluster) > 0 {
		return fmt.Errorf("upstream and upstream-cluster: give one of them")
	}
	if c.ReplicaOf != "" && (c.Upstream != "" || len(c.UpstreamCluster) > 0) {
		return fmt.Errorf("replicaof: not with upstream mode, where the upstream holds the limits' state")
	}
	if c.UpstreamTimeout <= 0 {
		return fmt.Errorf("upstream-timeout: %v must be positive", c.UpstreamTimeout)
	}
	if !(c.UpstreamFallbackShare > 0 && c.UpstreamFallbackShare <= 1) {
		return fmt.Errorf("upstream-fallback-share: %v is not in (0, 1]", c.UpstreamFallbackShare)
	}
	if err := global.CheckInterval(c.GlobalSyncInterval); err != nil {
		return err
	}
	if c.LatencyMonitorThreshold < 0 {
		return fmt.Errorf("latency-monitor-threshold: %d must not be negative", c.LatencyMonitorThreshold)
	}
	if c.SlowlogMaxLen < 0 {
		return fmt.Errorf("slowlog-max-len: %d must not be negative", c.SlowlogMaxLen)
	}
	if c.DeniedEventsPerSecond < 0 {
		return fmt.Errorf("denied-events-per-second: %d must not be negative", c.DeniedEventsPerSecond)
	}
	if c.GRPCPort < 0 || c.GRPCPort > 65535 {
		return fmt.Errorf("grpc-port: %d is not between 0 and 65535", c.GRPCPort)
	}
	if c.GRPCPort != 0 && c.RateLimitConfig == "" {
		return errors.New("grpc-port: needs ratelimit-config, the descriptors it serves")
	}
	if c.GRPCTLS && (c.TLSCertFile == "" || c.TLSKeyFile == "") {
		return errors.New("grpc-tls: needs tls-cert-file and tls-key-file")
	}
	if c.MetricsPort < 0 || c.MetricsPort > 65535 {
		return fmt.Errorf("metrics-port: %d is not between 0 and 65535", c.MetricsPort)
	}
	if c.HTTPPort < 0 || c.HTTPPort > 65535 {
		return fmt.Errorf("http-port: %d is not between 0 and 65535", c.HTTPPort)
	}
	if _, err := httpapi.ParseProxies(c.HTTPTrustedProxies); err != nil {
		return fmt.Errorf("http-trusted-proxies: %w", err)
	}
	if c.HTTPTLS && (c.TLSCertFile == "" || c.TLSKeyFile == "") {
		return errors.New("http-tls: yes needs tls-cert-file and tls-key-file")
	}
	if c.Shards < 1 || c.Shards > 1<<16 || c.Shards&(c.Shards-1) != 0 {
		return fmt.Errorf("shards: %d is not a power of two between 1 and 65536", c.Shards)
	}
	if err := validReplicaOf(c.ReplicaOf); err != nil {
		return fmt.Errorf("replicaof: %w", err)
	}
	for _, o := range []struct {
		name string
		v    int
	}{
		{"repl-backlog-size", c.ReplBacklogSize},
		{"aof-load-broken-max-size", c.AOFLoadBrokenMaxSize},
		{"replica-priority", c.ReplicaPriority},
		{"replica-announce-port", c.ReplicaAnnouncePort},
		{"min-replicas-to-write", c.MinReplicasToWrite},
		{"min-replicas-max-lag", c.MinReplicasMaxLag},
		{"hash-max-listpack-entries", c.HashMaxListpackEntries},
		{"hash-max-listpack-value", c.HashMaxListpackValue},
		{"zset-max-listpack-entries", c.ZsetMaxListpackEntries},
		{"zset-max-listpack-value", c.ZsetMaxListpackValue},
		{"set-max-intset-entries", c.SetMaxIntsetEntries},
		{"set-max-listpack-entries", c.SetMaxListpackEntries},
		{"set-max-listpack-value", c.SetMaxListpackValue},
		{"list-max-listpack-size", c.ListMaxListpackSize},
		{"list-compress-depth", c.ListCompressDepth},
		{"prefetch-batch-max-size", c.PrefetchBatch},
	} {
		if lo, hi := intRange(o.name); int64(o.v) < lo || int64(o.v) > hi {
			return fmt.Errorf("%s: %d is not between %d and %d", o.name, o.v, lo, hi)
		}
	}
	return nil
}

// intRange is the range of an integer option CONFIG SET can change, as Redis's.
func intRange(name string) (lo, hi int64) {
	switch name {
	case "maxclients":
		return 1, math.MaxUint32
	case "repl-backlog-size":
		return 1, math.MaxInt64
	case "aof-load-broken-max-size":
		return 0, math.MaxInt64
	case "maxmemory":
		return 0, math.MaxInt64
	case "maxmemory-samples":
		return 1, 64
	case "prefetch-batch-max-size":
		return 0, 128
	case "timeout", "tcp-keepalive":
		return 0, math.MaxInt32
	case "replica-announce-port":
		return 0, 65535
	case "hash-max-listpack-entries", "hash-max-listpack-value", "zset-max-listpack-entries", "zset-max-listpack-value",
		"set-max-intset-entries", "set-max-listpack-entries", "set-max-listpack-value":
		return 0, math.MaxInt64
	case "list-max-listpack-size":
		return math.MinInt32, math.MaxInt32
	}
	return 0, math.MaxInt32 // replica-priority, min-replicas-to-write, min-replicas-max-lag
}

// validReplicaOf checks a replicaof value: "host port", or "" for none.
func validReplicaOf(v string) error {
	if v == "" {
		return nil
	}
	f := strings.Fields(v)
	if len(f) != 2 {
		return fmt.Errorf("%q is not host and port", v)
	}
	if port, err := strconv.Atoi(f[1]); err != nil || port < 1 || port > 65535 {
		return fmt.Errorf("port %q is not between 1 and 65535", f[1])
	}
	return nil
}

// logLevels maps Redis's log levels onto slog's.
var logLevels = map[string]slog.Level{
	"debug":   slog.LevelDebug,
	"verbose": slog.LevelDebug,
	"notice":  slog.LevelInfo,
	"warning": slog.LevelWarn,
}
