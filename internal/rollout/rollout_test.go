package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/rollout"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is a control plane with n simulated Debian hosts added as joined
// servers, and the rollout and approvals services.
type env struct {
	p     *plane.Plane
	f     *fleetsim.Fleet
	ids   []string
	ap    *approvals.Service
	ro    *rollout.Service
	stop  context.CancelFunc
	owner int
}

// forEachDB runs fn on SQLite and on PostgreSQL.
func forEachDB(t *testing.T, fn func(t *testing.T, dbURL string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, "") })
	t.Run("postgres", func(t *testing.T) { fn(t, testutil.PostgresURL(t)) })
}

func newEnv(t *testing.T, dbURL string, n int, upgrade time.Duration) *env {
	t.Helper()
	table := fleetsim.DebianTable(fleetsim.DebianOptions{RefreshOptions: fleetsim.RefreshOptions{Upgradable: 10, Security: 4},
		KeepPending: true, UpgradeTime: upgrade})
	f, err := fleetsim.Start(fleetsim.Config{N: n, Packages: 100, Responders: table, RebootDowntime: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	p := plane.Start(t, plane.Options{DatabaseURL: dbURL, Concurrency: 16})
	e := &env{p: p, f: f}
	for _, inst := range f.Instances {
		key, err := actions.NewManagementKey("test")
		if err != nil {
			t.Fatal(err)
		}
		e.ids = append(e.ids, p.AddServer(t, inst.Hostname, inst.Addr, inst.AuthorizedHostKey(), key).ID)
	}
	e.ap = approvals.New(p.Store, quiet)
	e.ro = e.service(t, false)
	e.start(t)
	return e
}

// service builds a rollout service; lease makes it campaign for the
// driver lease under a new owner name.
func (e *env) service(t *testing.T, lease bool) *rollout.Service {
	o := rollout.Options{Log: quiet, Approvals: e.ap, Tick: 50 * time.Millisecond}
	if lease {
		e.owner++
		l, err := e.p.Bus.NewLease(context.Background(), bus.BucketLeader, "rollouts", fmt.Sprintf("replica-%d", e.owner), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		o.Lease = l
	}
	return rollout.New(e.p.Store, e.p.Jobs, o)
}

// start runs e.ro's driver until stop.
func (e *env) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.ro.Run(ctx) }()
	e.stop = func() { cancel(); <-done }
	t.Cleanup(e.stop)
}

func (e *env) wait(t *testing.T, id string, timeout time.Duration, what string, cond func(domain.Rollout) bool) domain.Rollout {
	t.Helper()
	var ro domain.Rollout
	deadline := time.Now().Add(timeout)
	for {
		var err error
		ro, err = e.p.Store.GetRollout(context.Background(), store.SystemScope, id)
		if err == nil && cond(ro) {
			return ro
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s; rollout %s batch %d/%d (%s), items %+v (%v)", timeout, what,
				ro.Status, ro.CurrentBatch, ro.Batches, ro.Reason, ro.Items, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func status(st string) func(domain.Rollout) bool {
	return func(r domain.Rollout) bool { return r.Status == st }
}

func code(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

func TestRolloutCanaryThenBatchesComplete(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		e := newEnv(t, db, 7, 50*time.Millisecond)
		ctx := context.Background()
		r, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true,
			CanarySize: 1, BatchSize: 2, Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		if r.Batches != 4 || r.Status != domain.RolloutRunning {
			t.Fatalf("plan: %d batches, %s", r.Batches, r.Status)
		}
		r = e.wait(t, r.ID, 60*time.Second, "rollout completes", status(domain.RolloutCompleted))
		jobs := map[string]bool{}
		var prevDone time.Time
		for b := 0; b < r.Batches; b++ {
			var first time.Time
			var last time.Time
			for _, it := range r.Items {
				if it.Batch != b {
					continue
				}
				if it.State != domain.ItemSuccess || it.JobID == "" || jobs[it.JobID] {
					t.Fatalf("item %+v", it)
				}
				jobs[it.JobID] = true
				j, err := e.p.Store.GetJob(ctx, store.SystemScope, it.JobID)
				if err != nil {
					t.Fatal(err)
				}
				if first.IsZero() || j.CreatedAt.Before(first) {
					first = j.CreatedAt
				}
				if j.FinishedAt != nil && j.FinishedAt.After(last) {
					last = *j.FinishedAt
				}
			}
			// A batch starts only after the previous one finished.
			if !prevDone.IsZero() && first.Before(prevDone) {
				t.Fatalf("batch %d started at %s before batch %d finished at %s", b, first, b-1, prevDone)
			}
			prevDone = last
		}
		if len(jobs) != 7 {
			t.Fatalf("%d jobs", len(jobs))
		}
	})
}

func TestRolloutHaltsAtFailureThreshold(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		e := newEnv(t, db, 8, 20*time.Millisecond)
		ctx := context.Background()
		// Servers are named sim-0000…: batch 1 (of size 2) is sim-0002/3.
		e.f.Instances[2].SetFailUpgrades(true)
		e.f.Instances[3].SetFailUpgrades(true)
		r, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true,
			BatchSize: 2, FailureThreshold: 2})
		if err != nil {
			t.Fatal(err)
		}
		r = e.wait(t, r.ID, 60*time.Second, "rollout halts", status(domain.RolloutHalted))
		c := r.Counts()
		if c[domain.ItemSuccess] != 2 || c[domain.ItemFailed] != 2 || c[domain.ItemAborted] != 4 {
			t.Fatalf("counts %v (%s)", c, r.Reason)
		}
		for _, it := range r.Items {
			if it.Batch >= 2 && it.JobID != "" {
				t.Fatalf("a server after the threshold got a job: %+v", it)
			}
		}
		// Percentage: 25 % of 8 is the same 2 servers.
		e.f.Instances[0].SetFailUpgrades(true)
		r, err = e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true,
			CanarySize: 1})
		if err != nil {
			t.Fatal(err)
		}
		r = e.wait(t, r.ID, 60*time.Second, "a failed canary halts", status(domain.RolloutHalted))
		if c := r.Counts(); c[domain.ItemFailed] != 1 || c[domain.ItemAborted] != 7 {
			t.Fatalf("canary counts %v", c)
		}
		e.f.Instances[0].SetFailUpgrades(false)
		r, err = e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true,
			BatchPercent: 50, FailureThresholdPercent: 50})
		if err != nil {
			t.Fatal(err)
		}
		r = e.wait(t, r.ID, 60*time.Second, "2 of 8 failures stay under 50 %", status(domain.RolloutCompleted))
		if c := r.Counts(); c[domain.ItemFailed] != 2 || c[domain.ItemSuccess] != 6 || r.Batches != 2 {
			t.Fatalf("percent counts %v, %d batches", c, r.Batches)
		}
	})
}

