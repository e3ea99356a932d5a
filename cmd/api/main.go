// Command lcm-api is LCM's control plane: REST API and web UI, scheduler,
// job ledger and ingest. With no NATS URL configured it runs all-in-one: an
// embedded NATS JetStream and an in-process worker, on an embedded SQLite
// database.
//
// Usage:
//
//	lcm-api [-config path] [-data-dir dir] [--dev] [--demo] [-debug] [-version]
//	lcm-api rotate-db-key [-config path] [-data-dir dir]
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var ec exitCode
	switch {
	case err == nil:
	case errors.As(err, &ec):
		os.Exit(int(ec))
	default:
		fmt.Fprintln(os.Stderr, "lcm-api:", err)
		os.Exit(1)
	}
}

// exitCode ends the process with a specific code (e.g. 70 for a controlled
// restart) without printing an error.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit code %d", int(e)) }
