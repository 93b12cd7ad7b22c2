package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Source is what the handler reads at each request.
type Source interface {
	// Snapshot returns the server's state now, and topDenied of the most denied keys.
	Snapshot(topDenied int) Snapshot
}

// Snapshot is the server's state at one moment.
type Snapshot struct {
	Version string
	Role    string // "master" or "slave"
	Uptime  time.Duration

	Decisions []Decisions // per rate-limit verb
	// Transports are the same decisions by the door they came in: resp, http, grpc.
	Transports []Transport
	Commands   []Command // commands that ran or were refused
	Latencies  []Latency // the decision verbs' and CHECK's, and "other" for the rest

	Keys, KeysWithExpiry int64
	MemoryBytes          uint64 // used_memory: the Go heap in use and Pebble's memory
	ResidentBytes        uint64
	// KeysEvicted are the keys maxmemory-policy removed (INFO evicted_keys);
	// UnstoredDecisions the decisions answered over maxmemory with nothing left to evict,
	// whose new state was not kept (INFO unstored_decisions).
	KeysEvicted, UnstoredDecisions int64

	Connections, ConnectionsTotal, ConnectionsRejected int64

	DeniedEventsPublished, DeniedEventsDropped int64
	TopDenied                                  []Denied
	TopDeniedWindow                            time.Duration

	Persistence *Persistence // nil with persistence off
	Replication Replication
	Upstream    *Upstream // nil unless in upstream mode

	Ready    bool   // /readyz: state loaded, replica in sync, upstream reachable, as applies
	NotReady string // why not, when not Ready
}

// Decisions counts one verb's decisions.
type Decisions struct {
	Verb            string
	Allowed, Denied int64
}

// Transport is the decisions that came in by one door.
type Transport struct {
	Transport       string // resp, http, grpc
	Allowed, Denied int64
}

// Command is one command's INFO commandstats.
type Command struct {
	Name                    string
	Calls, Rejected, Failed int64
	Time                    time.Duration // spent running it
}

// LatencyBuckets are the upper bounds, in seconds, of throttled_command_duration_seconds.
var LatencyBuckets = []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1}

// Latency is one command's latency distribution (latency-tracking), or "other" for every
// command that is not a decision.
type Latency struct {
	Command string
	Count   uint64
	Sum     time.Duration
	Buckets []uint64 // the calls at most LatencyBuckets[i], cumulative
	// P50, P99 and P999 are the percentiles from the fine histogram (within 1%), for the
	// status page.
	P50, P99, P999 time.Duration
}

// Denied is one of the most denied keys: Count denials over the window, an estimate.
type Denied struct {
	Key   string
	Count int64
}

// Persistence is the store's state.
type Persistence struct {
	WriteOK                                  bool
	LastSave                                 time.Time
	Changes                                  int64 // not synced yet
	Batches, Syncs, KeysWritten, KeysDeleted int64
	Retries                                  int64
	DiskBytes                                int64
	LoadedKeys                               int64
	LoadTime                                 time.Duration
}

// Replication is the node's side of replication.
type Replication struct {
	Primary   bool
	Offset    int64
	Replicas  []Replica // a primary's
	LinkUp    bool      // a replica's link to its primary
	Syncing   bool
	LastIO    time.Duration
	SyncFull  int64
	PartialOK int64
}

// Replica is one of a primary's replicas.
type Replica struct {
	Addr   string
	Offset int64
	Lag    time.Duration
}

// Upstream is upstream mode's state.
type Upstream struct {
	LinkUp                            bool
	Breaker                           string // closed, open or half-open
	BreakerOpened                     int64
	RoundTrips, Conflicts, Failures   int64
	LocalDecisions, DegradedDecisions int64
	AvgRTT                            time.Duration
}

// TopDeniedShown is how many of the most denied keys /metrics exposes.
const TopDeniedShown = 10

// Handler serves /metrics, /healthz, /readyz and the status page at / from src.
func Handler(src Source) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{src},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var rt rates
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		snap := src.Snapshot(0)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !snap.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not ready: " + snap.NotReady + "\n"))
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		statusPage(w, src.Snapshot(20), &rt)
	})
	return mux
}
