package automation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// itemOf returns the step item of server id in the run's first step.
func itemOf(t *testing.T, r domain.ScheduleRun, id string) domain.RunStepItem {
	t.Helper()
	if len(r.Steps) == 0 {
		t.Fatalf("run %s has no steps (%s: %s)", r.ID, r.Status, r.Reason)
	}
	for _, it := range r.Steps[0].Items {
		if it.ServerID == id {
			return it
		}
	}
	t.Fatalf("run %s has no item for %s: %+v", r.ID, id, r.Steps[0].Items)
	return domain.RunStepItem{}
}

func finishedRun(t *testing.T, e *env, id string) domain.ScheduleRun {
	t.Helper()
	automation.WaitIdle()
	r, err := e.p.Store.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.FinishedAt == nil {
		t.Fatalf("run %s not finished: %s %s", id, r.Status, r.Reason)
	}
	return r
}

// TestLowerPriorityGroupRuleWins: a server in two groups whose schedules
// both have a refresh rule gets it from the group with the lower priority
// number only. In the other group's run it is "superseded" (no job), the
// group's other servers run; the winning group's run gives it its job.
func TestLowerPriorityGroupRuleWins(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, db.URL, 2) // both servers in "web" (priority 100)
			s := e.svc(nil, "a")
			dbg, err := e.p.Store.CreateGroup(ctx, domain.Group{Name: "db"})
			if err != nil {
				t.Fatal(err)
			}
			shared, webOnly := e.srvs[0], e.srvs[1]
			if err := e.p.Store.AddGroupServer(ctx, dbg.ID, shared.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SetGroupSettings(ctx, e.p.Admin, domain.GroupAutomation{GroupID: dbg.ID, Priority: 10}); err != nil {
				t.Fatal(err)
			}
			webSch := e.schedule(t, s, "0 3 * * *", automation.RuleRefresh)
			e.group = dbg
			dbSch := e.schedule(t, s, "0 4 * * *", automation.RuleRefresh)

			run, err := s.TriggerNow(ctx, e.p.Admin, webSch.ID)
			if err != nil {
				t.Fatal(err)
			}
			r := finishedRun(t, e, run.ID)
			lost := itemOf(t, r, shared.ID)
			if lost.Skipped != "superseded" || lost.JobID != "" || !strings.Contains(lost.Reason, `"db"`) {
				t.Fatalf("shared server in the losing group's run: %+v", lost)
			}
			if it := itemOf(t, r, webOnly.ID); it.JobID == "" || it.Status != string(domain.JobSuccess) {
				t.Fatalf("web-only server: %+v", it)
			}
			run, err = s.TriggerNow(ctx, e.p.Admin, dbSch.ID)
			if err != nil {
				t.Fatal(err)
			}
			r = finishedRun(t, e, run.ID)
			if it := itemOf(t, r, shared.ID); it.JobID == "" || it.Skipped != "" || it.Status != string(domain.JobSuccess) {
				t.Fatalf("shared server in the winning group's run: %+v", it)
			}
		})
	}
}

// TestScheduleRunSkipsMaintenance: a server in maintenance mode gets no
// job from a schedule run (skipped with the reason); the others do.
func TestScheduleRunSkipsMaintenance(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, db.URL, 2)
			s := e.svc(nil, "a")
			sch := e.schedule(t, s, "0 3 * * *", automation.RuleRefresh)
			if _, err := s.StartMaintenance(ctx, e.p.Admin, e.srvs[0].ID, "disk swap", nil); err != nil {
				t.Fatal(err)
			}
			run, err := s.TriggerNow(ctx, e.p.Admin, sch.ID)
			if err != nil {
				t.Fatal(err)
			}
			r := finishedRun(t, e, run.ID)
			if it := itemOf(t, r, e.srvs[0].ID); it.Skipped != "maintenance" || it.JobID != "" {
				t.Fatalf("server in maintenance: %+v", it)
			}
			if it := itemOf(t, r, e.srvs[1].ID); it.JobID == "" || it.Status != string(domain.JobSuccess) {
				t.Fatalf("other server: %+v", it)
			}
			hist, _, err := e.p.Jobs.History(ctx, e.p.Admin, domain.JobFilter{ServerID: e.srvs[0].ID})
			if err != nil || len(hist) != 0 {
				t.Fatalf("jobs of the server in maintenance: %d %v", len(hist), err)
			}
		})
	}
}

// TestMaintenanceEndsAtEndsAt: maintenance with an end time stays on up to
// that time and is ended (and audited as automatic) by the first tick at
// or after it, on a controlled clock.
func TestMaintenanceEndsAtEndsAt(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, db.URL, 1)
			start := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
			c := &clock{t: start}
			s := e.svc(c, "a")
			id := e.srvs[0].ID
			ends := start.Add(10 * time.Minute)
			if _, err := s.StartMaintenance(ctx, e.p.Admin, id, "kernel", &ends); err != nil {
				t.Fatal(err)
			}
			on := func() bool {
				t.Helper()
				m, err := s.Maintenance(ctx, e.p.Admin, id)
				if err != nil {
					t.Fatal(err)
				}
				return m != nil
			}
			c.set(ends.Add(-time.Second))
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if !on() {
				t.Fatal("maintenance ended a second before ends_at")
			}
			in, err := s.InMaintenance(ctx, []string{id})
			if err != nil || !in[id] {
				t.Fatalf("in maintenance a second before the end: %v %v", in, err)
			}
			c.set(ends)
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if on() {
				t.Fatal("maintenance still on at ends_at")
			}
			entries, _, err := e.p.Store.ListAudit(ctx, store.AuditFilter{Action: "server.maintenance.end", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 || entries[0].Details["automatic"] != true || entries[0].Target != "server:"+id {
				t.Fatalf("audit of the automatic end: %+v", entries)
			}
		})
	}
}
