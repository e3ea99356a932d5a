// Package guard is the self-healing of LCM's programs other than lcm-api
// (lcm-worker, lcm-agentgw, lcm-scanner): the health monitor counts every
// recovered panic and ends the program for a controlled restart. It is a
// package of its own so lcm-agent, which uses health's sd_notify only,
// links no metrics.
package guard

import (
	"context"
	"log/slog"

	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/safe"
)

// Run runs serve under the health monitor, the self-healing of the
// programs other than lcm-api (which wires its monitor itself): every
// recovered panic of the process is counted (safe.SetRecorder), and 10 in
// health.PanicWindow, or health.MaxFailStreak failed pings in a row, cancel serve's
// context; once serve has returned (a graceful stop, as on SIGTERM)
// Run returns health.ExitError(health.ExitSelfRestart) for the supervisor to
// start the program afresh. Under systemd (Type=notify) it sends READY=1
// when serve starts and WATCHDOG=1 while the pings succeed. Otherwise it
// returns serve's error.
func Run(ctx context.Context, log *slog.Logger, ping health.Pinger, serve func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exitCh := make(chan int, 1)
	mon := health.New(ping, func(code int) {
		select {
		case exitCh <- code:
		default:
		}
	}, log)
	safe.SetRecorder(mon, log)
	go safe.Supervise(ctx, "health monitor", func(ctx context.Context) error { mon.Run(ctx); return nil })
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	mon.Ready()
	select {
	case err := <-done:
		mon.Stopping()
		return err
	case code := <-exitCh:
		mon.Stopping()
		log.Error("stopping for a controlled restart", "exit_code", code)
		cancel()
		<-done
		return health.ExitError(code)
	}
}
