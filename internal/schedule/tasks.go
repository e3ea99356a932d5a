package schedule

import (
	"context"
)

// Task names: stable, they key the "schedules" setting.
const (
	TaskStorageAggregate = "storage_aggregate"
	TaskStatusRecompute  = "status_recompute"
	TaskRefreshAll       = "refresh_all"
	TaskStorageSample    = "storage_sample"
	TaskBackup           = "backup"
	TaskBackupCatchUp    = "backup_catchup"
	TaskAlertCheck       = "alert_check"
	TaskVulnScan         = "vuln_scan"
	TaskAdvisoryPoll     = "advisory_poll"
	TaskUpdateCheck      = "update_check"
	TaskCleanup          = "cleanup"
)

// Hooks are what the tasks call. A nil hook leaves its task out.
type Hooks struct {
	// AggregateStorage folds raw storage samples into daily aggregates and
	// applies retention (inventory.Service.Aggregate).
	AggregateStorage func(ctx context.Context) (int, error)
	// RecomputeStatus recomputes every server's status
	// (status.Service.RecomputeAll).
	RecomputeStatus func(ctx context.Context) (int, error)
	// RefreshAll submits a refresh job for every server (jobs).
	RefreshAll func(ctx context.Context) error
	// StorageSample submits a storage-sample job for every server (jobs).
	StorageSample func(ctx context.Context) error
	// Backup writes an encrypted backup (backup.Service.RunScheduled); its
	// spec is the backup's time of day.
	Backup func(ctx context.Context) error
	// BackupCatchUp makes a missed backup (backup.Service.CatchUp).
	BackupCatchUp func(ctx context.Context) error
	// AlertCheck evaluates the alert rules (alerts.Service.Evaluate).
	AlertCheck func(ctx context.Context) error
	// ScanVulnerabilities scans every server against the vulnerability
	// database (vulnsvc.Service.ScanAll).
	ScanVulnerabilities func(ctx context.Context) (int, error)
	// PollAdvisories runs the early warning's advisory poll
	// (advisories.Service.Poll); it does nothing while the early warning
	// is switched off in its settings.
	PollAdvisories func(ctx context.Context) error
	// UpdateCheck asks the release feed for a newer LCM
	// (updates.Service.RunScheduled); nil without a feed or when the
	// daily check is opted out (updates.daily_check_disabled).
	UpdateCheck func(ctx context.Context) error
	// Cleanup removes history past its retention (finished jobs with their
	// output, finished schedule runs: store.PurgeHistory).
	Cleanup func(ctx context.Context) error
	// GroupSchedules fires the group schedules due now
	// (automation.Service.Tick), every second on the leader.
	GroupSchedules func(ctx context.Context) error
}

// Registry is the one list of LCM's periodic tasks with their defaults.
// Why these times: aggregation after midnight UTC folds a complete day;
// the status recompute follows it so age-based rules ("security updates
// pending > 7 days") turn without a refresh; the fleet refresh runs at a
// quiet hour and the storage sample hourly (the history's resolution).
func Registry(h Hooks) []Task {
	var out []Task
	count := func(f func(context.Context) (int, error)) func(context.Context) error {
		return func(ctx context.Context) error { _, err := f(ctx); return err }
	}
	if h.AggregateStorage != nil {
		out = append(out, Task{Name: TaskStorageAggregate, Spec: "15 0 * * *", Enabled: true, Run: count(h.AggregateStorage)})
	}
	if h.RecomputeStatus != nil {
		out = append(out, Task{Name: TaskStatusRecompute, Spec: "30 0 * * *", Enabled: true, Run: count(h.RecomputeStatus)})
	}
	if h.RefreshAll != nil {
		out = append(out, Task{Name: TaskRefreshAll, Spec: "0 2 * * *", Enabled: true, Run: h.RefreshAll})
	}
	if h.StorageSample != nil {
		out = append(out, Task{Name: TaskStorageSample, Spec: "0 * * * *", Enabled: true, Run: h.StorageSample})
	}
	// The backup runs daily at 03:00 UTC, after the storage and status
	// jobs; the catch-up looks hourly for a missed run.
	if h.Backup != nil {
		out = append(out, Task{Name: TaskBackup, Spec: "0 3 * * *", Enabled: true, Run: h.Backup})
	}
	if h.BackupCatchUp != nil {
		out = append(out, Task{Name: TaskBackupCatchUp, Spec: "40 * * * *", Enabled: true, Run: h.BackupCatchUp})
	}
	if h.AlertCheck != nil {
		// Every 30 minutes, the reference product's alert check: events
		// (failed jobs, unreachable servers) evaluate at once anyway.
		out = append(out, Task{Name: TaskAlertCheck, Spec: "*/30 * * * *", Enabled: true, Run: h.AlertCheck})
	}
	if h.ScanVulnerabilities != nil {
		// Spec (Limits): the daily vulnerability scan runs at 02:30 by default.
		out = append(out, Task{Name: TaskVulnScan, Spec: "30 2 * * *", Enabled: true, Run: count(h.ScanVulnerabilities)})
	}
	if h.PollAdvisories != nil {
		// Every 15 minutes (the reference product's early-warning
		// interval): osv.dev's export is regenerated about that often. The
		// task is enabled; the opt-in is the early warning's own setting.
		out = append(out, Task{Name: TaskAdvisoryPoll, Spec: "*/15 * * * *", Enabled: true, Run: h.PollAdvisories})
	}
	if h.UpdateCheck != nil {
		// Daily at 04:20 UTC, after the night's jobs.
		out = append(out, Task{Name: TaskUpdateCheck, Spec: "20 4 * * *", Enabled: true, Run: h.UpdateCheck})
	}
	if h.GroupSchedules != nil {
		out = append(out, Task{Name: TaskGroupSchedules, Spec: "* * * * * *", Enabled: true, Run: h.GroupSchedules})
	}
	if h.Cleanup != nil {
		// Daily at 03:40 UTC, after the night's scan and backup.
		out = append(out, Task{Name: TaskCleanup, Spec: "40 3 * * *", Enabled: true, Run: h.Cleanup})
	}
	return out
}
