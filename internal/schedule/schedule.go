// Package schedule runs LCM's periodic tasks: one registry of tasks with
// name, default cron spec and enabled flag, overridable through the
// "schedules" setting, executed by robfig/cron only on the replica that
// holds the scheduler lease (bus.BucketLeader, key "scheduler").
//
//	follower ──Acquire ok──▶ leader (cron running, Renew every RenewEvery)
//	    ▲                        │
//	    └──Renew lost / error────┘  (cron stopped, running tasks' ctx cancelled)
package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
)

// Default lease timing. RenewEvery is a third of the BucketLeader TTL
// (30 s), so two missed renewals still leave the lease alive; a dead
// leader's lease expires after LeaseTTL and a follower polling every
// RenewEvery takes over within LeaseTTL + RenewEvery.
const (
	DefaultRenewEvery = 10 * time.Second
	DefaultLeaseTTL   = 30 * time.Second
)

// SettingKey is the settings row overriding specs and enabled flags:
// {"<task>": {"spec": "0 3 * * *", "enabled": false}, …}.
const SettingKey = "schedules"

// Task is one periodic task.
type Task struct {
	Name    string
	Spec    string // cron: 5 fields, optional leading seconds, or @daily
	Enabled bool
	Run     func(ctx context.Context) error
}

// Override changes a task's spec or enabled flag.
type Override struct {
	Spec    string `json:"spec,omitempty"`
	Enabled *bool  `json:"enabled,omitempty"`
}

// Lease is the leader lease (bus.Lease).
type Lease interface {
	Acquire(ctx context.Context) (bool, error)
	Renew(ctx context.Context) (bool, error)
	Release(ctx context.Context) error
}

// Options configure a Scheduler.
type Options struct {
	Lease Lease
	Tasks []Task
	// Overrides reads the "schedules" setting (nil: defaults only).
	Overrides func(ctx context.Context) (map[string]Override, error)
	// SaveOverrides replaces the "schedules" setting on behalf of actor
	// (SetOverrides; nil: the schedules cannot be changed at run time).
	SaveOverrides func(ctx context.Context, actor *domain.Principal, m map[string]Override) error
	RenewEvery    time.Duration // 0 = DefaultRenewEvery
	Log           *slog.Logger
}

// Scheduler owns the cron runner; Run blocks until ctx ends.
type Scheduler struct {
	o      Options
	parser cron.Parser
	// reload wakes the leader after SetOverrides on this replica; a leader
	// elsewhere sees the change at its next renewal (RenewEvery).
	reload chan struct{}
}

// New returns a scheduler.
func New(o Options) *Scheduler {
	if o.RenewEvery <= 0 {
		o.RenewEvery = DefaultRenewEvery
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Scheduler{o: o, reload: make(chan struct{}, 1), parser: cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom |
		cron.Month | cron.Dow | cron.Descriptor)}
}

// TaskView is a task as operators see and change it: its effective spec
// and flag next to the defaults.
type TaskView struct {
	Name           string `json:"name"`
	Spec           string `json:"spec"`
	Enabled        bool   `json:"enabled"`
	DefaultSpec    string `json:"default_spec"`
	DefaultEnabled bool   `json:"default_enabled"`
}

// Tasks returns every task with its effective spec and flag.
func (s *Scheduler) Tasks(ctx context.Context) ([]TaskView, error) {
	eff, err := s.Effective(ctx)
	if err != nil {
		return nil, err
	}
	return s.views(eff), nil
}

func (s *Scheduler) views(eff []Task) []TaskView {
	out := make([]TaskView, len(eff))
	for i, t := range eff {
		d := s.o.Tasks[i] // Effective keeps the registry's order
		out[i] = TaskView{Name: t.Name, Spec: t.Spec, Enabled: t.Enabled, DefaultSpec: d.Spec, DefaultEnabled: d.Enabled}
	}
	return out
}

// SetOverrides validates and stores the overrides (replacing the earlier
// ones: a task left out runs on its defaults) and has the leader schedule
// by them. Unknown tasks and invalid specs are refused with
// domain.ErrInvalid and nothing is stored.
func (s *Scheduler) SetOverrides(ctx context.Context, actor *domain.Principal, m map[string]Override) ([]TaskView, error) {
	if s.o.SaveOverrides == nil {
		return nil, domain.Unavailable("schedules_read_only", "the schedules cannot be changed on this replica")
	}
	eff, err := s.apply(m)
	if err != nil {
		return nil, err
	}
	if err := s.o.SaveOverrides(ctx, actor, m); err != nil {
		return nil, err
	}
	select {
	case s.reload <- struct{}{}:
	default:
	}
	return s.views(eff), nil
}

