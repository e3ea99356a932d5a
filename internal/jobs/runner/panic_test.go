package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/jobs/runner"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// TestJobPanicIsRecovered: a job whose action panics in the worker (a
// parser meeting output it did not expect) is recovered, logged and counted
// for the health monitor; the job fails with a plain reason in its history,
// the server's lock is released, and the worker runs the next job.
func TestJobPanicIsRecovered(t *testing.T) {
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: fleetsim.DefaultTable()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	p := plane.Start(t, plane.Options{})
	key, _ := actions.NewManagementKey("t")
	srv := p.AddServer(t, "sim", f.Instances[0].Addr, f.Instances[0].AuthorizedHostKey(), key)
	panics := testutil.CountPanics(t)
	ctx := context.Background()

	runner.SetTestJobHook(func(kind string) { panic("injected panic in a " + kind + " job") })
	t.Cleanup(func() { runner.SetTestJobHook(nil) })
	j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	failed := p.WaitJob(t, j.ID, 30*time.Second)
	if failed.Status != domain.JobFailed || !strings.Contains(failed.Error, "internal error in the worker") {
		t.Fatalf("panicking job: %s %q", failed.Status, failed.Error)
	}
	if got := panics(); got != 1 {
		t.Fatalf("%d panics counted, want 1", got)
	}

	runner.SetTestJobHook(nil)
	j, err = p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatalf("the server is still locked after the panicking job: %v", err)
	}
	if done := p.WaitJob(t, j.ID, 60*time.Second); done.Status != domain.JobSuccess {
		t.Fatalf("the next job: %s %q", done.Status, done.Error)
	}
}
