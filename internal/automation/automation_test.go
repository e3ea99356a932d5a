package automation_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// clock is a controlled clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func ptr[T any](v T) *T { return &v }

type env struct {
	p     *plane.Plane
	group domain.Group
	srvs  []domain.Server
}

func newEnv(t *testing.T, dbURL string, servers int) *env {
	t.Helper()
	p := plane.Start(t, plane.Options{DatabaseURL: dbURL})
	g, err := p.Store.CreateGroup(context.Background(), domain.Group{Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{p: p, group: g}
	if servers > 0 {
		table := fleetsim.DefaultTable()
		fleetsim.HandleRefresh(table, fleetsim.RefreshOptions{Upgradable: 3, Security: 1})
		f, err := fleetsim.Start(fleetsim.Config{N: servers, Responders: table})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		for i, inst := range f.Instances {
			key, _ := actions.NewManagementKey("t")
			e.srvs = append(e.srvs, p.AddServer(t, "sim-"+string(rune('a'+i)), inst.Addr, inst.AuthorizedHostKey(), key, g.ID))
		}
	}
	return e
}

func (e *env) svc(c *clock, owner string) *automation.Service {
	o := automation.Options{Store: e.p.Store, Jobs: e.p.Jobs, Log: quiet, Owner: owner}
	if c != nil {
		o.Now = c.now
	}
	return automation.New(o)
}

func (e *env) schedule(t *testing.T, s *automation.Service, cron string, rules ...string) domain.Schedule {
	t.Helper()
	ctx := context.Background()
	sch, err := s.DefineSchedule(ctx, e.p.Admin, e.group.ID, automation.ScheduleInput{Name: ptr("nightly"), Cron: ptr(cron)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if _, err := s.DefineRule(ctx, e.p.Admin, e.group.ID, automation.RuleInput{ScheduleID: sch.ID, Type: ptr(r)}); err != nil {
			t.Fatal(err)
		}
	}
	return sch
}

func runs(t *testing.T, e *env, id string) []domain.ScheduleRun {
	t.Helper()
	rs, err := e.p.Store.ListRuns(context.Background(), id, 100)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestAutomationWindowToTheMinute: a run due outside the group's
// maintenance window waits and starts at the window's first minute, not a
// second earlier; with outside_window=skip it is skipped with the reason.
func TestAutomationWindowToTheMinute(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, db.URL, 0)
			berlin, _ := time.LoadLocation("Europe/Berlin")
			c := &clock{t: time.Date(2026, 3, 1, 1, 0, 30, 0, berlin)}
			s := e.svc(c, "a")
			if _, err := s.SetGroupSettings(ctx, e.p.Admin, domain.GroupAutomation{GroupID: e.group.ID, Priority: 100,
				WindowStart: "02:00", WindowEnd: "05:00", WindowTZ: "Europe/Berlin"}); err != nil {
				t.Fatal(err)
			}
			sch := e.schedule(t, s, "30 1 * * *", automation.RuleRefresh)
			sch, err := s.UpdateSchedule(ctx, e.p.Admin, sch.ID, automation.ScheduleInput{TimeZone: ptr("Europe/Berlin")})
			if err != nil {
				t.Fatal(err)
			}
			if want := time.Date(2026, 3, 1, 1, 30, 0, 0, berlin); !sch.NextRunAt.Equal(want) {
				t.Fatalf("next run %s, want %s", sch.NextRunAt, want)
			}
			c.set(time.Date(2026, 3, 1, 1, 30, 0, 0, berlin))
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			rs := runs(t, e, sch.ID)
			if len(rs) != 1 || rs[0].Status != automation.RunWaiting || !rs[0].DueAt.Equal(time.Date(2026, 3, 1, 2, 0, 0, 0, berlin)) {
				t.Fatalf("runs %+v, want one waiting until 02:00 Berlin", rs)
			}
			c.set(time.Date(2026, 3, 1, 1, 59, 59, 0, berlin))
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if rs := runs(t, e, sch.ID); rs[0].Status != automation.RunWaiting {
				t.Fatalf("at 01:59:59 the run is %s, want still waiting", rs[0].Status)
			}
			c.set(time.Date(2026, 3, 1, 2, 0, 0, 0, berlin))
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			automation.WaitIdle()
			if rs := runs(t, e, sch.ID); rs[0].Status != automation.RunSuccess || rs[0].StartedAt == nil || !rs[0].StartedAt.Equal(c.now()) {
				t.Fatalf("at 02:00 the run is %+v, want started at 02:00 and done", rs[0])
			}
			// Skip instead of wait.
			if _, err := s.UpdateSchedule(ctx, e.p.Admin, sch.ID, automation.ScheduleInput{OutsideWindow: ptr("skip")}); err != nil {
				t.Fatal(err)
			}
			c.set(time.Date(2026, 3, 2, 1, 30, 0, 0, berlin))
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			rs = runs(t, e, sch.ID)
			if rs[0].Status != automation.RunSkipped || rs[0].Reason == "" {
				t.Fatalf("run %+v, want skipped with a reason", rs[0])
			}
			t.Log(rs[0].Reason)
		})
	}
}