func TestRolloutPauseResumeAbort(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		e := newEnv(t, db, 6, 20*time.Millisecond)
		ctx := context.Background()
		r, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true,
			BatchSize: 2, PauseSeconds: 3600})
		if err != nil {
			t.Fatal(err)
		}
		// The pause between batches holds batch 1 back.
		r = e.wait(t, r.ID, 30*time.Second, "batch 0 done", func(r domain.Rollout) bool { return r.CurrentBatch == 1 })
		if _, err := e.ro.Resume(ctx, e.p.Admin, r.ID); code(err) != "invalid_state" {
			t.Fatalf("resume while running: %v", err)
		}
		if _, err := e.ro.Pause(ctx, e.p.Admin, r.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.ro.Pause(ctx, e.p.Admin, r.ID); code(err) != "invalid_state" {
			t.Fatalf("pause twice: %v", err)
		}
		if _, err := e.ro.Resume(ctx, e.p.Admin, r.ID); err != nil {
			t.Fatal(err)
		}
		r, err = e.ro.Abort(ctx, e.p.Admin, r.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		r = e.wait(t, r.ID, 10*time.Second, "aborted", status(domain.RolloutAborted))
		if c := r.Counts(); c[domain.ItemSuccess] != 2 || c[domain.ItemAborted] != 4 {
			t.Fatalf("after abort %v", c)
		}
		if _, err := e.ro.Pause(ctx, e.p.Admin, r.ID); code(err) != "invalid_state" {
			t.Fatalf("pause an aborted rollout: %v", err)
		}
	})
}

