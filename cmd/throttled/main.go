// Command throttled is a rate-limit server that speaks the Redis protocol.
//
//	throttled [config-file] [--option value]...
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"throttled/server"
)

func main() {
	cfg, err := loadOptions(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "throttled:", err)
		os.Exit(1)
	}
	srv, err := server.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "throttled:", err)
		os.Exit(1)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		select {
		case <-signals:
			srv.Close()
		case <-srv.Done():
		}
	}()
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "throttled:", err)
		os.Exit(1)
	}
	<-srv.Done()
}
