package schedule_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/testutil"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// crashLease never releases: stopping its scheduler looks like a dead
// replica, so the follower must wait for the lease to expire.
type crashLease struct{ *bus.Lease }

func (crashLease) Release(context.Context) error { return nil }

func TestOneLeaderRunsAndFollowerTakesOver(t *testing.T) {
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const ttl = 2 * time.Second // short lease for the test; production uses 30 s
	var runs [2]atomic.Int64
	var stops [2]context.CancelFunc
	var done [2]chan struct{}
	for i := range runs {
		l, err := b.NewLease(ctx, bus.BucketLeader, "scheduler", []string{"a", "b"}[i], ttl)
		if err != nil {
			t.Fatal(err)
		}
		s := schedule.New(schedule.Options{Lease: crashLease{l}, RenewEvery: 200 * time.Millisecond, Log: quiet,
			Tasks: []schedule.Task{{Name: "tick", Spec: "* * * * * *", Enabled: true,
				Run: func(context.Context) error { runs[i].Add(1); return nil }}}})
		c, cancel := context.WithCancel(ctx)
		stops[i], done[i] = cancel, make(chan struct{})
		go func() { defer close(done[i]); s.Run(c) }()
	}
	t.Cleanup(func() {
		for i := range stops {
			stops[i]()
			<-done[i]
		}
	})
	testutil.WaitFor(t, 10*time.Second, "a leader runs the task 3 times", func() bool {
		return runs[0].Load()+runs[1].Load() >= 3
	})
	leader, follower := 0, 1
	if runs[1].Load() > 0 {
		leader, follower = 1, 0
	}
	if runs[follower].Load() != 0 {
		t.Fatalf("both schedulers ran the task: %d and %d", runs[0].Load(), runs[1].Load())
	}
	stops[leader]()
	<-done[leader]
	before := runs[leader].Load()
	testutil.WaitFor(t, ttl+5*time.Second, "the follower takes over after the lease expires", func() bool {
		return runs[follower].Load() >= 2
	})
	if runs[leader].Load() != before {
		t.Fatal("the stopped leader kept running tasks")
	}
}

func TestOverrides(t *testing.T) {
	off := false
	s := schedule.New(schedule.Options{Tasks: schedule.Registry(schedule.Hooks{
		AggregateStorage: func(context.Context) (int, error) { return 0, nil },
		RecomputeStatus:  func(context.Context) (int, error) { return 0, nil },
		RefreshAll:       func(context.Context) error { return nil },
	}), Overrides: func(context.Context) (map[string]schedule.Override, error) {
		return map[string]schedule.Override{schedule.TaskRefreshAll: {Spec: "@hourly", Enabled: &off}}, nil
	}})
	got, err := s.Effective(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].Name != schedule.TaskRefreshAll || got[2].Spec != "@hourly" || got[2].Enabled || !got[0].Enabled {
		t.Fatalf("effective %+v", got)
	}
	bad := schedule.New(schedule.Options{Tasks: []schedule.Task{{Name: "x", Spec: "nope"}}})
	if _, err := bad.Effective(context.Background()); err == nil {
		t.Fatal("invalid spec accepted")
	}
}

// TestSetOverridesReschedules: a validated change is stored and the
// leader reschedules by it at once; a change stored elsewhere (another
// replica) is picked up at the next renewal; bad input stores nothing.
// A second task, "clock", runs every second throughout: the test waits for
// its runs, not for wall-clock time, to know the scheduler had the chance
// to run "tick" and did not.
func TestSetOverridesReschedules(t *testing.T) {
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	l, err := b.NewLease(ctx, bus.BucketLeader, "scheduler", "only", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		stored = map[string]schedule.Override{}
		saves  atomic.Int32
		runs   atomic.Int64
		clock  atomic.Int64
	)
	s := schedule.New(schedule.Options{Lease: l, RenewEvery: time.Hour, Log: quiet, // renewals never come: only the poke reloads
		Tasks: []schedule.Task{
			{Name: "tick", Spec: "@every 1h", Enabled: true, Run: func(context.Context) error { runs.Add(1); return nil }},
			{Name: "clock", Spec: "* * * * * *", Enabled: true, Run: func(context.Context) error { clock.Add(1); return nil }},
		},
		Overrides: func(context.Context) (map[string]schedule.Override, error) {
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(stored), nil
		},
		SaveOverrides: func(_ context.Context, _ *domain.Principal, m map[string]schedule.Override) error {
			mu.Lock()
			defer mu.Unlock()
			stored = maps.Clone(m)
			saves.Add(1)
			return nil
		}})
	c, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(c) }()
	t.Cleanup(func() { cancel(); <-done })

	for _, bad := range []map[string]schedule.Override{
		{"nope": {Spec: "@daily"}},
		{"tick": {Spec: "61 * * * *"}},
	} {
		if _, err := s.SetOverrides(ctx, nil, bad); !errors.Is(err, domain.ErrInvalid) {
			t.Fatalf("SetOverrides(%v): %v, want invalid", bad, err)
		}
	}
	if saves.Load() != 0 {
		t.Fatal("invalid overrides were stored")
	}
	waitClock(t, &clock, 2)
	if runs.Load() != 0 {
		t.Fatal("an hourly task ran")
	}
	views, err := s.SetOverrides(ctx, nil, map[string]schedule.Override{"tick": {Spec: "* * * * * *"}})
	if err != nil || len(views) != 2 || views[0].Spec != "* * * * * *" || views[0].DefaultSpec != "@every 1h" || !views[0].Enabled {
		t.Fatalf("views %+v %v", views, err)
	}
	testutil.WaitFor(t, 5*time.Second, "the leader runs the task on its new every-second spec", func() bool { return runs.Load() >= 2 })
	off := false
	if _, err := s.SetOverrides(ctx, nil, map[string]schedule.Override{"tick": {Spec: "* * * * * *", Enabled: &off}}); err != nil {
		t.Fatal(err)
	}
	// Disabled: within a few seconds "tick" misses two every-second slots
	// in a row that "clock" runs in (a run started before the change may
	// still count once).
	testutil.WaitFor(t, 10*time.Second, "the disabled task stops running", func() bool {
		n := runs.Load()
		waitClock(t, &clock, 2)
		return runs.Load() == n
	})
	tasks, err := s.Tasks(ctx)
	if err != nil || tasks[0].Enabled {
		t.Fatalf("tasks %+v %v", tasks, err)
	}
}

