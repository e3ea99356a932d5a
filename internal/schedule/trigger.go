package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
)

// TaskGroupSchedules runs the group schedules (automation.Service.Tick):
// every second, so a 6-field cron fires on time; each look is one query.
const TaskGroupSchedules = "group_schedules"

// Kinds are the reference product's names of the system schedule kinds
// (POST /system/schedules/kind/:kind/trigger-now) mapped to task names.
var Kinds = map[string]string{
	"cve-scan":          TaskVulnScan,
	"alert-check":       TaskAlertCheck,
	"backup":            TaskBackup,
	"storage-sample":    TaskStorageSample,
	"storage-aggregate": TaskStorageAggregate,
	"status-recompute":  TaskStatusRecompute,
	"sync":              TaskRefreshAll,
	"group-schedules":   TaskGroupSchedules,
	"cleanup":           TaskCleanup,
	"advisories":        TaskAdvisoryPoll,
}

// OverviewItem is a task with its kind and next run.
type OverviewItem struct {
	TaskView
	Kind    string     `json:"kind"`
	NextRun *time.Time `json:"next_run,omitempty"`
}

// Overview returns every task with its next run after now (none when
// disabled).
func (s *Scheduler) Overview(ctx context.Context, now time.Time) ([]OverviewItem, error) {
	views, err := s.Tasks(ctx)
	if err != nil {
		return nil, err
	}
	kinds := map[string]string{}
	for k, n := range Kinds {
		kinds[n] = k
	}
	out := make([]OverviewItem, len(views))
	for i, v := range views {
		out[i] = OverviewItem{TaskView: v, Kind: kinds[v.Name]}
		if v.Enabled {
			if sch, err := s.parser.Parse(v.Spec); err == nil {
				n := sch.Next(now).UTC()
				out[i].NextRun = &n
			}
		}
	}
	return out, nil
}

// Trigger runs a task (by name, or by kind when byKind) now, in the
// background on this replica, whatever its schedule; it returns the
// task's name.
func (s *Scheduler) Trigger(ctx context.Context, nameOrKind string, byKind bool) (string, error) {
	name := nameOrKind
	if byKind {
		n, ok := Kinds[nameOrKind]
		if !ok {
			return "", domain.NotFound("schedule kind")
		}
		name = n
	}
	for _, t := range s.o.Tasks {
		if t.Name != name || t.Run == nil {
			continue
		}
		run := t.Run
		go func() {
			defer safe.Recover("triggered task")
			if err := run(context.WithoutCancel(ctx)); err != nil {
				s.o.Log.Error("triggered task failed", "task", name, "err", err)
			}
		}()
		return name, nil
	}
	return "", domain.NotFound(fmt.Sprintf("system schedule %q", nameOrKind))
}
