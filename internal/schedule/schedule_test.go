package schedule_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
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