// Abort with abort_running: the jobs in flight are aborted too.
func TestRolloutAbortRunningJobs(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		ctx := context.Background()
		e2 := newEnv(t, db, 2, time.Minute)
		r, err := e2.ro.Create(ctx, e2.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true})
		if err != nil {
			t.Fatal(err)
		}
		r = e2.wait(t, r.ID, 30*time.Second, "jobs running", func(r domain.Rollout) bool {
			for _, it := range r.Items {
				if it.JobStatus != domain.JobRunning {
					return false
				}
			}
			return true
		})
		if _, err := e2.ro.Abort(ctx, e2.p.Admin, r.ID, true); err != nil {
			t.Fatal(err)
		}
		r = e2.wait(t, r.ID, 30*time.Second, "running jobs aborted", func(r domain.Rollout) bool {
			c := r.Counts()
			return r.Status == domain.RolloutAborted && c[domain.ItemFailed] == 2
		})
		for _, it := range r.Items {
			if it.JobStatus != domain.JobAborted {
				t.Fatalf("job of %s is %s", it.ServerName, it.JobStatus)
			}
		}
	})
}

func TestRolloutOneAtATimePerScope(t *testing.T) {
	e := newEnv(t, "", 3, 20*time.Millisecond)
	ctx := context.Background()
	r, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, ServerIDs: e.ids[:2], PauseSeconds: 3600, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionAllUpdates, All: true}); code(err) != "rollout_in_progress" {
		t.Fatalf("overlapping rollout: %v", err)
	}
	// A disjoint selection is fine.
	if _, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionAllUpdates, ServerIDs: e.ids[2:]}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: "custom:nope", All: true}); code(err) != "unknown_action" {
		t.Fatalf("unknown action: %v", err)
	}
	if _, err := e.ro.Abort(ctx, e.p.Admin, r.ID, false); err != nil {
		t.Fatal(err)
	}
	e.wait(t, r.ID, 10*time.Second, "aborted", status(domain.RolloutAborted))
}

func TestRolloutRebootIfRequiredWaitsForRefresh(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		e := newEnv(t, db, 3, 20*time.Millisecond)
		ctx := context.Background()
		sqlDB, err := e.p.Store.SQL()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range e.ids[:2] {
			if _, err := sqlDB.ExecContext(ctx, `INSERT INTO server_facts (server_id, facts, reboot_required, collected_at) VALUES ($1, '{}', true, $2)`,
				id, time.Now().UTC()); err != nil {
				t.Fatal(err)
			}
		}
		plan, err := e.ro.DryRun(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionRebootIfRequired, All: true, BatchSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !plan.Items[0].Reboot || !plan.Items[1].Reboot || plan.Items[2].Skip == "" {
			t.Fatalf("plan %+v", plan.Items)
		}
		r, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionRebootIfRequired, All: true, BatchSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		r = e.wait(t, r.ID, 90*time.Second, "rollout completes", status(domain.RolloutCompleted))
		for i, it := range r.Items {
			switch i {
			case 0, 1:
				if it.State != domain.ItemSuccess || it.RefreshJobID == "" || it.JobStatus != domain.JobSuccess || e.f.Instances[i].Boots() != 1 {
					t.Fatalf("rebooted item %+v, boots %d", it, e.f.Instances[i].Boots())
				}
				reboot, _ := e.p.Store.GetJob(ctx, store.SystemScope, it.JobID)
				refresh, _ := e.p.Store.GetJob(ctx, store.SystemScope, it.RefreshJobID)
				if reboot.Kind != domain.JobReboot || refresh.Kind != domain.JobRefresh || refresh.CreatedAt.Before(*reboot.FinishedAt) {
					t.Fatalf("reboot %+v then refresh %+v", reboot, refresh)
				}
			case 2:
				if it.State != domain.ItemSkipped || e.f.Instances[2].Boots() != 0 {
					t.Fatalf("skipped item %+v", it)
				}
			}
		}
		// Batch 1 started only once batch 0's refresh passed.
		r0, _ := e.p.Store.GetJob(ctx, store.SystemScope, r.Items[0].RefreshJobID)
		b1, _ := e.p.Store.GetJob(ctx, store.SystemScope, r.Items[1].JobID)
		if b1.CreatedAt.Before(*r0.FinishedAt) {
			t.Fatalf("batch 1 started before batch 0's refresh finished")
		}
	})
}

