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
	"sync"
	"time"

	"github.com/robfig/cron/v3"
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
	Overrides  func(ctx context.Context) (map[string]Override, error)
	RenewEvery time.Duration // 0 = DefaultRenewEvery
	Log        *slog.Logger
}

// Scheduler owns the cron runner; Run blocks until ctx ends.
type Scheduler struct {
	o      Options
	parser cron.Parser
}

// New returns a scheduler.
func New(o Options) *Scheduler {
	if o.RenewEvery <= 0 {
		o.RenewEvery = DefaultRenewEvery
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Scheduler{o: o, parser: cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom |
		cron.Month | cron.Dow | cron.Descriptor)}
}

// Effective returns the tasks with overrides applied and validated.
func (s *Scheduler) Effective(ctx context.Context) ([]Task, error) {
	ov := map[string]Override{}
	if s.o.Overrides != nil {
		m, err := s.o.Overrides(ctx)
		if err != nil {
			return nil, err
		}
		ov = m
	}
	out := make([]Task, 0, len(s.o.Tasks))
	for _, t := range s.o.Tasks {
		if o, ok := ov[t.Name]; ok {
			if o.Spec != "" {
				t.Spec = o.Spec
			}
			if o.Enabled != nil {
				t.Enabled = *o.Enabled
			}
		}
		if _, err := s.parser.Parse(t.Spec); err != nil {
			return nil, fmt.Errorf("schedule: task %s: spec %q: %w", t.Name, t.Spec, err)
		}
		out = append(out, t)
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
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// leadership is one term as leader: a cron runner and the context its
// task runs hang off.
type leadership struct {
	c      *cron.Cron
	cancel context.CancelFunc
	wg     *sync.WaitGroup
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
	c := cron.New(cron.WithParser(s.parser), cron.WithChain(cron.SkipIfStillRunning(cron.DiscardLogger)))
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
	return &leadership{c: c, cancel: cancel, wg: wg}, nil
}
