// Command globalbench measures what GLOBAL limits cost the upstream (issue #41): four
// throttled instances on one redis-server, each driven at full speed by redis-benchmark,
// first with GLOBAL (decided from local allowances, synced every global-sync-interval),
// then in exact upstream mode on the same Redis. It reports decisions per second against
// the commands per second Redis ran (INFO stats total_commands_processed), and their ratio:
// decisions per Redis command.
//
//	make build && go run ./benchmarks/cmd/globalbench [-bin ./bin/throttled] [-n 200000] [-out benchmarks/RESULTS.md]
//
// With -out, the figures replace the section "## Global limits" of that file.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

const section = "## Global limits: GLOBAL against exact upstream mode"

const instances = 4

type config struct {
	bin      string
	n        int
	interval string
	out      string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "./bin/throttled", "the throttled binary")
	flag.IntVar(&cfg.n, "n", 200000, "requests per instance and workload with GLOBAL (a quarter of it in exact mode)")
	flag.StringVar(&cfg.interval, "interval", "500ms", "global-sync-interval")
	flag.StringVar(&cfg.out, "out", "", "a Markdown file whose section '"+section+"' the figures replace")
	flag.Parse()
	text, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "globalbench:", err)
		os.Exit(1)
	}
	fmt.Print(text)
	if cfg.out != "" {
		if err := loadtest.WriteSection(cfg.out, section, text); err != nil {
			fmt.Fprintln(os.Stderr, "globalbench:", err)
			os.Exit(1)
		}
	}
}

// start runs a process and waits until its port answers.
func start(port int, name string, args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return cmd, nil
		}
	}
	cmd.Process.Kill()
	return nil, fmt.Errorf("%s on port %d did not start", name, port)
}

// commands reads how many commands clients sent the redis-server on port: the calls of
// INFO commandstats, less those scripts made (redis.call), which Redis counts there too.
func commands(port int) (int64, error) {
	out, err := exec.Command("redis-cli", "-p", strconv.Itoa(port), "INFO", "commandstats").Output()
	if err != nil {
		return 0, err
	}
	n := int64(0)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || inScripts[strings.TrimPrefix(name, "cmdstat_")] {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		c, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// inScripts are the commands only the scripts call.
var inScripts = map[string]bool{"get": true, "set": true, "del": true, "hget": true, "hset": true, "hdel": true,
	"hincrby": true, "hincrbyfloat": true, "hgetall": true, "pexpire": true, "zadd": true, "zremrangebyscore": true, "zrange": true}

type workload struct {
	name string
	keys int // 1: one hot key; more: redis-benchmark's -r over them
}

type result struct {
	decisions, redisCmds float64 // per second
}

func run(cfg config) (string, error) {
	rport, err := loadtest.FreePort()
	if err != nil {
		return "", err
	}
	redis, err := start(rport, "redis-server", "--port", strconv.Itoa(rport), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err != nil {
		return "", err
	}
	defer redis.Process.Kill()
	var ports []int
	for range instances {
		port, err := loadtest.FreePort()
		if err != nil {
			return "", err
		}
		dir, err := os.MkdirTemp("", "globalbench")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(dir)
		p, err := start(port, cfg.bin, "--port", strconv.Itoa(port), "--dir", dir, "--appendonly", "no",
			"--upstream", "redis://127.0.0.1:"+strconv.Itoa(rport), "--upstream-timeout", "1s", "--global-sync-interval", cfg.interval)
		if err != nil {
			return "", err
		}
		defer p.Process.Kill()
		ports = append(ports, port)
	}
	workloads := []workload{{"one hot key", 1}, {"100 hot keys", 100}}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", section)
	fmt.Fprintf(&b, "From `go run ./benchmarks/cmd/globalbench` (in `make bench`): %d throttled instances on one\n", instances)
	fmt.Fprintf(&b, "redis-server, each driven by its own redis-benchmark (-c 16 -P 16) at full speed, all on one\n")
	fmt.Fprintf(&b, "machine (%s); `global-sync-interval %s`. Redis commands are those the instances sent\n", cpuInfo(), cfg.interval)
	fmt.Fprintf(&b, "(`INFO commandstats`, less the commands the scripts ran: the sync loop's scripts and\n")
	fmt.Fprintf(&b, "heartbeats, the clock's `TIME`, exact mode's compare-and-sets). A limit of 100,000/s per key,\n")
	fmt.Fprintf(&b, "so that most decisions pass. %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	b.WriteString("| workload | mode | decisions/s (4 instances) | Redis commands/s | decisions per Redis command |\n|---|---|--:|--:|--:|\n")
	for _, w := range workloads {
		for _, global := range []bool{true, false} {
			n := cfg.n
			mode := "GLOBAL"
			if !global {
				n, mode = cfg.n/4, "exact upstream"
			}
			r, err := measure(rport, ports, w, global, n)
			if err != nil {
				return "", err
			}
			ratio := "n/a"
			if r.redisCmds > 0 {
				ratio = fmt.Sprintf("%.0f", r.decisions/r.redisCmds)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", w.name, mode, thousands(r.decisions), thousands(r.redisCmds), ratio)
		}
	}
	return b.String(), nil
}

// measure drives every instance with n requests of w and returns the rates.
func measure(rport int, ports []int, w workload, global bool, n int) (result, error) {
	key := "hot"
	if w.keys > 1 {
		key = "hot:__rand_int__"
	}
	args := []string{"THROTTLE", key, "99999", "100000", "1s"}
	if global {
		args = append(args, "GLOBAL")
	}
	before, err := commands(rport)
	if err != nil {
		return result{}, err
	}
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(ports))
	for _, port := range ports {
		wg.Go(func() {
			a := []string{"-p", strconv.Itoa(port), "-c", "16", "-P", "16", "-n", strconv.Itoa(n), "-q"}
			if w.keys > 1 {
				a = append(a, "-r", strconv.Itoa(w.keys))
			}
			if out, err := exec.Command("redis-benchmark", append(a, args...)...).CombinedOutput(); err != nil {
				errs <- fmt.Errorf("redis-benchmark: %v: %s", err, out)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began).Seconds()
	close(errs)
	if err := <-errs; err != nil {
		return result{}, err
	}
	after, err := commands(rport)
	if err != nil {
		return result{}, err
	}
	return result{decisions: float64(n*len(ports)) / elapsed, redisCmds: float64(after-before-2) / elapsed}, nil
}

func thousands(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func cpuInfo() string {
	out, _ := exec.Command("nproc").Output()
	return strings.TrimSpace(string(out)) + " CPUs"
}
