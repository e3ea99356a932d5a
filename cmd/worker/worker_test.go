package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func workerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lcm-worker-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "lcm-worker")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type workerProc struct {
	cmd     *exec.Cmd
	logs    *strings.Builder
	mu      *sync.Mutex
	metrics string // host:port of /metrics and /healthz
}

// startWorkerProc starts lcm-worker configured as in a container: the
// environment only, the password in a secret file.
func startWorkerProc(t *testing.T, url, caFile, user, password, segments string) *workerProc {
	t.Helper()
	pwFile := filepath.Join(t.TempDir(), "nats_password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	cmd := exec.Command(workerBinary(t))
	cmd.Env = append(os.Environ(), "LCM_WORKER_NATS_URL="+url, "LCM_WORKER_NATS_USER="+user, "LCM_WORKER_NATS_CA="+caFile,
		"LCM_WORKER_SEGMENTS="+segments, "LCM_WORKER_CONCURRENCY=8", "LCM_WORKER_NATS_PASSWORD_FILE="+pwFile,
		"LCM_WORKER_METRICS_ADDR="+metricsAddr)
	w := &workerProc{cmd: cmd, logs: &strings.Builder{}, mu: &sync.Mutex{}, metrics: metricsAddr}
	pr, pw := io.Pipe()
	cmd.Stderr, cmd.Stdout = pw, pw
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			w.mu.Lock()
			w.logs.Write(buf[:n])
			w.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		pw.Close()
		if t.Failed() {
			t.Logf("worker log:\n%s", w.log())
		}
	})
	return w
}

func (w *workerProc) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.logs.String()
}

// slowApt prints lines slowly, so a job is reliably mid-run when the test
// strikes.
func slowApt(lines int, every time.Duration) (*fleetsim.Table, string) {
	var want strings.Builder
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&want, "Setting up package-%03d (1.%d) ...\n", i, i)
	}
	parts := strings.SplitAfter(want.String(), "\n")
	t := fleetsim.DefaultTable()
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "apt-get") }, func(ctx context.Context, r *fleetsim.Request) int {
		for _, l := range parts {
			select {
			case <-ctx.Done():
				return 137
			case <-time.After(every):
			}
			_, _ = io.WriteString(r.Stdout, l)
		}
		return 0
	})
	return t, want.String()
}

func waitOutput(t *testing.T, p *plane.Plane, id string) {
	t.Helper()
	testutil.WaitFor(t, 20*time.Second, "job output flowing", func() bool {
		j, err := p.Jobs.Get(context.Background(), p.Admin, id)
		return err == nil && j.OutputBytes > 0
	})
}

// TestSeparateWorkerProcess runs lcm-worker as its own process against a
// control plane whose embedded NATS listens (TLS, least-privilege worker
// account): a job runs; kill -9 of the worker mid-job fails the job with
// the reason in its history and frees the server; a restart of the control
// plane mid-job loses no output chunk.
func TestSeparateWorkerProcess(t *testing.T) {
	table, want := slowApt(60, 100*time.Millisecond)
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: table})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	port := testutil.FreePort(t)
	opts := plane.Options{NoWorker: true, Listen: fmt.Sprintf("127.0.0.1:%d", port), DataDir: t.TempDir(),
		HeartbeatTimeout: 12 * time.Second, ReapInterval: 500 * time.Millisecond,
		Workers: []plane.WorkerAccount{{User: "w-default", Password: "w-secret", Segments: []string{"default"}}}}
	p := plane.Start(t, opts)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, p.CACertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("tls://127.0.0.1:%d", port)
	key, _ := actions.NewManagementKey("t")
	srv := p.AddServer(t, "sim", f.Instances[0].Addr, f.Instances[0].AuthorizedHostKey(), key)
	ctx := context.Background()

	// 1. kill -9 mid-job.
	w := startWorkerProc(t, url, ca, "w-default", "w-secret", "default")
	testutil.WaitFor(t, 20*time.Second, "worker /healthz answers 200 (connected to NATS)", func() bool {
		resp, err := http.Get("http://" + w.metrics + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	j1, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p, j1.ID)
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	failed := p.WaitJob(t, j1.ID, 40*time.Second)
	if failed.Status != domain.JobFailed || !strings.Contains(failed.Error, "worker vanished") {
		t.Fatalf("killed worker's job: %s %q", failed.Status, failed.Error)
	}
	hist, _, _ := p.Jobs.History(ctx, p.Admin, domain.JobFilter{ServerID: srv.ID})
	if len(hist) != 1 || !strings.Contains(hist[0].Error, "no heartbeat") {
		t.Fatalf("history lacks the reason: %+v", hist)
	}

	// 2. The lock is free; a new worker takes the next job; the control
	// plane restarts while it runs.
	startWorkerProc(t, url, ca, "w-default", "w-secret", "default")
	j2, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatalf("server still locked after the vanished worker: %v", err)
	}
	waitOutput(t, p, j2.ID)
	p.Stop()
	p = plane.Start(t, opts)
	done := p.WaitJob(t, j2.ID, 60*time.Second)
	if done.Status != domain.JobSuccess {
		t.Fatalf("job across the restart: %s %q", done.Status, done.Error)
	}
	var out domain.JobOutput
	testutil.WaitFor(t, 30*time.Second, "output complete", func() bool {
		out, err = p.Jobs.Output(ctx, p.Admin, j2.ID, 0)
		return err == nil && out.Complete
	})
	// The upgrade's output must be there completely and exactly once (the
	// inventory refresh that follows an upgrade appends its own lines).
	if strings.Count(string(out.Output), want) != 1 {
		t.Fatalf("output across the restart lost or repeated bytes: got %d bytes\n%s", len(out.Output), out.Output)
	}
}

// TestOptionsFromEnv: LCM_WORKER_CONCURRENCY and the password file are
// read; a flag wins; bad values are refused with the variable named.
func TestOptionsFromEnv(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pw, []byte("s3cret\n"), 0o600)
	t.Setenv("LCM_WORKER_NATS_PASSWORD", "")
	t.Setenv("LCM_WORKER_NATS_PASSWORD_FILE", pw)
	t.Setenv("LCM_WORKER_CONCURRENCY", "200")
	o, err := parse(nil, io.Discard)
	if err != nil || o.concurrency != 200 || o.password != "s3cret" {
		t.Fatalf("%+v %v", o, err)
	}
	if o, err = parse([]string{"-concurrency", "5"}, io.Discard); err != nil || o.concurrency != 5 {
		t.Fatalf("flag over env: %+v %v", o, err)
	}
	for _, bad := range []string{"many", "0", "-3"} {
		t.Setenv("LCM_WORKER_CONCURRENCY", bad)
		if _, err := parse(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "LCM_WORKER_CONCURRENCY") {
			t.Errorf("LCM_WORKER_CONCURRENCY=%s: %v", bad, err)
		}
	}
	t.Setenv("LCM_WORKER_CONCURRENCY", "")
	t.Setenv("LCM_WORKER_NATS_PASSWORD", "also")
	if _, err := parse(nil, io.Discard); err == nil {
		t.Error("password and password file both set: accepted")
	}
}

// TestWorkerNeedsURL: the worker refuses to start without a NATS URL.
func TestWorkerNeedsURL(t *testing.T) {
	t.Setenv("LCM_WORKER_NATS_URL", "")
	err := run(context.Background(), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-nats-url") {
		t.Fatalf("got %v", err)
	}
}
