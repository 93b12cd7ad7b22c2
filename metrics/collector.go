package metrics

import (
	"runtime"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// collector turns a Snapshot into metric families at each scrape. It describes nothing in
// advance (an unchecked collector): which families exist depends on the server's mode.
type collector struct{ src Source }

func (collector) Describe(chan<- *prometheus.Desc) {}

// family is one metric family's description.
type family struct {
	name string
	desc *prometheus.Desc
	typ  prometheus.ValueType
}

func newFamily(name, help string, typ prometheus.ValueType, labels ...string) family {
	return family{"throttled_" + name, prometheus.NewDesc("throttled_"+name, help, labels, nil), typ}
}

var (
	buildInfo       = newFamily("build_info", "The server's version, the Go release it was built with and its role; always 1.", prometheus.GaugeValue, "version", "goversion", "role")
	uptime          = newFamily("uptime_seconds", "Seconds since the server started.", prometheus.GaugeValue)
	ready           = newFamily("ready", "1 when /readyz answers ready: state loaded, replica in sync, upstream reachable, as applies.", prometheus.GaugeValue)
	decisions       = newFamily("decisions_total", "Rate-limit decisions by verb and result (allowed or denied).", prometheus.CounterValue, "verb", "result")
	transports      = newFamily("transport_decisions_total", "Rate-limit decisions by transport (resp, http, grpc) and result (allowed or denied).", prometheus.CounterValue, "transport", "result")
	commands        = newFamily("commands_total", "Commands run, by command (INFO commandstats calls).", prometheus.CounterValue, "command")
	commandRejected = newFamily("command_rejected_total", "Commands refused before running (arity, NOAUTH, READONLY...), by command.", prometheus.CounterValue, "command")
	commandFailed   = newFamily("command_failed_total", "Commands that ran and replied an error, by command.", prometheus.CounterValue, "command")
	commandSeconds  = newFamily("command_duration_seconds_total", "Time spent running commands, by command; divided by commands_total, the mean latency.", prometheus.CounterValue, "command")
	commandLatency  = prometheus.NewDesc("throttled_command_duration_seconds", "Command latency, by decision verb (and CHECK) and \"other\" for the rest, from latency-tracking's histograms.", []string{"command"}, nil)
	keys            = newFamily("keys", "Keys held.", prometheus.GaugeValue)
	keysExpiring    = newFamily("keys_with_expiry", "Keys held with a time to live (every rate-limit key has one).", prometheus.GaugeValue)
	memoryUsed      = newFamily("memory_used_bytes", "Memory in use: the Go heap and the persistence engine's memory (INFO used_memory).", prometheus.GaugeValue)
	memoryResident  = newFamily("memory_resident_bytes", "The process's resident set (INFO used_memory_rss).", prometheus.GaugeValue)
	keysEvicted     = newFamily("evicted_keys_total", "Keys removed by maxmemory-policy over maxmemory (INFO evicted_keys).", prometheus.CounterValue)
	unstored        = newFamily("unstored_decisions_total", "Decisions answered over maxmemory with nothing left to evict, whose new key was not kept (INFO unstored_decisions).", prometheus.CounterValue)
	clients         = newFamily("connected_clients", "Client connections open now.", prometheus.GaugeValue)
	connections     = newFamily("connections_received_total", "Client connections accepted.", prometheus.CounterValue)
	connRejected    = newFamily("connections_rejected_total", "Client connections refused by maxclients.", prometheus.CounterValue)
	eventsPublished = newFamily("denied_events_published_total", "Deny events published on __throttled__:denied.", prometheus.CounterValue)
	eventsDropped   = newFamily("denied_events_dropped_total", "Deny events dropped by denied-events-per-second.", prometheus.CounterValue)
	topDenied       = newFamily("top_denied_key_denials", "Estimated denials of the most denied keys over the recent window (TOPDENIED), rank 1 the most.", prometheus.GaugeValue, "rank", "key")
	persistWriteOK  = newFamily("persistence_write_ok", "1 while the disk takes the writes, 0 while they fail.", prometheus.GaugeValue)
	persistLastSave = newFamily("persistence_last_save_timestamp_seconds", "Unix time of the last sync of everything written before it.", prometheus.GaugeValue)
	persistChanges  = newFamily("persistence_unsynced_changes", "Key changes not synced to disk yet.", prometheus.GaugeValue)
	persistBatches  = newFamily("persistence_batches_total", "Batches written; keys_written_total divided by it is the batch size.", prometheus.CounterValue)
	persistSyncs    = newFamily("persistence_syncs_total", "Syncs to disk.", prometheus.CounterValue)
	persistWritten  = newFamily("persistence_keys_written_total", "Key states written.", prometheus.CounterValue)
	persistDeleted  = newFamily("persistence_keys_deleted_total", "Key deletions written.", prometheus.CounterValue)
	persistRetries  = newFamily("persistence_retries_total", "Failed disk operations retried.", prometheus.CounterValue)
	persistDisk     = newFamily("persistence_disk_bytes", "The store's size on disk.", prometheus.GaugeValue)
	persistLoaded   = newFamily("persistence_loaded_keys", "Keys loaded at start.", prometheus.GaugeValue)
	persistLoadTime = newFamily("persistence_load_seconds", "How long loading took at start.", prometheus.GaugeValue)
	persistRedoRecs = newFamily("persistence_loaded_redo_records", "Writes replayed from the redo log at start: what the last stop left unbatched (INFO aof_loaded_redo_records).", prometheus.GaugeValue)
	persistRedoB    = newFamily("persistence_loaded_redo_bytes", "Bytes replayed from the redo log at start (INFO aof_loaded_redo_bytes).", prometheus.GaugeValue)
	persistDropped  = newFamily("persistence_load_dropped_bytes", "Bytes cut from the logs at start: a torn tail, or what aof-load-broken dropped (INFO aof_last_load_dropped_bytes).", prometheus.GaugeValue)
	replPrimary     = newFamily("replication_primary", "1 on a primary, 0 on a replica.", prometheus.GaugeValue)
	replOffset      = newFamily("replication_offset_bytes", "The replication stream's offset (master_repl_offset).", prometheus.GaugeValue)
	replReplicas    = newFamily("replication_connected_replicas", "Replicas connected to this primary.", prometheus.GaugeValue)
	replLag         = newFamily("replication_replica_lag_seconds", "Each replica's lag, by address.", prometheus.GaugeValue, "replica")
	replReplicaOff  = newFamily("replication_replica_offset_bytes", "Each replica's acknowledged offset, by address.", prometheus.GaugeValue, "replica")
	replLinkUp      = newFamily("replication_link_up", "A replica's link to its primary: 1 up and in sync.", prometheus.GaugeValue)
	replLastIO      = newFamily("replication_last_io_seconds", "Seconds since a replica last heard from its primary.", prometheus.GaugeValue)
	replFull        = newFamily("replication_full_syncs_total", "Full copies sent to replicas.", prometheus.CounterValue)
	replPartial     = newFamily("replication_partial_syncs_total", "Partial resyncs accepted.", prometheus.CounterValue)
	upLinkUp        = newFamily("upstream_link_up", "1 while the upstream answers.", prometheus.GaugeValue)
	upBreaker       = newFamily("upstream_breaker_state", "The upstream breaker: 1 for its state (closed, open, half-open), 0 for the others.", prometheus.GaugeValue, "state")
	upOpened        = newFamily("upstream_breaker_opened_total", "Times the upstream breaker opened.", prometheus.CounterValue)
	upRoundTrips    = newFamily("upstream_round_trips_total", "Round trips to the upstream.", prometheus.CounterValue)
	upConflicts     = newFamily("upstream_conflicts_total", "Compare-and-set conflicts with other instances.", prometheus.CounterValue)
	upFailures      = newFamily("upstream_failures_total", "Failed round trips to the upstream.", prometheus.CounterValue)
	upLocal         = newFamily("upstream_local_decisions_total", "Decisions answered locally from the cache of denied keys.", prometheus.CounterValue)
	upDegraded      = newFamily("upstream_degraded_decisions_total", "Decisions made by the local fallback while the upstream was away.", prometheus.CounterValue)
	upRTT           = newFamily("upstream_rtt_seconds", "The mean round trip to the upstream.", prometheus.GaugeValue)
	glSyncs         = newFamily("global_syncs_total", "Syncs of the GLOBAL limits' allowances through the upstream.", prometheus.CounterValue)
	glFailedSyncs   = newFamily("global_failed_syncs_total", "Syncs where a key or the heartbeat failed.", prometheus.CounterValue)
	glKeysSynced    = newFamily("global_keys_synced_total", "Keys reported to the upstream, over all syncs.", prometheus.CounterValue)
	glCommands      = newFamily("global_upstream_commands_total", "Commands the sync loop sent to the upstream.", prometheus.CounterValue)
	glFailing       = newFamily("global_failing_keys", "GLOBAL keys whose last sync failed, deciding on their last allowance.", prometheus.GaugeValue)
	glKeys          = newFamily("global_keys", "GLOBAL keys with an allowance on this instance.", prometheus.GaugeValue)
	glInstances     = newFamily("global_instances", "Instances alive at the last heartbeat.", prometheus.GaugeValue)
	glDuration      = newFamily("global_sync_duration_seconds", "How long the last sync took.", prometheus.GaugeValue)
)

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Snapshot()
	emit := func(f family, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(f.desc, f.typ, v, labels...)
	}
	emit(buildInfo, 1, s.Version, runtime.Version(), s.Role)
	emit(uptime, s.Uptime.Seconds())
	emit(ready, bool01(s.Ready))
	for _, d := range s.Decisions {
		emit(decisions, float64(d.Allowed), d.Verb, "allowed")
		emit(decisions, float64(d.Denied), d.Verb, "denied")
	}
	for _, t := range s.Transports {
		emit(transports, float64(t.Allowed), t.Transport, "allowed")
		emit(transports, float64(t.Denied), t.Transport, "denied")
	}
	for _, cmd := range s.Commands {
		emit(commands, float64(cmd.Calls), cmd.Name)
		emit(commandRejected, float64(cmd.Rejected), cmd.Name)
		emit(commandFailed, float64(cmd.Failed), cmd.Name)
		emit(commandSeconds, cmd.Time.Seconds(), cmd.Name)
	}
	for _, l := range s.Latencies {
		buckets := make(map[float64]uint64, len(LatencyBuckets))
		for i, b := range LatencyBuckets {
			buckets[b] = l.Buckets[i]
		}
		ch <- prometheus.MustNewConstHistogram(commandLatency, l.Count, l.Sum.Seconds(), buckets, l.Command)
	}
	emit(keys, float64(s.Keys))
	emit(keysExpiring, float64(s.KeysWithExpiry))
	emit(memoryUsed, float64(s.MemoryBytes))
	emit(memoryResident, float64(s.ResidentBytes))
	emit(keysEvicted, float64(s.KeysEvicted))
	emit(unstored, float64(s.UnstoredDecisions))
	emit(clients, float64(s.Connections))
	emit(connections, float64(s.ConnectionsTotal))
	emit(connRejected, float64(s.ConnectionsRejected))
	emit(eventsPublished, float64(s.DeniedEventsPublished))
	emit(eventsDropped, float64(s.DeniedEventsDropped))
	if p := s.Persistence; p != nil {
		emit(persistWriteOK, bool01(p.WriteOK))
		emit(persistLastSave, float64(p.LastSave.Unix()))
		emit(persistChanges, float64(p.Changes))
		emit(persistBatches, float64(p.Batches))
		emit(persistSyncs, float64(p.Syncs))
		emit(persistWritten, float64(p.KeysWritten))
		emit(persistDeleted, float64(p.KeysDeleted))
		emit(persistRetries, float64(p.Retries))
		emit(persistDisk, float64(p.DiskBytes))
		emit(persistLoaded, float64(p.LoadedKeys))
		emit(persistLoadTime, p.LoadTime.Seconds())
		emit(persistRedoRecs, float64(p.LoadedRedoRecords))
		emit(persistRedoB, float64(p.LoadedRedoBytes))
		emit(persistDropped, float64(p.LoadDroppedBytes))
	}
	r := s.Replication
	emit(replPrimary, bool01(r.Primary))
	emit(replOffset, float64(r.Offset))
	emit(replFull, float64(r.SyncFull))
	emit(replPartial, float64(r.PartialOK))
	if r.Primary {
		emit(replReplicas, float64(len(r.Replicas)))
		for _, rep := range r.Replicas {
			emit(replLag, rep.Lag.Seconds(), rep.Addr)
			emit(replReplicaOff, float64(rep.Offset), rep.Addr)
		}
	} else {
		emit(replLinkUp, bool01(r.LinkUp && !r.Syncing))
		emit(replLastIO, r.LastIO.Seconds())
	}
	if u := s.Upstream; u != nil {
		emit(upLinkUp, bool01(u.LinkUp))
		for _, st := range []string{"closed", "open", "half-open"} {
			emit(upBreaker, bool01(u.Breaker == st), st)
		}
		emit(upOpened, float64(u.BreakerOpened))
		emit(upRoundTrips, float64(u.RoundTrips))
		emit(upConflicts, float64(u.Conflicts))
		emit(upFailures, float64(u.Failures))
		emit(upLocal, float64(u.LocalDecisions))
		emit(upDegraded, float64(u.DegradedDecisions))
		emit(upRTT, u.AvgRTT.Seconds())
		if g := u.Global; g != nil {
			emit(glSyncs, float64(g.Syncs))
			emit(glFailedSyncs, float64(g.FailedSyncs))
			emit(glKeysSynced, float64(g.KeysSynced))
			emit(glCommands, float64(g.Commands))
			emit(glFailing, float64(g.FailingKeys))
			emit(glKeys, float64(g.Keys))
			emit(glInstances, float64(g.Instances))
			emit(glDuration, g.LastDuration.Seconds())
		}
	}
}

// topDeniedCollector exports the most denied keys that one scrape's user may see.
type topDeniedCollector struct {
	src Source
	see func(key string) bool
}

func (topDeniedCollector) Describe(chan<- *prometheus.Desc) {}

func (c topDeniedCollector) Collect(ch chan<- prometheus.Metric) {
	for i, d := range c.src.TopDenied(TopDeniedShown, c.see) {
		ch <- prometheus.MustNewConstMetric(topDenied.desc, topDenied.typ, float64(d.Count), strconv.Itoa(i+1), d.Key)
	}
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Names lists every metric family the collector can export, without the Go and process
// collectors' (go_..., process_...): what the dashboard's queries may name.
func Names() []string {
	var out []string
	for _, f := range []family{buildInfo, uptime, ready, decisions, transports, commands, commandRejected, commandFailed, commandSeconds,
		keys, keysExpiring, memoryUsed, memoryResident, clients, connections, connRejected, eventsPublished, eventsDropped,
		topDenied, persistWriteOK, persistLastSave, persistChanges, persistBatches, persistSyncs, persistWritten,
		persistDeleted, persistRetries, persistDisk, persistLoaded, persistLoadTime, persistRedoRecs, persistRedoB,
		persistDropped, replPrimary, replOffset, replReplicas,
		replLag, replReplicaOff, replLinkUp, replLastIO, replFull, replPartial, upLinkUp, upBreaker, upOpened,
		upRoundTrips, upConflicts, upFailures, upLocal, upDegraded, upRTT, glSyncs, glFailedSyncs, glKeysSynced,
		glCommands, glFailing, glKeys, glInstances, glDuration} {
		out = append(out, f.name)
	}
	// The histogram: its family, and the series a query names.
	for _, suffix := range []string{"", "_bucket", "_count", "_sum"} {
		out = append(out, "throttled_command_duration_seconds"+suffix)
	}
	return out
}
