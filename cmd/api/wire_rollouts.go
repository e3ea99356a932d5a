package main

import (
	"context"
	"fmt"
	"os"

	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/rollout"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/schedule"
)

// wireRollouts builds the approvals and rollout services (before the jobs
// start: the rollout driver wakes on finished jobs through finish hooks)
// and starts the driver, which drives rollouts only while this replica
// holds the "rollouts" lease in the leader bucket (the scheduler's
// mechanism), and the approvals' expiry loop (each expiry is a
// compare-and-set, so every replica may run it).
func (a *app) wireRollouts(ctx context.Context, js *jobs.Service) (*rollout.Service, *approvals.Service) {
	ap := a.approvals
	if ap == nil {
		ap = approvals.New(a.store, a.log)
	}
	opts := rollout.Options{Log: a.log, Approvals: ap}
	host, _ := os.Hostname()
	lease, err := a.bus.NewLease(ctx, bus.BucketLeader, "rollouts", fmt.Sprintf("%s/%d", host, os.Getpid()), schedule.DefaultLeaseTTL)
	if err != nil {
		a.log.Error("rollout driver not started", "err", err)
		return rollout.New(a.store, js, opts), ap
	}
	opts.Lease = lease
	ro := rollout.New(a.store, js, opts)
	go safe.Supervise(ctx, "rollouts", ro.Run)
	go safe.Supervise(ctx, "approvals expiry", func(ctx context.Context) error { return ap.Run(ctx, 0) })
	return ro, ap
}
