package main

import (
	"context"
	"fmt"
	"github.com/lcmproject/lcm/internal/alerts"
	"os"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/vulnsvc"
)

// wireSchedule builds the inventory and status services, registers their
// job finish hooks and starts the periodic-task scheduler, which schedules
// only while this replica holds the leader lease. The scheduler stops with
// ctx (it releases the lease; a.schedDone closes then). A scheduler that
// cannot start is logged, not fatal: the API still serves, and the
// schedules can still be read and changed (the leader applies them). It
// returns the services for the HTTP routes.
func (a *app) wireSchedule(ctx context.Context, fl *fleet.Service, js *jobs.Service, al *alerts.Service) (*inventory.Service, *status.Service, *schedule.Scheduler, *vulnsvc.Service, *automation.Service) {
	statusSvc := status.New(a.store, a.log)
	invSvc := inventory.New(a.store, inventory.Options{Log: a.log, OnIngest: statusSvc.RecomputeMany,
		Retention: time.Duration(a.cfg.StorageHistoryDays) * 24 * time.Hour})
	registerInventoryHooks(js, invSvc, statusSvc)
	vulnSvc := a.wireSecurity(ctx, fl, js, statusSvc) // after the inventory hooks: rescans see the ingested packages
	registerAlertHooks(js, al)                        // after the status hooks: the rules read what they stored
	statusSvc.OnChange(al.Trigger)                    // findings stored, contacts failed outside jobs
	a.advisories = a.wireAdvisories(vulnSvc, al)
	submitAll := func(kind domain.JobKind) func(context.Context) error {
		return func(ctx context.Context) error { _, err := fl.SubmitToAll(ctx, kind); return err }
	}
	auto := a.newAutomation(js, vulnSvc)
	statusSvc.SetNotes(auto.TieWarnings)      // group-priority ties in the health report
	go func() { <-ctx.Done(); auto.Stop() }() // runs in flight stop; the next leader resumes them
	load, save := schedule.SettingsStore(a.store, a.log)
	opts := schedule.Options{Log: a.log,
		Tasks: schedule.Registry(schedule.Hooks{AggregateStorage: invSvc.Aggregate, RecomputeStatus: statusSvc.RecomputeAll,
			RefreshAll: submitAll(domain.JobRefresh), StorageSample: submitAll(domain.JobStorageSample),
			Backup: a.backup.RunScheduled, BackupCatchUp: a.backup.CatchUp,
			AlertCheck:          func(ctx context.Context) error { _, err := al.Evaluate(ctx); return err },
			ScanVulnerabilities: vulnSvc.ScanAll,
			PollAdvisories:      func(ctx context.Context) error { _, err := a.advisories.Poll(ctx, true); return err },
			UpdateCheck:         a.updateCheckTask(),
			GroupSchedules:      auto.Tick,
			Cleanup:             a.cleanupTask()}),
		Overrides: load, SaveOverrides: save}
	host, _ := os.Hostname()
	lease, err := a.bus.NewLease(ctx, bus.BucketLeader, "scheduler", fmt.Sprintf("%s/%d", host, os.Getpid()), schedule.DefaultLeaseTTL)
	if err != nil {
		a.log.Error("scheduler not started", "err", err)
		return invSvc, statusSvc, schedule.New(opts), vulnSvc, auto
	}
	opts.Lease = lease
	sch := schedule.New(opts)
	if _, err := sch.Effective(ctx); err != nil {
		a.log.Error("scheduler not started: invalid \"schedules\" setting", "err", err)
		return invSvc, statusSvc, sch, vulnSvc, auto
	}
	done := make(chan struct{})
	go func() { defer close(done); safe.Supervise(ctx, "scheduler", sch.Run) }()
	a.schedDone = done
	return invSvc, statusSvc, sch, vulnSvc, auto
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