func TestRolloutResumesAfterRestart(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		e := newEnv(t, db, 4, 20*time.Millisecond)
		e.stop()
		ctx := context.Background()
		// Replica 1 holds the lease and drives batch 0, then stops (as an
		// API restart does); replica 2 takes over and finishes.
		e.ro = e.service(t, true)
		e.start(t)
		r, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true, BatchSize: 1, PauseSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		e.wait(t, r.ID, 30*time.Second, "batch 0 done", func(r domain.Rollout) bool { return r.CurrentBatch >= 1 })
		e.stop()
		mid, _ := e.p.Store.GetRollout(ctx, store.SystemScope, r.ID)
		if mid.Status != domain.RolloutRunning || mid.CurrentBatch >= 4 {
			t.Fatalf("stopped at %+v", mid)
		}
		e.ro = e.service(t, true)
		e.start(t)
		r = e.wait(t, r.ID, 60*time.Second, "the new replica finishes it", status(domain.RolloutCompleted))
		seen := map[string]bool{}
		for _, it := range r.Items {
			if it.State != domain.ItemSuccess || seen[it.JobID] {
				t.Fatalf("item %+v", it)
			}
			seen[it.JobID] = true
		}
		var n int
		sqlDB, _ := e.p.Store.SQL()
		if err := sqlDB.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE kind = 'upgrade-security'`).Scan(&n); err != nil || n != 4 {
			t.Fatalf("%d upgrade jobs (%v): a server ran twice or not at all", n, err)
		}
	})
}

func TestRolloutApprovals(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		e := newEnv(t, db, 2, 20*time.Millisecond)
		ctx := context.Background()
		other := &domain.Principal{UserID: "admin-2", Username: "admin2", Roles: []string{domain.RoleAdmin}, Permissions: e.p.Admin.Permissions}
		u, err := e.p.Store.CreateUser(ctx, store.NewUser{Username: "admin2", Active: true, Roles: []string{domain.RoleAdmin}})
		if err != nil {
			t.Fatal(err)
		}
		other.UserID = u.ID
		mgr := e.p.Manager(t, "mgr")
		r, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true, RequireApproval: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != domain.RolloutAwaitingApproval || r.ApprovalID == "" {
			t.Fatalf("created %s %q", r.Status, r.ApprovalID)
		}
		// Nothing runs while it waits (the driver stepped since: a poke on create).
		e.ro.StepAll(ctx)
		if got, _ := e.p.Store.GetRollout(ctx, store.SystemScope, r.ID); got.Items[0].JobID != "" {
			t.Fatal("a job started before approval")
		}
		// The requester (also through an API key: same user) cannot approve.
		viaKey := *e.p.Admin
		viaKey.Method, viaKey.APIKeyID = domain.AuthAPIKey, "key-1"
		if _, err := e.ap.Decide(ctx, &viaKey, r.ApprovalID, true, "lgtm"); code(err) != "self_approval" {
			t.Fatalf("self approval: %v", err)
		}
		// A manager outside the servers' groups does not see it.
		if _, err := e.ap.Decide(ctx, mgr, r.ApprovalID, true, ""); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("manager out of scope: %v", err)
		}
		if l, _ := e.ap.List(ctx, mgr, ""); len(l) != 0 {
			t.Fatalf("manager lists %d approvals", len(l))
		}
		if l, _ := e.ap.List(ctx, other, domain.ApprovalPending); len(l) != 1 {
			t.Fatalf("second admin lists %d approvals", len(l))
		}
		a, err := e.ap.Decide(ctx, other, r.ApprovalID, true, "ok for tonight")
		if err != nil || a.Status != domain.ApprovalApproved {
			t.Fatalf("approve: %+v %v", a, err)
		}
		if _, err := e.ap.Decide(ctx, other, r.ApprovalID, false, ""); code(err) != "approval_decided" {
			t.Fatalf("decide twice: %v", err)
		}
		e.wait(t, r.ID, 30*time.Second, "approved rollout completes", status(domain.RolloutCompleted))

		// Rejected: the rollout never runs.
		r, err = e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true, RequireApproval: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.ap.Decide(ctx, other, r.ApprovalID, false, "not during the freeze"); err != nil {
			t.Fatal(err)
		}
		r = e.wait(t, r.ID, 10*time.Second, "rejected", status(domain.RolloutRejected))
		if c := r.Counts(); c[domain.ItemAborted] != 2 {
			t.Fatalf("rejected counts %v", c)
		}
		// The setting requires approval for every rollout; expiry rejects.
		if err := e.p.Store.PutSetting(ctx, rollout.SettingRequireApproval, true); err != nil {
			t.Fatal(err)
		}
		r, err = e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true})
		if err != nil || r.Status != domain.RolloutAwaitingApproval {
			t.Fatalf("with the setting: %s %v", r.Status, err)
		}
		e.ap.SetClock(func() time.Time { return time.Now().UTC().Add(approvals.DefaultTTL + time.Minute) })
		e.ap.ExpireDue(ctx)
		r = e.wait(t, r.ID, 10*time.Second, "expired", status(domain.RolloutRejected))
		a, _ = e.p.Store.GetApproval(ctx, r.ApprovalID)
		if a.Status != domain.ApprovalExpired {
			t.Fatalf("approval %s", a.Status)
		}
		entries, _, err := e.p.Store.ListAudit(ctx, store.AuditFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, en := range entries {
			seen[en.Action]++
		}
		if seen["approvals.request"] != 3 || seen["approvals.expire"] != 1 {
			t.Fatalf("audit %v", seen)
		}
	})
}

func TestRolloutDryRunShowsPackages(t *testing.T) {
	e := newEnv(t, "", 2, 20*time.Millisecond)
	ctx := context.Background()
	sqlDB, _ := e.p.Store.SQL()
	for _, q := range []string{
		`INSERT INTO server_outdated (server_id, name, arch, current, candidate, security, held) VALUES ('%s', 'openssl', 'amd64', '3.0.14', '3.0.15', true, false)`,
		`INSERT INTO server_outdated (server_id, name, arch, current, candidate, security, held) VALUES ('%s', 'vim', 'amd64', '9.0.1', '9.0.2', false, false)`,
		`INSERT INTO server_outdated (server_id, name, arch, current, candidate, security, held) VALUES ('%s', 'nginx', 'amd64', '1.22', '1.24', true, true)`,
	} {
		if _, err := sqlDB.ExecContext(ctx, fmt.Sprintf(q, e.ids[0])); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := e.ro.DryRun(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true, CanarySize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Rollout.Batches != 2 || len(plan.Items) != 2 || len(plan.Items[0].Packages) != 1 || plan.Items[0].Packages[0].Name != "openssl" || len(plan.Items[1].Packages) != 0 {
		t.Fatalf("security plan %+v", plan.Items)
	}
	plan, _ = e.ro.DryRun(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionAllUpdates, All: true})
	if len(plan.Items[0].Packages) != 2 {
		t.Fatalf("all-updates plan %+v", plan.Items[0])
	}
	if l, _ := e.ro.List(ctx, e.p.Admin, ""); len(l) != 0 {
		t.Fatalf("a dry run stored %d rollouts", len(l))
	}
}