// apply returns the tasks with m applied, each spec parsed.
func (s *Scheduler) apply(m map[string]Override) ([]Task, error) {
	known := make(map[string]bool, len(s.o.Tasks))
	for _, t := range s.o.Tasks {
		known[t.Name] = true
	}
	for name := range m {
		if !known[name] {
			return nil, domain.Invalid("unknown_task", fmt.Sprintf("there is no periodic task %q", name))
		}
	}
	out := make([]Task, 0, len(s.o.Tasks))
	for _, t := range s.o.Tasks {
		if o, ok := m[t.Name]; ok {
			if o.Spec != "" {
				t.Spec = o.Spec
			}
			if o.Enabled != nil {
				t.Enabled = *o.Enabled
			}
		}
		if _, err := s.parser.Parse(t.Spec); err != nil {
			return nil, domain.Invalid("invalid_spec", fmt.Sprintf("task %s: %q is not a cron spec (5 fields, an optional leading seconds field, or @daily/@hourly/@every 1h): %v", t.Name, t.Spec, err))
		}
		out = append(out, t)
	}
	return out, nil
}

// Effective returns the tasks with the stored overrides applied and
// validated, in the registry's order. A stored override of a task that no
// longer exists is ignored.
func (s *Scheduler) Effective(ctx context.Context) ([]Task, error) {
	ov := map[string]Override{}
	if s.o.Overrides != nil {
		m, err := s.o.Overrides(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range s.o.Tasks {
			if o, ok := m[t.Name]; ok {
				ov[t.Name] = o
			}
		}
	}
	out, err := s.apply(ov)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	return out, nil
}

// Run campaigns for the lease every RenewEvery and schedules the tasks
// while holding it. It releases the lease and returns when ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	tick := time.NewTicker(s.o.RenewEvery)
	defer tick.Stop()
	var lead *leadership
	defer func() {
		if lead != nil {
			lead.stop()
		}
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.o.Lease.Release(rctx)
	}()
	for {
		var (
			ok  bool
			err error
		)
		if lead == nil {
			ok, err = s.o.Lease.Acquire(ctx)
		} else {
			ok, err = s.o.Lease.Renew(ctx)
		}
		if err != nil && ctx.Err() == nil {
			s.o.Log.Warn("scheduler lease", "err", err)
		}
		switch {
		case ok && lead == nil:
			l, err := s.lead(ctx)
			if err != nil {
				s.o.Log.Error("scheduler start", "err", err)
				_ = s.o.Lease.Release(ctx)
				break
			}
			lead = l
			s.o.Log.Info("scheduler leader: scheduling")
		case !ok && lead != nil:
			lead.stop()
			lead = nil
			s.o.Log.Warn("scheduler lease lost: stopped scheduling")
		case ok && lead != nil:
			lead = s.relead(ctx, lead)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-s.reload:
			if lead != nil {
				lead = s.relead(ctx, lead)
			}
		}
	}
}

// relead restarts the leader's cron runner when the effective schedule
// changed (a settings change here or on another replica); an unreadable
// or invalid setting keeps the running schedule.
func (s *Scheduler) relead(ctx context.Context, l *leadership) *leadership {
	tasks, err := s.Effective(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.o.Log.Warn("scheduler: schedules unreadable, keeping the running ones", "err", err)
		}
		return l
	}
	if slices.EqualFunc(tasks, l.tasks, sameSchedule) {
		return l
	}
	l.stop()
	nl, err := s.lead(ctx)
	if err != nil {
		s.o.Log.Error("scheduler restart", "err", err)
		return nil // campaigns again at the next tick (Renew keeps the lease)
	}
	s.o.Log.Info("scheduler: schedules changed, rescheduled")
	return nl
}

func sameSchedule(a, b Task) bool {
	return a.Name == b.Name && a.Spec == b.Spec && a.Enabled == b.Enabled
}

// leadership is one term as leader: a cron runner and the context its
// task runs hang off.
type leadership struct {
	c      *cron.Cron
	cancel context.CancelFunc
	wg     *sync.WaitGroup
	tasks  []Task // what it schedules
}

func (l *leadership) stop() {
	l.cancel()
	<-l.c.Stop().Done()
	l.wg.Wait()
}

func (s *Scheduler) lead(ctx context.Context) (*leadership, error) {
	tasks, err := s.Effective(ctx)
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithCancel(ctx)
	c := cron.New(cron.WithParser(s.parser), cron.WithChain(cron.SkipIfStillRunning(cron.DiscardLogger), recoverJobs))
	wg := &sync.WaitGroup{}
	for _, t := range tasks {
		if !t.Enabled || t.Run == nil {
			continue
		}
		t := t
		if _, err := c.AddFunc(t.Spec, func() {
			wg.Add(1)
			defer wg.Done()
			if tctx.Err() != nil {
				return
			}
			start := time.Now()
			if err := t.Run(tctx); err != nil {
				s.o.Log.Error("scheduled task failed", "task", t.Name, "err", err)
				return
			}
			s.o.Log.Debug("scheduled task done", "task", t.Name, "took", time.Since(start))
		}); err != nil {
			cancel()
			return nil, fmt.Errorf("schedule: task %s: %w", t.Name, err)
		}
	}
	c.Start()
	return &leadership{c: c, cancel: cancel, wg: wg, tasks: tasks}, nil
}

// recoverJobs recovers a panicking task run (logged with its stack and
// counted, like every panic LCM recovers): the next run happens as planned.
// It must sit inside SkipIfStillRunning, whose token a panic would leak
// (no run after the first panic).
func recoverJobs(j cron.Job) cron.Job {
	return cron.FuncJob(func() {
		defer safe.Recover("scheduled task")
		j.Run()
	})
}
