package metrics

import (
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/throttledhq/throttled/httpapi"
)

// Source is what the handler reads at each request.
type Source interface {
	// Snapshot returns the server's state now, without its most denied keys.
	Snapshot() Snapshot
	// TopDenied returns the n most denied keys that see allows, most first (see nil:
	// every key).
	TopDenied(n int, see func(key string) bool) []Denied
}

// Options say who sees what the handler lists of keys.
type Options struct {
	// Keys authenticates a request for the keys it would see: the status page's most denied
	// keys, and /metrics's throttled_top_denied_key_denials. It returns see, which reports
	// whether the request's user may see a key (nil: every key), or an error that wraps
	// httpapi.ErrForbidden (403) or anything else (401). Nil: everyone sees every key.
	Keys func(r *http.Request) (see func(key string) bool, err error)
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
	TopDenied                                  []Denied // the status page's, from Source.TopDenied
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
	// LoadedRedoRecords and LoadedRedoBytes were replayed from the redo log at start (what
	// the last stop left unbatched); LoadDroppedBytes were cut from the logs (a torn tail, or
	// with aof-load-broken what followed a bad record).
	LoadedRedoRecords, LoadedRedoBytes, LoadDroppedBytes int64
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
	Global                            *Global // GLOBAL's sync loop
}

// Global is GLOBAL's sync loop, in upstream mode.
type Global struct {
	Syncs, FailedSyncs, KeysSynced, Commands int64 // since start
	FailingKeys, Keys, Instances             int64 // now
	LastDuration                             time.Duration
}

// TopDeniedShown is how many of the most denied keys /metrics exposes.
const TopDeniedShown = 10

// topDeniedPage is how many the status page lists.
const topDeniedPage = 20

// Handler serves /metrics, /healthz, /readyz and the status page at / from src.
//
// The keys are what an attacker would like to read (the subjects a limit guards: addresses,
// API keys), so they are shown only to a user opt.Keys lets see them: the status page
// answers 401 or 403 to anyone else. /metrics, /healthz and /readyz stay open, for probes
// and scrapers that hold no credentials; /metrics carries the most denied keys only for a
// scrape whose user may see them, and only those keys.
func Handler(src Source, opt Options) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{src},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	keys := opt.Keys
	if keys == nil {
		keys = func(*http.Request) (func(string) bool, error) { return nil, nil }
	}
	var rt rates
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		var g prometheus.Gatherer = reg
		if see, err := keys(r); err == nil {
			top := prometheus.NewRegistry() // of this request's user: a scrape is rare enough
			top.MustRegister(topDeniedCollector{src, see})
			g = prometheus.Gatherers{reg, top}
		}
		promhttp.HandlerFor(g, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		snap := src.Snapshot()
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
		see, err := keys(r)
		if err != nil {
			refuse(w, err)
			return
		}
		snap := src.Snapshot()
		snap.TopDenied = src.TopDenied(topDeniedPage, see)
		statusPage(w, snap, &rt)
	})
	return mux
}

// refuse answers a request opt.Keys refused: 403 for a user that may not see keys, 401
// (asking for Basic credentials, which a browser prompts for) otherwise.
func refuse(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if errors.Is(err, httpapi.ErrForbidden) {
		w.WriteHeader(http.StatusForbidden)
	} else {
		w.Header().Set("WWW-Authenticate", `Basic realm="throttled"`)
		w.WriteHeader(http.StatusUnauthorized)
	}
	w.Write([]byte(err.Error() + "\n"))
}
