package main

import (
	"context"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/config"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/jobs/runner"
	"github.com/lcmproject/lcm/internal/safe"
)

// wireJobs builds the jobs and fleet services. Nothing runs yet: the
// finish hooks (inventory, status) and the demo simulator are registered
// on the jobs service first, then startJobs starts it, so no job result
// waiting in the stream at a restart is finished without its hooks.
func (a *app) wireJobs() (*fleet.Service, *jobs.Service) {
	js := jobs.New(a.store, a.bus, a.log)
	return fleet.New(a.store, js, a.log), js
}

// startJobs starts the control-plane side of jobs (credential responder,
// ingest, reaper) and, unless worker.disabled, an in-process worker that
// speaks the same NATS protocol as lcm-worker. Both stop with ctx.
func (a *app) startJobs(ctx context.Context, js *jobs.Service) error {
	go safe.Supervise(ctx, "jobs control plane", js.Run)
	if a.cfg.Worker.Disabled {
		a.log.Info("in-process worker disabled; jobs need an lcm-worker")
		return nil
	}
	w, err := runner.New(runner.Config{Bus: a.bus, Segments: a.cfg.Worker.Segments, Concurrency: a.cfg.Worker.Concurrency, Log: a.log,
		OnPoolDrained: func() { returnMemory(a.log) }})
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { defer close(done); safe.Supervise(ctx, "in-process worker", w.Run) }()
	a.workerDone = done
	return nil
}

// natsUsers are the accounts of a listening embedded NATS: lcm-api's own
// (full rights), one least-privilege account per remote worker and one per
// remote agent gateway and one per remote scanner.
func natsUsers(c config.NATSConfig) []bus.User {
	if c.Listen == "" {
		return nil
	}
	users := []bus.User{bus.FullUser(c.User, c.Password)}
	for _, w := range c.Workers {
		users = append(users, bus.WorkerUser(w.User, w.Password, w.Segments))
	}
	for _, g := range c.AgentGateways {
		users = append(users, bus.AgentGatewayUser(g.User, g.Password))
	}
	for _, s := range c.Scanners {
		users = append(users, bus.ScannerUser(s.User, s.Password))
	}
	return users
}
