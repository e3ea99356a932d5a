package main

import (
	"context"
	"time"

	"github.com/lcmproject/lcm/internal/health"
)

// notifySystemd speaks sd_notify under systemd (Type=notify, WatchdogSec in
// lcm-agent.service; a no-op without $NOTIFY_SOCKET): READY=1 once the
// configuration is loaded and the connection loop starts, then WATCHDOG=1
// twice per watchdog period until ctx ends, STOPPING=1 at the end. A
// gateway outage is not a failure of the agent (it reconnects by itself
// with backoff), so the heartbeat proves only that the process is alive and
// scheduling; a hung or stopped process misses it and systemd restarts it.
func notifySystemd(ctx context.Context) (stop func()) {
	n := health.NewNotifier()
	n.Notify("READY=1")
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		iv := n.WatchdogInterval()
		if iv <= 0 {
			<-ctx.Done()
			return
		}
		t := time.NewTicker(iv / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				n.Notify("WATCHDOG=1")
			}
		}
	}()
	return func() {
		cancel()
		<-done
		n.Notify("STOPPING=1")
	}
}
