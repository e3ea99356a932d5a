package backup

import (
	"context"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/schedule"
)

// catchUpGrace leaves the regular run room to start (and the scheduler's
// lease a renewal) before a missed run counts as missed.
const catchUpGrace = 10 * time.Minute

// lookBack bounds how far back the catch-up looks for the last due slot:
// a week covers every daily or weekly schedule.
const lookBack = 8 * 24 * time.Hour

var specParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// RunScheduled is the "backup" task of the schedule registry.
func (s *Service) RunScheduled(ctx context.Context) error {
	_, err := s.Create(ctx, nil, "scheduled")
	return err
}

// CatchUp is the "backup_catchup" task: when the last due run of the
// backup schedule was missed (the process was down, or the leader moved),
// it makes the backup now. A run that was attempted and failed is not
// repeated here; its error stays on the backups page.
func (s *Service) CatchUp(ctx context.Context) error {
	if s.sched == nil {
		return nil
	}
	spec, enabled, err := s.sched.Get(ctx)
	if err != nil || !enabled {
		return err
	}
	now := s.o.Now().UTC()
	due, ok := prevSlot(spec, now)
	if !ok || now.Sub(due) < catchUpGrace {
		return nil
	}
	if st := s.state(ctx); !st.LastAttempt.Before(due) {
		return nil
	}
	s.o.Log.Warn("backup missed its scheduled time: catching up", "due", due)
	_, err = s.Create(ctx, nil, "catch-up")
	return err
}

// prevSlot returns the last time at or before now that spec was due.
func prevSlot(spec string, now time.Time) (time.Time, bool) {
	sch, err := specParser.Parse(spec)
	if err != nil {
		return time.Time{}, false
	}
	var prev time.Time
	for t := sch.Next(now.Add(-lookBack)); !t.IsZero() && !t.After(now); t = sch.Next(t) {
		prev = t
	}
	return prev, !prev.IsZero()
}

// TaskSchedule is the schedule registry's "backup" task as a Schedule: a
// change is merged into the other tasks' overrides (load reads them).
func TaskSchedule(sch *schedule.Scheduler, load func(ctx context.Context) (map[string]schedule.Override, error)) Schedule {
	return taskSchedule{sch: sch, load: load}
}

type taskSchedule struct {
	sch  *schedule.Scheduler
	load func(ctx context.Context) (map[string]schedule.Override, error)
}

func (b taskSchedule) Get(ctx context.Context) (string, bool, error) {
	tasks, err := b.sch.Tasks(ctx)
	if err != nil {
		return "", false, err
	}
	for _, t := range tasks {
		if t.Name == schedule.TaskBackup {
			return t.Spec, t.Enabled, nil
		}
	}
	return "", false, domain.Unavailable("schedules_unavailable", "the backup task is not registered")
}

func (b taskSchedule) Set(ctx context.Context, actor *domain.Principal, spec string, enabled bool) error {
	m, err := b.load(ctx)
	if err != nil {
		return err
	}
	if m == nil {
		m = map[string]schedule.Override{}
	}
	m[schedule.TaskBackup] = schedule.Override{Spec: spec, Enabled: &enabled}
	_, err = b.sch.SetOverrides(ctx, actor, m)
	return err
}
