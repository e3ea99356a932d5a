package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/status"
)

// wireSchedule builds the inventory and status services, registers their
// job finish hooks and starts the periodic-task scheduler, which schedules
// only while this replica holds the leader lease. The scheduler stops with
// ctx (it releases the lease; a.schedDone closes then). A scheduler that
// cannot start is logged, not fatal: the API still serves, and the
// schedules can still be read and changed (the leader applies them). It
// returns the services for the HTTP routes.
func (a *app) wireSchedule(ctx context.Context, fl *fleet.Service, js *jobs.Service) (*inventory.Service, *status.Service, *schedule.Scheduler) {
	statusSvc := status.New(a.store, a.log)
	invSvc := inventory.New(a.store, inventory.Options{Log: a.log, OnIngest: statusSvc.RecomputeMany,
		Retention: time.Duration(a.cfg.StorageHistoryDays) * 24 * time.Hour})
	registerInventoryHooks(js, invSvc, statusSvc)
	submitAll := func(kind domain.JobKind) func(context.Context) error {
		return func(ctx context.Context) error { _, err := fl.SubmitToAll(ctx, kind); return err }
	}
	load, save := schedule.SettingsStore(a.store, a.log)
	opts := schedule.Options{Log: a.log,
		Tasks: schedule.Registry(schedule.Hooks{AggregateStorage: invSvc.Aggregate, RecomputeStatus: statusSvc.RecomputeAll,
			RefreshAll: submitAll(domain.JobRefresh), StorageSample: submitAll(domain.JobStorageSample)}),
		Overrides: load, SaveOverrides: save}
	host, _ := os.Hostname()
	lease, err := a.bus.NewLease(ctx, bus.BucketLeader, "scheduler", fmt.Sprintf("%s/%d", host, os.Getpid()), schedule.DefaultLeaseTTL)
	if err != nil {
		a.log.Error("scheduler not started", "err", err)
		return invSvc, statusSvc, schedule.New(opts)
	}
	opts.Lease = lease
	sch := schedule.New(opts)
	if _, err := sch.Effective(ctx); err != nil {
		a.log.Error("scheduler not started: invalid \"schedules\" setting", "err", err)
		return invSvc, statusSvc, sch
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = sch.Run(ctx) }()
	a.schedDone = done
	return invSvc, statusSvc, sch
}

// registerInventoryHooks connects job results to the inventory and the
// traffic light: refresh-carrying jobs (refresh, package action, security
// upgrade, reboot) are ingested (facts, packages, storage sample), a
// storage sample is stored, and every finished job updates the server's
// contact record and status. They run after fleet's
// hooks (registered first), so the status sees the facts fleet recorded.
// The ingest and the status hook are batch hooks: the jobs that one
// ingest batch finished are stored together (issue 5's refresh budget).
func registerInventoryHooks(js *jobs.Service, inv *inventory.Service, st *status.Service) {
	for _, k := range []domain.JobKind{domain.JobRefresh, domain.JobPackageAction, domain.JobUpgradeSecurity, domain.JobReboot} {
		js.OnFinishBatch(k, inv.IngestJobs)
	}
	js.OnFinish(domain.JobStorageSample, func(ctx context.Context, job domain.Job) error {
		if len(job.Data) == 0 {
			return nil
		}
		d, err := actions.DecodeRefresh(job.Data)
		if err != nil {
			return err
		}
		at := job.CreatedAt
		if job.FinishedAt != nil {
			at = *job.FinishedAt
		}
		return inv.RecordStorage(ctx, job.ServerID, d.Facts.Filesystems, at)
	})
	for _, k := range domain.JobKinds {
		js.OnFinishBatch(k, func(ctx context.Context, jobs []domain.Job) []error { return jobsFinished(ctx, st, jobs) })
	}
}

// jobsFinished records the contact outcome and recomputes the status of
// the servers of finished jobs, except a successful decommission's (fleet's
// hook deleted the server).
func jobsFinished(ctx context.Context, st *status.Service, jobs []domain.Job) []error {
	errs := make([]error, len(jobs))
	var todo []domain.Job
	var idx []int
	for i, j := range jobs {
		if j.Kind == domain.JobDecommission && j.Status == domain.JobSuccess {
			continue
		}
		todo = append(todo, j)
		idx = append(idx, i)
	}
	for k, err := range st.JobsFinished(ctx, todo) {
		errs[idx[k]] = err
	}
	return errs
}
