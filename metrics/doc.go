// Package metrics serves a throttled server's state over HTTP for Prometheus and people: the
// metrics at /metrics, liveness at /healthz, readiness at /readyz and a status page at /.
//
// Nothing is counted here. At each scrape the handler asks its Source for a Snapshot of the
// counters the server keeps anyway (INFO's), and turns it into metric families named
// throttled_..., so that serving metrics costs the request path nothing. The package knows no
// server: the server implements Source.
package metrics
