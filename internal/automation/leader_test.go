package automation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// crashLease is a lease whose holder dies: Release does nothing, so the
// lease stays until its TTL runs out, as after a killed process.
type crashLease struct{ *bus.Lease }

func (crashLease) Release(context.Context) error { return nil }

// TestAutomationLeaderReplicas runs two replicas (each a scheduler with
// its own lease on the same NATS and database, and an automation service)
// with a group schedule firing every second. Only the leader fires; the
// leader dies in the middle of a run (its scheduler and runs stop, its
// lease is not released); the other replica takes the lease and the run
// over and finishes it; no server gets a job of that run twice, and no
// slot has two runs.
func TestAutomationLeaderReplicas(t *testing.T) {
	ctx := context.Background()
	p := plane.Start(t, plane.Options{})
	table := fleetsim.DefaultTable()
	fleetsim.HandleRefresh(table, fleetsim.RefreshOptions{Upgradable: 2, Security: 1})
	f, err := fleetsim.Start(fleetsim.Config{N: 2, Responders: table, Latency: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	g, err := p.Store.CreateGroup(ctx, domain.Group{Name: "ha"})
	if err != nil {
		t.Fatal(err)
	}
	var srvs []domain.Server
	for i, inst := range f.Instances {
		key, _ := actions.NewManagementKey("t")
		srvs = append(srvs, p.AddServer(t, "ha-"+string(rune('a'+i)), inst.Addr, inst.AuthorizedHostKey(), key, g.ID))
	}
	type replica struct {
		svc    *automation.Service
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(name string) replica {
		svc := automation.New(automation.Options{Store: p.Store, Jobs: p.Jobs, Log: quiet, Owner: name,
			StaleAfter: 2 * time.Second, Poll: 100 * time.Millisecond})
		l, err := p.Bus.NewLease(ctx, bus.BucketLeader, "scheduler-test", name, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		sch := schedule.New(schedule.Options{Log: quiet, Lease: crashLease{l}, RenewEvery: 300 * time.Millisecond,
			Tasks: schedule.Registry(schedule.Hooks{GroupSchedules: svc.Tick})})
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = sch.Run(rctx) }()
		return replica{svc: svc, cancel: cancel, done: done}
	}
	a := start("replica-a")
	testutil.WaitFor(t, 10*time.Second, "replica a leads", func() bool {
		v, err := p.Bus.KV(ctx, bus.BucketLeader)
		if err != nil {
			return false
		}
		e, err := v.Get(ctx, "scheduler-test")
		return err == nil && len(e.Value()) > 0 && string(e.Value()) != "" && strings.Contains(string(e.Value()), "replica-a")
	})
	b := start("replica-b")
	svcAdmin := automation.New(automation.Options{Store: p.Store, Jobs: p.Jobs, Log: quiet, Owner: "api"})
	sch, err := svcAdmin.DefineSchedule(ctx, p.Admin, g.ID, automation.ScheduleInput{Name: ptr("every second"), Cron: ptr("* * * * * *")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svcAdmin.DefineRule(ctx, p.Admin, g.ID, automation.RuleInput{ScheduleID: sch.ID, Type: ptr(automation.RuleRefresh)}); err != nil {
		t.Fatal(err)
	}
	// The leader's first run is submitting or waiting for its jobs.
	var first domain.ScheduleRun
	testutil.WaitFor(t, 20*time.Second, "a run of replica a with jobs", func() bool {
		rs, _ := p.Store.ListRuns(ctx, sch.ID, 100)
		for _, r := range rs {
			if r.Owner == "replica-a" && r.Status == automation.RunRunning && len(r.Steps) == 1 && r.Steps[0].BulkID != "" && len(r.Steps[0].Items) == 2 {
				first = r
				return true
			}
		}
		return false
	})
	// Only the leader fired so far.
	rs0, _ := p.Store.ListRuns(ctx, sch.ID, 1000)
	for _, x := range rs0 {
		if x.Owner != "replica-a" && x.Owner != "" {
			t.Fatalf("run %s (%s) owned by %s while replica-a leads", x.ID, x.SlotKey, x.Owner)
		}
	}
	// Replica a dies: no more scheduling, its runs stop, its lease stays.
	if _, err := svcAdmin.SetScheduleEnabled(ctx, p.Admin, sch.ID, false); err != nil { // no new slots: the run in flight is what counts
		t.Fatal(err)
	}
	a.svc.Stop()
	a.cancel()
	<-a.done
	testutil.WaitFor(t, 30*time.Second, "replica b finishes the run", func() bool {
		r, err := p.Store.GetRun(ctx, first.ID)
		return err == nil && r.Owner == "replica-b" && r.FinishedAt != nil
	})
	r, _ := p.Store.GetRun(ctx, first.ID)
	if r.Status != automation.RunSuccess || r.Steps[0].BulkID != first.Steps[0].BulkID {
		t.Fatalf("run after handover %+v, want success with the same bulk run", r)
	}
	before := map[string]string{}
	for _, it := range first.Steps[0].Items {
		before[it.ServerID] = it.JobID
	}
	for _, it := range r.Steps[0].Items {
		if it.JobID != before[it.ServerID] {
			t.Fatalf("server %s: job %s after handover, %s before: submitted twice", it.ServerName, it.JobID, before[it.ServerID])
		}
	}
	// No slot has two runs (unique) and every job of every run is once per server.
	rs, _ := p.Store.ListRuns(ctx, sch.ID, 1000)
	slots := map[string]bool{}
	for _, x := range rs {
		if slots[x.SlotKey] {
			t.Fatalf("slot %s ran twice", x.SlotKey)
		}
		slots[x.SlotKey] = true
	}
	for _, srv := range srvs {
		jobs, _, err := p.Store.ListJobs(ctx, store.SystemScope, domain.JobFilter{ServerID: srv.ID, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.ID == "" {
				t.Fatal("empty job")
			}
		}
	}
	b.svc.Stop()
	b.cancel()
	<-b.done
	automation.WaitIdle()
}
