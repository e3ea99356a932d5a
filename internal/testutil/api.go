package testutil

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// APIBinary returns the path of an lcm-api binary: $LCM_API_BIN when set
// (CI builds it once with the release ldflags), otherwise one built from
// this checkout once per test process.
func APIBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("LCM_API_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "lcm-api-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "lcm-api")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/api")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/api: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

var (
	testBuildOnce sync.Once
	testBuildPath string
	testBuildErr  error
)

// APITestBinary returns an lcm-api built with the lcmtest build tag
// ($LCM_API_TEST_BIN when set): the same program plus the test-only panic
// triggers (POST /api/v1/lcmtest/panic, LCM_TEST_PANIC_JOBS) that no normal
// build contains. The go build cache makes it cost one link after
// APIBinary's build.
func APITestBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("LCM_API_TEST_BIN"); p != "" {
		return p
	}
	testBuildOnce.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			testBuildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "lcm-api-lcmtest-")
		if err != nil {
			testBuildErr = err
			return
		}
		testBuildPath = filepath.Join(dir, "lcm-api")
		cmd := exec.Command("go", "build", "-tags", "lcmtest", "-o", testBuildPath, "./cmd/api")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			testBuildErr = fmt.Errorf("go build -tags lcmtest ./cmd/api: %v\n%s", err, out)
		}
	})
	if testBuildErr != nil {
		t.Fatal(testBuildErr)
	}
	return testBuildPath
}

// ModuleRoot returns the repository root (the directory of go.mod).
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}

// FreePort returns a free TCP port on 127.0.0.1.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// APIOptions configure StartAPI.
type APIOptions struct {
	// Dir holds config.json and data/; a temp dir when empty (reuse it to restart).
	Dir string
	// Dev starts with --dev (plain HTTP).
	Dev bool
	// DatabaseURL selects PostgreSQL; empty means SQLite.
	DatabaseURL string
	// Config is merged into config.json before the first start.
	Config map[string]any
	Args   []string
	Env    []string
	// NoWait returns at once without waiting for health (for failure tests).
	NoWait bool
	// Bin is the lcm-api binary to start (default APIBinary).
	Bin string
}

// API is a running lcm-api process.
type API struct {
	t             testing.TB
	Dir           string
	BaseURL       string
	Port          int
	AdminPassword string
	Client        *http.Client
	cmd           *exec.Cmd
	stdout        *syncBuffer
	stderr        *syncBuffer
	done          chan struct{}
	exitErr       error
}

// StartAPI starts the real lcm-api binary in a temp dir and waits until
// /api/v1/health answers ok. The process is stopped when the test ends.
func StartAPI(t testing.TB, o APIOptions) *API {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	cfgPath := filepath.Join(o.Dir, "config.json")
	port := FreePort(t)
	cfg := map[string]any{}
	if b, err := os.ReadFile(cfgPath); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatalf("existing config.json: %v", err)
		}
	} else {
		cfg["jwt_secret"] = strings.Repeat("t", 48)
		cfg["agent_port"] = 0
		cfg["data_dir"] = "data"
	}
	cfg["port"] = port
	if o.DatabaseURL != "" {
		cfg["database"] = map[string]any{"url": o.DatabaseURL}
	}
	for k, v := range o.Config {
		cfg[k] = v
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-config", cfgPath}
	if o.Dev {
		args = append(args, "--dev")
	}
	args = append(args, o.Args...)
	a := &API{t: t, Dir: o.Dir, Port: port, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	bin := o.Bin
	if bin == "" {
		bin = APIBinary(t)
	}
	a.cmd = exec.Command(bin, args...)
	a.cmd.Env = append(os.Environ(), o.Env...)
	a.cmd.Stdout, a.cmd.Stderr = a.stdout, a.stderr
	scheme := "https"
	if o.Dev {
		scheme = "http"
	}
	a.BaseURL = fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
	a.Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // self-signed; tests pin nothing
	}}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.exitErr = a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			t.Logf("lcm-api stderr:\n%s", a.Stderr())
		}
	})
	if o.NoWait {
		return a
	}
	a.WaitHealthy(15 * time.Second)
	if m := regexp.MustCompile(`password: (\S+)`).FindStringSubmatch(a.Stdout()); m != nil {
		a.AdminPassword = m[1]
	}
	return a
}

// ClientFor returns an API client (Do) for an lcm-api that another
// supervisor started (systemd in TestSystemdSupervisesAPI); the process
// methods (Stop, Wait, Stderr) are not for it.
func ClientFor(t testing.TB, baseURL string) *API {
	return &API{t: t, BaseURL: baseURL, Client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}}
}

// WaitHealthy waits until /api/v1/health answers 200.
func (a *API) WaitHealthy(timeout time.Duration) {
	a.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-a.done:
			a.t.Fatalf("lcm-api exited before it was healthy: %v\nstderr:\n%s", a.exitErr, a.Stderr())
		default:
		}
		resp, err := a.Client.Get(a.BaseURL + "/api/v1/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.t.Fatalf("lcm-api not healthy after %s\nstderr:\n%s", timeout, a.Stderr())
}

// Stop sends SIGTERM and waits (up to 15 s) for the process to end.
func (a *API) Stop() error {
	select {
	case <-a.done:
		return a.exitErr
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(15 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
	return a.exitErr
}

// Kill ends the process with SIGKILL.
func (a *API) Kill() {
	_ = a.cmd.Process.Kill()
	<-a.done
}

// Wait waits for the process to exit by itself and returns its exit code.
func (a *API) Wait(timeout time.Duration) int {
	a.t.Helper()
	select {
	case <-a.done:
	case <-time.After(timeout):
		a.t.Fatalf("lcm-api still running after %s", timeout)
	}
	return a.cmd.ProcessState.ExitCode()
}

// Done is closed when the process has exited.
func (a *API) Done() <-chan struct{} { return a.done }

// Stdout and Stderr return what the process printed so far.
func (a *API) Stdout() string { return a.stdout.String() }

// Stderr returns the log output so far.
func (a *API) Stderr() string { return a.stderr.String() }

// Do sends a request with an optional JSON body and bearer token and
// decodes a JSON response into out (when non-nil). It returns the response
// (body already read) and the raw body.
func (a *API) Do(method, path, token string, body, out any) (*http.Response, []byte) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		if raw, ok := body.([]byte); ok {
			rd = bytes.NewReader(raw)
		} else {
			b, err := json.Marshal(body)
			if err != nil {
				a.t.Fatal(err)
			}
			rd = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequestWithContext(context.Background(), method, a.BaseURL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		if strings.HasPrefix(token, "lcm_") {
			req.Header.Set("X-API-Key", token)
		} else {
			req.Header.Set("Authorization", "Bearer "+token)
		}
	}
	resp, err := a.Client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			a.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return resp, raw
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Lines returns the output as lines (for log assertions).
func Lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// Signal sends a signal to the process.
func (a *API) Signal(sig os.Signal) error { return a.cmd.Process.Signal(sig) }

// PID returns the process id.
func (a *API) PID() int { return a.cmd.Process.Pid }
