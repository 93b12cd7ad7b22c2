// Command edgeload measures throttled's edge doors against RESP's CHECK on one throttled:
// decisions per second and p50/p99 latency of Envoy's ShouldRateLimit with one descriptor
// (gRPC, go-control-plane's client), of forward-auth GET /v1/auth/<policy> (HTTP/1.1 with
// keep-alive, as nginx's and Caddy's upstream connections) and of CHECK of the same policy
// (RESP, go-redis), the same number of clients, random subjects, in one run, interleaved
// rounds. As a deployment runs, the server has a core of its own (taskset -c 1, so its
// GOMAXPROCS is 1) and the load tool the other (CPU 0), when the machine has two or more.
//
// The gRPC clients share a few connections, as Envoy does: each Envoy worker thread keeps
// its own HTTP/2 connection to the rate-limit cluster and multiplexes its calls on it, so an
// Envoy of 4 workers is 4 connections however many requests it serves at once.
//
// With -out, the figures replace the section "## At the edge" of that file (benchmarks/
// RESULTS.md, which make bench's loadgen writes first), or are added at its end.
//
//	make build && go run ./benchmarks/cmd/edgeload [-bin ./bin/throttled] [-clients 50] [-duration 3s] [-out benchmarks/RESULTS.md]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

// section is the heading of the part of RESULTS.md edgeload writes.
const section = "## At the edge: gRPC, HTTP and RESP"

type config struct {
	bin                  string
	clients, conns, keys int
	duration             time.Duration
	rounds               int
	out                  string
	pin                  bool
	serverCPU, loadCPU   string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "./bin/throttled", "throttled binary (make build)")
	flag.IntVar(&cfg.clients, "clients", 50, "concurrent clients on each door")
	flag.IntVar(&cfg.conns, "grpc-conns", 4, "gRPC connections the clients share (an Envoy of this many workers)")
	flag.IntVar(&cfg.keys, "keys", 100000, "random subjects")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "time of each measurement")
	flag.IntVar(&cfg.rounds, "rounds", 3, "interleaved rounds")
	flag.StringVar(&cfg.out, "out", "", "a Markdown file whose section '"+section+"' the figures replace; empty for stdout only")
	flag.BoolVar(&cfg.pin, "pin", true, "server on CPU 1, the load on CPU 0 (taskset), when there are 2 CPUs or more")
	flag.Parse()
	cfg.serverCPU, cfg.loadCPU = "1", "0"
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "edgeload:", err)
		os.Exit(1)
	}
}

// door is one way in: its name and one call.
type door struct {
	name string
	call func(ctx context.Context, c int, subject string) error
}

func run(cfg config) error {
	dir, err := os.MkdirTemp("", "edgeload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	yaml := "domain: bench\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 100}\n"
	if err := os.WriteFile(filepath.Join(dir, "bench.yaml"), []byte(yaml), 0o644); err != nil {
		return err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = loadtest.FreePort(); err != nil {
			return err
		}
	}
	args := []string{cfg.bin, "--port", strconv.Itoa(ports[0]), "--grpc-port", strconv.Itoa(ports[1]),
		"--http-port", strconv.Itoa(ports[2]), "--appendonly", "no", "--dir", dir,
		"--ratelimit-config", filepath.Join(dir, "bench.yaml"), "--loglevel", "warning"}
	pinned := cfg.pin && runtime.NumCPU() >= 2
	if pinned {
		if _, err := exec.LookPath("taskset"); err != nil {
			return fmt.Errorf("taskset (util-linux) is needed to pin, or -pin=false: %w", err)
		}
		args = append([]string{"taskset", "-c", cfg.serverCPU}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if pinned {
		if out, err := exec.Command("taskset", "-a", "-c", "-p", cfg.loadCPU, strconv.Itoa(os.Getpid())).CombinedOutput(); err != nil {
			return fmt.Errorf("taskset %s: %w: %s", cfg.loadCPU, err, out)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(ports[0]), PoolSize: cfg.clients, Protocol: 2})
	defer rdb.Close()
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); rdb.Ping(ctx).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("throttled did not start")
		}
	}
	var stubs []rlsv3.RateLimitServiceClient
	for range cfg.conns {
		cc, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(ports[1]), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer cc.Close()
		stubs = append(stubs, rlsv3.NewRateLimitServiceClient(cc))
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: cfg.clients, MaxIdleConnsPerHost: cfg.clients, MaxConnsPerHost: cfg.clients}}
	authURL := "http://127.0.0.1:" + strconv.Itoa(ports[2]) + "/v1/auth/rls.bench.user?subject=header:X-User"
	doors := []door{
		{"RESP CHECK", func(ctx context.Context, c int, subject string) error {
			return rdb.Do(ctx, "CHECK", "rls.bench.user", subject).Err()
		}},
		{"gRPC ShouldRateLimit", func(ctx context.Context, c int, subject string) error {
			_, err := stubs[c%len(stubs)].ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: []*commonv3.RateLimitDescriptor{
				{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "user", Value: subject}}}}})
			return err
		}},
		{"HTTP /v1/auth", func(ctx context.Context, c int, subject string) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
			if err != nil {
				return err
			}
			req.Header.Set("X-User", subject)
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
				return fmt.Errorf("/v1/auth answered %d", resp.StatusCode)
			}
			return nil
		}},
	}
	for _, d := range doors { // warm up every side
		if _, err := measure(d.call, cfg.clients, cfg.keys, cfg.duration/4, cmd.Process.Pid); err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
	}
	res := make([][]result, len(doors))
	for range cfg.rounds {
		for i, d := range doors {
			r, err := measure(d.call, cfg.clients, cfg.keys, cfg.duration, cmd.Process.Pid)
			if err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
			res[i] = append(res[i], r)
		}
	}
	report := render(cfg, pinned, doors, res)
	fmt.Print(report)
	if cfg.out != "" {
		return loadtest.WriteSection(cfg.out, section, report)
	}
	return nil
}