// TestChangeOnAnotherReplicaIsPickedUp: the leader re-reads the setting at
// every renewal.
func TestChangeOnAnotherReplicaIsPickedUp(t *testing.T) {
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	l, err := b.NewLease(ctx, bus.BucketLeader, "scheduler", "leader", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var spec atomic.Value
	spec.Store("@every 1h")
	var runs, reads atomic.Int64
	s := schedule.New(schedule.Options{Lease: l, RenewEvery: 200 * time.Millisecond, Log: quiet,
		Tasks: []schedule.Task{{Name: "tick", Spec: "@every 1h", Enabled: true, Run: func(context.Context) error { runs.Add(1); return nil }}},
		Overrides: func(context.Context) (map[string]schedule.Override, error) {
			sp := spec.Load().(string)
			reads.Add(1) // after the load: a counted read returned sp
			return map[string]schedule.Override{"tick": {Spec: sp}}, nil
		}})
	c, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(c) }()
	t.Cleanup(func() { cancel(); <-done })
	// The leader schedules by the hourly spec first (it read the setting),
	// so what follows is a change it must pick up at a renewal.
	testutil.WaitFor(t, 10*time.Second, "the leader reads the schedule", func() bool { return reads.Load() >= 1 })
	spec.Store("* * * * * *") // stored by another replica's SetOverrides
	testutil.WaitFor(t, 5*time.Second, "the leader reschedules at a renewal", func() bool { return runs.Load() >= 2 })
	if _, err := s.SetOverrides(ctx, nil, nil); err == nil {
		t.Fatal("SetOverrides without SaveOverrides succeeded")
	}
}

// waitClock waits until the every-second task counted by clock has run n
// more times.
func waitClock(t *testing.T, clock *atomic.Int64, n int64) {
	t.Helper()
	from := clock.Load()
	testutil.WaitFor(t, 10*time.Second, "the every-second task runs", func() bool { return clock.Load() >= from+n })
}

type panics struct{ n atomic.Int64 }

func (p *panics) RecordPanic() { p.n.Add(1) }

// TestPanickingTaskIsRecovered: a task that panics is recovered and
// counted; the scheduler keeps running it on schedule.
func TestPanickingTaskIsRecovered(t *testing.T) {
	ctx := context.Background()
	b, err := bus.Open(ctx, bus.Options{DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	pc := &panics{}
	safe.SetRecorder(pc, quiet)
	t.Cleanup(func() { safe.SetRecorder(nil, nil) })
	l, err := b.NewLease(ctx, bus.BucketLeader, "scheduler", "a", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	s := schedule.New(schedule.Options{Lease: l, RenewEvery: 200 * time.Millisecond, Log: quiet,
		Tasks: []schedule.Task{{Name: "boom", Spec: "* * * * * *", Enabled: true,
			Run: func(context.Context) error { runs.Add(1); panic("task broke") }}}})
	c, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(c) }()
	defer func() { cancel(); <-done }()
	testutil.WaitFor(t, 10*time.Second, "the task ran 3 times", func() bool { return runs.Load() >= 3 })
	if pc.n.Load() < 3 {
		t.Fatalf("%d panics counted for %d runs", pc.n.Load(), runs.Load())
	}
}

// TestAlertCheckTask: the alert evaluation is in the registry every 30
// minutes and its interval can be changed like any task's.
func TestAlertCheckTask(t *testing.T) {
	s := schedule.New(schedule.Options{Tasks: schedule.Registry(schedule.Hooks{AlertCheck: func(context.Context) error { return nil }}),
		Overrides: func(context.Context) (map[string]schedule.Override, error) {
			return map[string]schedule.Override{schedule.TaskAlertCheck: {Spec: "*/10 * * * *"}}, nil
		}})
	got, err := s.Effective(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "alert_check" || got[0].Spec != "*/10 * * * *" || !got[0].Enabled {
		t.Fatalf("effective %+v", got)
	}
	if def := schedule.Registry(schedule.Hooks{AlertCheck: func(context.Context) error { return nil }}); def[0].Spec != "*/30 * * * *" {
		t.Fatalf("default %+v", def[0])
	}
}
