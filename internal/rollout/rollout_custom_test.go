package rollout_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/rollout"
	"github.com/lcmproject/lcm/internal/store"
)

// TestRolloutRunsCustomAction: a custom action is a rollout action
// (custom:<id>, listed by Actions). Its commands are frozen when the
// rollout is created: an edit afterwards does not change the jobs of
// later batches. A custom action that requires approval makes its rollout
// wait for one. A server in restricted sudo mode is refused (custom
// actions need full sudo).
func TestRolloutRunsCustomAction(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		e := newEnv(t, db, 3, 20*time.Millisecond)
		ctx := context.Background()
		ca, err := e.p.Store.SaveCustomAction(ctx, domain.CustomAction{Name: "say hello", Commands: []string{"echo hello-v1"}})
		if err != nil {
			t.Fatal(err)
		}
		acts, err := e.ro.Actions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(acts, func(a rollout.Action) bool { return a.Name == "custom:"+ca.ID && a.Label == "Custom action: say hello" }) {
			t.Fatalf("actions %+v lack the custom action", acts)
		}
		if err := e.p.Store.RecordSudoMode(ctx, e.ids[2], string(domain.SudoRestricted), time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		// A canary of one server, a pause, then the other two: the edit
		// below happens before the second batch starts.
		r, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: "custom:" + ca.ID, All: true, CanarySize: 1, BatchSize: 2, PauseSeconds: 3600,
			FailureThreshold: 2}) // a refusal counts as a failure
		if err != nil {
			t.Fatal(err)
		}
		r = e.wait(t, r.ID, 60*time.Second, "first batch done", func(r domain.Rollout) bool { return r.CurrentBatch == 1 })
		ca.Commands = []string{"echo hello-v2"}
		if _, err := e.p.Store.SaveCustomAction(ctx, ca); err != nil {
			t.Fatal(err)
		}
		// End the pause now (as if an hour had passed).
		if ok, err := e.p.Store.UpdateRollout(ctx, r.ID, []string{domain.RolloutRunning}, store.RolloutUpdate{NextAt: ptr(time.Now().UTC())}, time.Now().UTC()); err != nil || !ok {
			t.Fatalf("end the pause: %v %v", ok, err)
		}
		e.ro.Poke()
		r = e.wait(t, r.ID, 60*time.Second, "rollout completes", func(r domain.Rollout) bool { return r.Status == domain.RolloutCompleted })
		ran := 0
		for _, it := range r.Items {
			if it.ServerID == e.ids[2] {
				if it.State != domain.ItemRefused || !strings.Contains(it.Reason, "restricted_mode") {
					t.Fatalf("restricted server: %+v", it)
				}
				continue
			}
			if it.State != domain.ItemSuccess || it.JobID == "" {
				t.Fatalf("item %+v", it)
			}
			j, err := e.p.Store.GetJob(ctx, store.SystemScope, it.JobID)
			if err != nil {
				t.Fatal(err)
			}
			var p actions.CustomParams
			if err := json.Unmarshal(j.Params, &p); err != nil || j.Kind != domain.JobCustomAction || !slices.Equal(p.Commands, []string{"echo hello-v1"}) {
				t.Fatalf("job of %s: kind %s params %s", it.ServerName, j.Kind, j.Params)
			}
			out, err := e.p.Jobs.Output(ctx, e.p.Admin, it.JobID, 0)
			if err != nil || !strings.Contains(string(out.Output), "hello-v1") {
				t.Fatalf("output of %s: %q %v", it.ServerName, out.Output, err)
			}
			ran++
		}
		if ran != 2 {
			t.Fatalf("%d servers ran the custom action", ran)
		}

		// A custom action that requires approval: its rollout waits.
		ca.RequiresApproval = true
		if _, err := e.p.Store.SaveCustomAction(ctx, ca); err != nil {
			t.Fatal(err)
		}
		r, err = e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: "custom:" + ca.ID, ServerIDs: e.ids[:1]})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != domain.RolloutAwaitingApproval || r.ApprovalID == "" {
			t.Fatalf("rollout of a custom action that requires approval: %s %q", r.Status, r.ApprovalID)
		}
		if _, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: "custom:no-such-action", All: true}); code(err) != "unknown_action" {
			t.Fatalf("unknown custom action: %v", err)
		}
	})
}

// TestRolloutLeavesOutMaintenance: a server in maintenance mode is left
// out of a rollout (skipped with the reason, not a failure), in the dry
// run and when its batch comes.
func TestRolloutLeavesOutMaintenance(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		e := newEnv(t, db, 3, 20*time.Millisecond)
		ctx := context.Background()
		if err := e.p.Store.StartMaintenance(ctx, domain.Maintenance{ServerID: e.ids[1], Reason: "disk swap", StartedBy: "admin",
			StartedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
		plan, err := e.ro.DryRun(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range plan.Items {
			if (it.ServerID == e.ids[1]) != (it.Skip == rollout.MaintenanceReason) {
				t.Fatalf("dry run item %+v", it)
			}
		}
		r, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true, FailureThreshold: 1})
		if err != nil {
			t.Fatal(err)
		}
		r = e.wait(t, r.ID, 60*time.Second, "rollout completes", status(domain.RolloutCompleted))
		for _, it := range r.Items {
			switch {
			case it.ServerID == e.ids[1]:
				if it.State != domain.ItemSkipped || it.JobID != "" || it.Reason != rollout.MaintenanceReason {
					t.Fatalf("server in maintenance: %+v", it)
				}
			case it.State != domain.ItemSuccess:
				t.Fatalf("item %+v", it)
			}
		}
	})
}

// TestRolloutConcurrencyPerBatch: within a batch at most Concurrency jobs
// are in flight, and exactly that many when the batch has more servers:
// from the recorded job times, at no job's submission were more of the
// batch's jobs unfinished than allowed.
func TestRolloutConcurrencyPerBatch(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		e := newEnv(t, db, 8, 100*time.Millisecond)
		ctx := context.Background()
		r, err := e.ro.Create(ctx, e.p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true, BatchSize: 4, Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		r = e.wait(t, r.ID, 90*time.Second, "rollout completes", status(domain.RolloutCompleted))
		type span struct{ start, end time.Time }
		batches := map[int][]span{}
		for _, it := range r.Items {
			j, err := e.p.Store.GetJob(ctx, store.SystemScope, it.JobID)
			if err != nil || j.FinishedAt == nil {
				t.Fatalf("job of %+v: %+v %v", it, j, err)
			}
			batches[it.Batch] = append(batches[it.Batch], span{j.CreatedAt, *j.FinishedAt})
		}
		if len(batches) != 2 {
			t.Fatalf("%d batches", len(batches))
		}
		for b, spans := range batches {
			peak := 0
			for _, s := range spans {
				inFlight := 0
				for _, o := range spans {
					if !o.start.After(s.start) && o.end.After(s.start) {
						inFlight++
					}
				}
				peak = max(peak, inFlight)
			}
			if peak != 2 {
				t.Fatalf("batch %d: at most %d jobs in flight, want exactly the concurrency 2", b, peak)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }
