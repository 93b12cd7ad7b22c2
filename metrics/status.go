package metrics

import (
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// The status page: plain HTML that refreshes itself, with no external assets. Decision rates
// are the difference between this request's snapshot and the previous one's.

// rates remembers a snapshot's decision counts to give rates per second. The baseline moves
// on once it is rateSpan old, so that every viewer sees rates over the last rateSpan to twice
// that, however many there are.
type rates struct {
	mu   sync.Mutex // guards last, at
	last map[string][2]int64
	at   time.Time
}

const rateSpan = 2 * time.Second

// verbRate is a verb's line on the page.
type verbRate struct {
	Verb                    string
	Allowed, Denied         int64
	AllowedRate, DeniedRate float64
}

func (r *rates) update(s Snapshot, now time.Time) []verbRate {
	r.mu.Lock()
	defer r.mu.Unlock()
	dt := now.Sub(r.at).Seconds()
	out := make([]verbRate, 0, len(s.Decisions))
	next := make(map[string][2]int64, len(s.Decisions))
	for _, d := range s.Decisions {
		v := verbRate{Verb: d.Verb, Allowed: d.Allowed, Denied: d.Denied}
		if prev, ok := r.last[d.Verb]; ok && dt > 0 {
			v.AllowedRate = float64(max(0, d.Allowed-prev[0])) / dt
			v.DeniedRate = float64(max(0, d.Denied-prev[1])) / dt
		}
		next[d.Verb] = [2]int64{d.Allowed, d.Denied}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Verb < out[j].Verb })
	if r.last == nil || now.Sub(r.at) >= rateSpan {
		r.last, r.at = next, now
	}
	return out
}

var page = template.Must(template.New("status").Funcs(template.FuncMap{
	"rate":    func(f float64) string { return template.HTMLEscapeString(formatRate(f)) },
	"bytes":   humanBytes,
	"bytes64": func(n int64) string { return humanBytes(uint64(max(n, 0))) },
	"dur":     func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"window":  func(d time.Duration) string { return d.String() + " to " + (2 * d).String() },
	"ts": func(t time.Time) string {
		if t.IsZero() || t.Unix() == 0 {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>throttled status</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:20px;margin:0 0 4px} h2{font-size:15px;margin:20px 0 6px}
.meta{color:#666} table{border-collapse:collapse;background:#fff;min-width:420px}
td,th{border:1px solid #ddd;padding:4px 10px;text-align:right} th{background:#f0f0f0}
td:first-child,th:first-child{text-align:left} .ok{color:#1a7f37;font-weight:600} .bad{color:#c62828;font-weight:600}
.grid{display:flex;flex-wrap:wrap;gap:24px}
</style></head><body>
<h1>throttled {{.S.Version}}</h1>
<div class="meta">role {{.S.Role}} · up {{dur .S.Uptime}} · {{if .S.Ready}}<span class="ok">ready</span>{{else}}<span class="bad">not ready: {{.S.NotReady}}</span>{{end}}
· {{.S.Connections}} clients · {{.S.Keys}} keys · memory {{bytes .S.MemoryBytes}}</div>
<div class="grid"><div>
<h2>Decisions</h2>
<table><tr><th>verb</th><th>allowed/s</th><th>denied/s</th><th>allowed</th><th>denied</th></tr>
{{range .Verbs}}<tr><td>{{.Verb}}</td><td>{{rate .AllowedRate}}</td><td>{{rate .DeniedRate}}</td><td>{{.Allowed}}</td><td>{{.Denied}}</td></tr>
{{end}}</table>
<div class="meta">deny events published {{.S.DeniedEventsPublished}}, dropped {{.S.DeniedEventsDropped}}</div>
<h2>Latency</h2>
<table><tr><th>command</th><th>calls</th><th>p50</th><th>p99</th><th>p99.9</th></tr>
{{range .S.Latencies}}<tr><td>{{.Command}}</td><td>{{.Count}}</td><td>{{.P50}}</td><td>{{.P99}}</td><td>{{.P999}}</td></tr>
{{else}}<tr><td colspan="5">none (latency-tracking no, or no calls yet)</td></tr>
{{end}}</table>
</div><div>
<h2>Most denied keys, last {{window .S.TopDeniedWindow}}</h2>
<table><tr><th>key</th><th>denials</th></tr>
{{range .S.TopDenied}}<tr><td>{{.Key}}</td><td>{{.Count}}</td></tr>
{{else}}<tr><td colspan="2">none</td></tr>
{{end}}</table>
</div></div>
<h2>Persistence</h2>
{{with .S.Persistence}}<table>
<tr><td>disk</td><td>{{if .WriteOK}}<span class="ok">ok</span>{{else}}<span class="bad">failing</span>{{end}}</td></tr>
<tr><td>last save</td><td>{{ts .LastSave}}</td></tr>
<tr><td>unsynced changes</td><td>{{.Changes}}</td></tr>
<tr><td>batches / keys written</td><td>{{.Batches}} / {{.KeysWritten}}</td></tr>
<tr><td>size on disk</td><td>{{bytes64 .DiskBytes}}</td></tr>
</table>{{else}}<div class="meta">off (appendonly no)</div>{{end}}
<h2>Replication</h2>
{{with .S.Replication}}{{if .Primary}}<table><tr><th>replica</th><th>offset</th><th>lag</th></tr>
{{range .Replicas}}<tr><td>{{.Addr}}</td><td>{{.Offset}}</td><td>{{dur .Lag}}</td></tr>
{{else}}<tr><td colspan="3">no replicas · offset {{.Offset}}</td></tr>{{end}}</table>
{{else}}<table><tr><td>link to primary</td><td>{{if and .LinkUp (not .Syncing)}}<span class="ok">up</span>{{else}}<span class="bad">{{if .Syncing}}syncing{{else}}down{{end}}</span>{{end}}</td></tr>
<tr><td>last I/O</td><td>{{dur .LastIO}} ago</td></tr></table>{{end}}{{end}}
<h2>Upstream</h2>
{{with .S.Upstream}}<table>
<tr><td>link</td><td>{{if .LinkUp}}<span class="ok">up</span>{{else}}<span class="bad">down</span>{{end}}</td></tr>
<tr><td>breaker</td><td>{{if eq .Breaker "closed"}}<span class="ok">closed</span>{{else}}<span class="bad">{{.Breaker}}</span>{{end}}</td></tr>
<tr><td>mean round trip</td><td>{{dur .AvgRTT}}</td></tr>
<tr><td>degraded decisions</td><td>{{.DegradedDecisions}}</td></tr>
</table>{{else}}<div class="meta">none: limits are kept here</div>{{end}}
</body></html>
`))

func statusPage(w http.ResponseWriter, s Snapshot, r *rates) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	page.Execute(w, struct {
		S     Snapshot
		Verbs []verbRate
	}{s, r.update(s, time.Now())})
}

func formatRate(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 2, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 2, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 2, 64) + " KiB"
	}
	return strconv.FormatUint(n, 10) + " B"
}