// TestAutomationFastCronOnFleetsim: a group schedule firing every second
// with a refresh rule runs a refresh job on each simulated server, and the
// run's history names the jobs.
func TestAutomationFastCronOnFleetsim(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "", 3)
	s := e.svc(nil, "a")
	sch := e.schedule(t, s, "* * * * * *", automation.RuleRefresh)
	var done domain.ScheduleRun
	testutil.WaitFor(t, 60*time.Second, "a successful run", func() bool {
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		for _, r := range runs(t, e, sch.ID) {
			if r.Status == automation.RunSuccess {
				done = r
				return true
			}
		}
		return false
	})
	if len(done.Steps) != 1 || len(done.Steps[0].Items) != 3 {
		t.Fatalf("run %+v, want one step with three servers", done)
	}
	for _, it := range done.Steps[0].Items {
		j, err := e.p.Store.GetJob(ctx, store.SystemScope, it.JobID)
		if err != nil || j.Kind != domain.JobRefresh || j.Status != domain.JobSuccess {
			t.Fatalf("job of %s: %+v %v", it.ServerName, j, err)
		}
	}
	// Disabled: no more runs.
	if _, err := s.SetScheduleEnabled(ctx, e.p.Admin, sch.ID, false); err != nil {
		t.Fatal(err)
	}
	automation.WaitIdle()
}

// TestAutomationReplicaHandover: two replicas tick the same slot (one run);
// the owner dies while its jobs run; the other takes the run over after
// the stale bound and finishes it without submitting the jobs again.
func TestAutomationReplicaHandover(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, db.URL, 2)
			start := time.Now().UTC().Truncate(time.Second)
			c := &clock{t: start}
			dead := make(chan struct{})
			a := automation.New(automation.Options{Store: e.p.Store, Jobs: e.p.Jobs, Log: quiet, Owner: "replica-a", Now: c.now,
				Wait: func(ctx context.Context) bool { <-dead; return false }})
			b := e.svc(c, "replica-b")
			sch := e.schedule(t, a, "0 * * * * *", automation.RuleRefresh, automation.RuleHealthCheck)
			c.set(*sch.NextRunAt)
			for _, r := range []*automation.Service{a, b} { // both replicas tick the slot
				if err := r.Tick(ctx); err != nil {
					t.Fatal(err)
				}
			}
			var rs []domain.ScheduleRun
			testutil.WaitFor(t, 30*time.Second, "the first rule's jobs submitted", func() bool {
				rs = runs(t, e, sch.ID)
				return len(rs) == 1 && rs[0].Steps[0].BulkID != "" && len(rs[0].Steps[0].Items) == 2
			})
			if rs[0].Owner != "replica-a" {
				t.Fatalf("run owned by %s, want replica-a (it ticked first)", rs[0].Owner)
			}
			close(dead) // replica a stops beating and returns
			automation.WaitIdle()
			// Before the stale bound b does not take over.
			c.set(c.now().Add(automation.DefaultStaleAfter - time.Second))
			if err := b.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if r := runs(t, e, sch.ID)[0]; r.Owner != "replica-a" {
				t.Fatalf("taken over early by %s", r.Owner)
			}
			c.set(c.now().Add(2 * time.Second))
			if err := b.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			automation.WaitIdle()
			r := runs(t, e, sch.ID)
			if len(r) != 1 || r[0].Owner != "replica-b" || r[0].Status != automation.RunSuccess || len(r[0].Steps) != 2 {
				t.Fatalf("runs %+v, want one run finished by replica-b", r)
			}
			for i, srv := range e.srvs {
				jobs, _, err := e.p.Store.ListJobs(ctx, store.SystemScope, domain.JobFilter{ServerID: srv.ID, Limit: 50})
				if err != nil {
					t.Fatal(err)
				}
				n := map[domain.JobKind]int{}
				for _, j := range jobs {
					n[j.Kind]++
				}
				if n[domain.JobRefresh] != 1 || n[domain.JobConnectivity] != 1 {
					t.Fatalf("server %d jobs %v, want one refresh and one health check", i, n)
				}
			}
		})
	}
}

// TestScriptRuleSkipsRestrictedServers: a script rule runs on the group's
// servers in full sudo mode; a server whose sudo is restricted is skipped
// with the code restricted_mode and the reason, and gets no job (the spec:
// free-form scripts are blocked in restricted mode).
func TestScriptRuleSkipsRestrictedServers(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "", 2)
	s := e.svc(nil, "a")
	sch, err := s.DefineSchedule(ctx, e.p.Admin, e.group.ID, automation.ScheduleInput{Name: ptr("scripts"), Cron: ptr("0 3 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DefineRule(ctx, e.p.Admin, e.group.ID, automation.RuleInput{ScheduleID: sch.ID, Type: ptr(automation.RuleScript),
		Params: &domain.RuleParams{Script: "echo hello"}}); err != nil {
		t.Fatal(err)
	}
	restricted := e.srvs[1]
	if err := e.p.Store.RecordSudoMode(ctx, restricted.ID, domain.SudoRestricted, time.Now()); err != nil {
		t.Fatal(err)
	}
	run, err := s.TriggerNow(ctx, e.p.Admin, sch.ID)
	if err != nil {
		t.Fatal(err)
	}
	automation.WaitIdle()
	var done domain.ScheduleRun
	testutil.WaitFor(t, 30*time.Second, "the run's step", func() bool {
		r, err := e.p.Store.GetRun(ctx, run.ID)
		done = r
		return err == nil && len(r.Steps) == 1 && len(r.Steps[0].Items) == 2
	})
	for _, it := range done.Steps[0].Items {
		switch it.ServerID {
		case restricted.ID:
			if it.Skipped != "restricted_mode" || it.JobID != "" || !strings.Contains(it.Reason, "restricted") {
				t.Fatalf("restricted server: %+v", it)
			}
		default:
			j, err := e.p.Store.GetJob(ctx, store.SystemScope, it.JobID)
			if err != nil || j.Kind != domain.JobScript {
				t.Fatalf("full-mode server: %+v %+v %v", it, j, err)
			}
		}
	}
	hist, _, err := e.p.Jobs.History(ctx, e.p.Admin, domain.JobFilter{ServerID: restricted.ID})
	if err != nil || len(hist) != 0 {
		t.Fatalf("the restricted server got jobs: %+v %v", hist, err)
	}
}
