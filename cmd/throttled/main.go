// Command throttled is a rate-limit server that speaks the Redis protocol.
//
//	throttled [config-file | -] [--option value]...
//	throttled --help | --version
package main

//go:generate go test -run ^TestSampleConfig$ -update .

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	_ "time/tzdata" // WINDOW's TZ: the container image has no zoneinfo

	"github.com/throttledhq/throttled/server"
)

func main() {
	if informational(os.Args[1:], os.Stdout) {
		return
	}
	if os.Getenv("GOGC") == "" {
		// The keyspace holds almost no pointers, so a collection costs little:
		// keep the heap close to what is live (about 10% fewer bytes per key).
		debug.SetGCPercent(25)
	}
	cfg, err := loadOptions(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "throttled:", err)
		os.Exit(1)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(cfg.Procs())
	}
	srv, err := server.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "throttled:", err)
		os.Exit(1)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-signals:
				srv.Close()
				return
			case <-hup:
				srv.ReloadPolicies()        // it logs what it did
				srv.ReloadRateLimitConfig() // and so does it
			case <-srv.Done():
				return
			}
		}
	}()
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "throttled:", err)
		srv.Close()
		os.Exit(1)
	}
	// Serve returned because the server is stopping: wait until the state is saved.
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "throttled:", err)
		os.Exit(1)
	}
}