// render writes the figures: per door, each round and the median, and the ratios to RESP.
func render(cfg config, pinned bool, doors []door, res [][]result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", section)
	fmt.Fprintf(&b, "`go run ./benchmarks/cmd/edgeload`: %d clients on each door, %d random subjects of one policy "+
		"(`rls.bench.user`, 100 a minute), %s per measurement, %d interleaved rounds, the doors one after another in "+
		"each round. gRPC: `ShouldRateLimit` with one descriptor, go-control-plane's client, the clients sharing %d "+
		"HTTP/2 connections (Envoy multiplexes its calls on one connection per worker: an Envoy of %d workers). "+
		"HTTP: `GET /v1/auth/<policy>` with the subject in a header, keep-alive, one connection per client (as nginx's "+
		"and Caddy's upstream pools). RESP: `CHECK` of the same policy, go-redis, one connection per client.\n\n",
		cfg.clients, cfg.keys, cfg.duration, cfg.rounds, cfg.conns, cfg.conns)
	if pinned {
		fmt.Fprintf(&b, "The server on CPU %s (taskset, so its GOMAXPROCS is 1), the load tool on CPU %s. ", cfg.serverCPU, cfg.loadCPU)
	} else {
		b.WriteString("Server and load tool on the same cores (not pinned). ")
	}
	fmt.Fprintf(&b, "Load average at the start of the run: %s. Figures from a machine shared with other work "+
		"move between runs; the ratios within one run are what compare.\n\n", loadtest.LoadAverage())
	b.WriteString("| door | decisions/s (rounds) | median | p50 | p99 | ratio to RESP | server CPU per decision | decisions per server CPU second | ratio to RESP | goal |\n|---|---|---|---|---|---|---|---|---|---|\n")
	base := median(res[0])
	baseCap := capacity(res[0])
	goals := map[string]float64{"gRPC ShouldRateLimit": 0.5, "HTTP /v1/auth": 0.3}
	for i, d := range doors {
		m := median(res[i])
		var rates []string
		for _, r := range res[i] {
			rates = append(rates, fmt.Sprintf("%.0f", r.rate))
		}
		c := capacity(res[i])
		goal := "-"
		if g, ok := goals[d.name]; ok {
			met := "met"
			if m.rate/base.rate < g || c/baseCap < g {
				met = "not met"
			}
			goal = fmt.Sprintf(">= %.1fx: %s", g, met)
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %.2f | %s | %.0f | %.2f | %s |\n", d.name, strings.Join(rates, " "), m.rate,
			m.p50.Round(time.Microsecond), m.p99.Round(time.Microsecond), m.rate/base.rate,
			(time.Second / time.Duration(c)).Round(100*time.Nanosecond), c, c/baseCap, goal)
	}
	b.WriteString("\np50 and p99 are the median round's. Neither gubernator's nor envoyproxy/ratelimit's service " +
		"runs here (no new download): see README.md, \"At the edge\", for gubernator's published figures; " +
		"envoyproxy/ratelimit publishes none.\n")
	return b.String()
}

// capacity is the decisions one server CPU second makes: the median round's CPU time per
// decision, turned over. Unlike the rate it does not depend on whether the load tool keeps
// the server busy, nor on what else runs on the server's core.
func capacity(rs []result) float64 {
	var per []time.Duration
	for _, r := range rs {
		per = append(per, r.cpuPer)
	}
	slices.Sort(per)
	if per[len(per)/2] <= 0 {
		return 0
	}
	return float64(time.Second) / float64(per[len(per)/2])
}

// median is the round with the median rate.
func median(rs []result) result {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b result) int {
		switch {
		case a.rate < b.rate:
			return -1
		case a.rate > b.rate:
			return 1
		}
		return 0
	})
	return s[len(s)/2]
}

type result struct {
	rate     float64
	p50, p99 time.Duration
	cpuPer   time.Duration // the server's CPU time per decision
}

// cpuTime is the CPU time process pid has run, every thread's, from /proc's schedstat
// (nanoseconds); 0 where there is none.
func cpuTime(pid int) time.Duration {
	dirs, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	var sum int64
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread gone
		}
		if v, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64); err == nil {
			sum += v
		}
	}
	return time.Duration(sum)
}

// measure runs call from clients goroutines for d and returns the calls per second and the
// latency percentiles.
func measure(call func(ctx context.Context, c int, subject string) error, clients, subjects int, d time.Duration, pid int) (result, error) {
	var wg sync.WaitGroup
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	ctx := context.Background()
	cpu0 := cpuTime(pid)
	start := time.Now()
	stop := start.Add(d)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			lat[c] = make([]time.Duration, 0, 4096)
			for time.Now().Before(stop) {
				subject := "u" + strconv.Itoa(rng.IntN(subjects))
				t0 := time.Now()
				if err := call(ctx, c, subject); err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime(pid) - cpu0
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return result{}, fmt.Errorf("no call finished")
	}
	return result{rate: float64(len(all)) / elapsed.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100],
		cpuPer: cpu / time.Duration(len(all))}, nil
}
