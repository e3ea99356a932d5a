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
	return out
}
