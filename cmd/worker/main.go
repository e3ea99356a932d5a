// Command lcm-worker executes LCM jobs on servers over SSH. It connects to
// the control plane's NATS (an external cluster, or the embedded server of
// an all-in-one lcm-api with nats.listen set), consumes the jobs of its
// segments and streams their console output back. It holds no database, no
// master key and no stored credentials: each job's credentials arrive
// sealed to the worker's own key, per job, and stay in memory.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/lcmproject/lcm/internal/health"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var ec health.ExitError
	if errors.As(err, &ec) {
		os.Exit(int(ec))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lcm-worker:", err)
		os.Exit(1)
	}
}
