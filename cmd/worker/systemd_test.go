package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// TestSystemdSupervisesWorker runs lcm-worker under a real systemd
// (testutil.StartSystemd) with the supervision of
// deploy/systemd/lcm-worker.service and its settings as LCM_WORKER_*
// variables, as the unit's EnvironmentFile gives them: start returns once
// the worker sent READY=1 (Type=notify) connected to NATS, it runs a job,
// systemd's watchdog is armed, and after ten job panics it exits 70 and
// systemd starts it again.
func TestSystemdSupervisesWorker(t *testing.T) {
	sd := testutil.StartSystemd(t)
	table := fleetsim.DefaultTable()
	fleetsim.HandleRefresh(table, fleetsim.RefreshOptions{Upgradable: 2, Security: 1})
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	port := testutil.FreePort(t)
	p := plane.Start(t, plane.Options{NoWorker: true, Listen: fmt.Sprintf("127.0.0.1:%d", port), DataDir: t.TempDir(),
		Workers: []plane.WorkerAccount{{User: "w-default", Password: "w-secret", Segments: []string{"default"}}}})
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, p.CACertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := actions.NewManagementKey("t")
	srv := p.AddServer(t, "sim", f.Instances[0].Addr, f.Instances[0].AuthorizedHostKey(), key)
	logPath := filepath.Join(dir, "lcm-worker.log")
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("lcm-worker output:\n%s", b)
		}
	}()
	env := []string{"LCM_WORKER_NATS_URL=" + fmt.Sprintf("tls://127.0.0.1:%d", port), "LCM_WORKER_NATS_USER=w-default",
		"LCM_WORKER_NATS_PASSWORD=w-secret", "LCM_WORKER_NATS_CA=" + ca, "LCM_WORKER_SEGMENTS=default"}
	unit := filepath.Join("..", "..", "deploy", "systemd", "lcm-worker.service")
	sd.InstallDerived("lcm-worker", unit, panicWorkerBinary(t), env, logPath)
	sd.MustCtl("start", "lcm-worker")
	st := sd.Show("lcm-worker")
	if st["ActiveState"] != "active" || st["Type"] != "notify" || st["WatchdogUSec"] != "1min 30s" {
		t.Fatalf("after start: ActiveState=%s Type=%s WatchdogUSec=%s", st["ActiveState"], st["Type"], st["WatchdogUSec"])
	}
	ctx := context.Background()
	j, err := p.Fleet.Refresh(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.WaitJob(t, j.ID, 60*time.Second); got.Status != domain.JobSuccess {
		t.Fatalf("a job through the supervised worker: %s %q", got.Status, got.Error)
	}

	// Ten panicking jobs: exit 70, and systemd starts the worker again.
	sd.InstallDerived("lcm-worker", unit, panicWorkerBinary(t), append(env, "LCM_TEST_PANIC_JOBS=1"), logPath)
	sd.MustCtl("restart", "lcm-worker")
	before := sd.Restarts("lcm-worker")
	first := sd.MainPID("lcm-worker")
	for i := range health.MaxPanics {
		j, err := p.Fleet.Refresh(ctx, p.Admin, srv.ID)
		if err != nil {
			t.Fatalf("job %d: %v", i+1, err)
		}
		if got := p.WaitJob(t, j.ID, 60*time.Second); got.Status != domain.JobFailed {
			t.Fatalf("panicking job %d: %s %q", i+1, got.Status, got.Error)
		}
	}
	testutil.WaitFor(t, 60*time.Second, "systemd restarted lcm-worker after exit 70", func() bool {
		st := sd.Show("lcm-worker")
		return st["NRestarts"] == fmt.Sprint(before+1) && st["ActiveState"] == "active" && st["MainPID"] != fmt.Sprint(first)
	})
	b, _ := os.ReadFile(logPath)
	if !strings.Contains(string(b), "stopping for a controlled restart") {
		t.Fatal("no controlled restart in the output")
	}
}
