// Command edgeload measures Envoy's rate-limit service against RESP's CHECK on one throttled:
// decisions per second and p50/p99 latency of ShouldRateLimit with one descriptor (gRPC,
// go-control-plane's client) and of CHECK of the same policy (RESP, go-redis), the same
// number of clients, random subjects, in one run, interleaved rounds.
//
//	make build && go run ./benchmarks/cmd/edgeload [-bin ./bin/throttled] [-clients 50] [-duration 3s]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	bin := flag.String("bin", "./bin/throttled", "throttled binary (make build)")
	clients := flag.Int("clients", 50, "concurrent clients on each side")
	conns := flag.Int("grpc-conns", 5, "gRPC connections the clients share (Envoy multiplexes its calls)")
	subjects := flag.Int("keys", 100000, "random subjects")
	duration := flag.Duration("duration", 3*time.Second, "time of each measurement")
	rounds := flag.Int("rounds", 2, "interleaved rounds")
	flag.Parse()
	if err := run(*bin, *clients, *conns, *subjects, *duration, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "edgeload:", err)
		os.Exit(1)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func run(bin string, clients, conns, subjects int, duration time.Duration, rounds int) error {
	dir, err := os.MkdirTemp("", "edgeload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	yaml := "domain: bench\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 100}\n"
	if err := os.WriteFile(filepath.Join(dir, "bench.yaml"), []byte(yaml), 0o644); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	gport, err := freePort()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--grpc-port", strconv.Itoa(gport), "--appendonly", "no",
		"--dir", dir, "--ratelimit-config", filepath.Join(dir, "bench.yaml"), "--loglevel", "warning")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), PoolSize: clients, Protocol: 2})
	defer rdb.Close()
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); rdb.Ping(ctx).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("throttled did not start")
		}
	}
	var stubs []rlsv3.RateLimitServiceClient
	for i := 0; i < conns; i++ {
		cc, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(gport), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer cc.Close()
		stubs = append(stubs, rlsv3.NewRateLimitServiceClient(cc))
	}
	resp := func(c int, subject string) error {
		return rdb.Do(ctx, "CHECK", "rls.bench.user", subject).Err()
	}
	grpcCall := func(c int, subject string) error {
		_, err := stubs[c%len(stubs)].ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: []*commonv3.RateLimitDescriptor{
			{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "user", Value: subject}}}}})
		return err
	}
	if _, err := measure(resp, clients, subjects, duration/4); err != nil { // warm up both sides
		return err
	}
	if _, err := measure(grpcCall, clients, subjects, duration/4); err != nil {
		return err
	}
	fmt.Printf("%d clients, %d random subjects, %s per measurement, %d gRPC connections, GOMAXPROCS of the server: its default\n\n", clients, subjects, duration, conns)
	fmt.Println("| round | RESP CHECK dec/s | p50 | p99 | gRPC ShouldRateLimit dec/s | p50 | p99 | gRPC/RESP |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for r := 1; r <= rounds; r++ {
		a, err := measure(resp, clients, subjects, duration)
		if err != nil {
			return err
		}
		b, err := measure(grpcCall, clients, subjects, duration)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %.0f | %s | %s | %.0f | %s | %s | %.2f |\n", r, a.rate, a.p50, a.p99, b.rate, b.p50, b.p99, b.rate/a.rate)
	}
	return nil
}

type result struct {
	rate     float64
	p50, p99 time.Duration
}

// measure runs call from clients goroutines for d and returns the calls per second and the
// latency percentiles.
func measure(call func(c int, subject string) error, clients, subjects int, d time.Duration) (result, error) {
	var wg sync.WaitGroup
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	stop := time.Now().Add(d)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for time.Now().Before(stop) {
				subject := "u" + strconv.Itoa(rng.IntN(subjects))
				t0 := time.Now()
				if err := call(c, subject); err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return result{}, err
		}
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return result{}, fmt.Errorf("no call finished")
	}
	return result{rate: float64(len(all)) / d.Seconds(), p50: all[len(all)/2], p99: all[len(all)*99/100]}, nil
}
