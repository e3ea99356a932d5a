package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

var (
	testBuildOnce sync.Once
	testBinPath   string
	testBuildErr  error
)

// panicWorkerBinary builds lcm-worker with the lcmtest build tag, the only
// build in which LCM_TEST_PANIC_JOBS=1 makes every job panic
// (internal/jobs/runner/testhook_lcmtest.go). Production builds have no
// such trigger.
func panicWorkerBinary(t *testing.T) string {
	t.Helper()
	testBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lcm-worker-lcmtest-")
		if err != nil {
			testBuildErr = err
			return
		}
		testBinPath = filepath.Join(dir, "lcm-worker")
		if out, err := exec.Command("go", "build", "-tags", "lcmtest", "-o", testBinPath, ".").CombinedOutput(); err != nil {
			testBuildErr = fmt.Errorf("go build -tags lcmtest: %v\n%s", err, out)
		}
	})
	if testBuildErr != nil {
		t.Fatal(testBuildErr)
	}
	return testBinPath
}

// TestTenJobPanicsRestartTheWorker: the real lcm-worker process recovers a
// panic in a job (the job fails with a plain reason and frees its server),
// counts it with its health monitor, and after the tenth in the window
// stops gracefully with exit code 70 (systemd's Restart=always starts it
// again).
func TestTenJobPanicsRestartTheWorker(t *testing.T) {
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: fleetsim.DefaultTable()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	port := testutil.FreePort(t)
	p := plane.Start(t, plane.Options{NoWorker: true, Listen: fmt.Sprintf("127.0.0.1:%d", port), DataDir: t.TempDir(),
		Workers: []plane.WorkerAccount{{User: "w-default", Password: "w-secret", Segments: []string{"default"}}}})
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, p.CACertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := actions.NewManagementKey("t")
	srv := p.AddServer(t, "sim", f.Instances[0].Addr, f.Instances[0].AuthorizedHostKey(), key)

	cmd := exec.Command(panicWorkerBinary(t), "-nats-url", fmt.Sprintf("tls://127.0.0.1:%d", port), "-nats-user", "w-default",
		"-nats-ca", ca, "-segments", "default", "-concurrency", "4")
	cmd.Env = append(os.Environ(), "LCM_WORKER_NATS_PASSWORD=w-secret", "LCM_TEST_PANIC_JOBS=1")
	var logs syncLog
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("worker log:\n%s", logs.String())
		}
	})
	ctx := context.Background()
	for i := 1; i <= health.MaxPanics; i++ {
		select {
		case err := <-exited:
			t.Fatalf("the worker ended after %d panics: %v", i-1, err)
		default:
		}
		j, err := p.Fleet.Refresh(ctx, p.Admin, srv.ID)
		if err != nil {
			t.Fatalf("job %d: %v (the server is still locked by the last panicking job?)", i, err)
		}
		got := p.WaitJob(t, j.ID, 60*time.Second)
		if got.Status != domain.JobFailed || !strings.Contains(got.Error, "internal error in the worker") {
			t.Fatalf("job %d: %s %q", i, got.Status, got.Error)
		}
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker kept running after the tenth panic")
	}
	if code := cmd.ProcessState.ExitCode(); code != health.ExitSelfRestart {
		t.Fatalf("exit code %d, want %d", code, health.ExitSelfRestart)
	}
	if n := strings.Count(logs.String(), `msg="recovered panic"`); n != health.MaxPanics {
		t.Fatalf("%d recovered panics logged, want %d", n, health.MaxPanics)
	}
}

type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
