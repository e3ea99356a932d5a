package agentgw

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/pkg/agentproto"
)

var (
	agentBinOnce sync.Once
	agentBin     string
	agentBinErr  error
)

// agentBinary builds cmd/agent once per test process.
func agentBinary(t *testing.T) string {
	t.Helper()
	agentBinOnce.Do(func() {
		root, err := testutil.ModuleRoot()
		if err != nil {
			agentBinErr = err
			return
		}
		dir, err := os.MkdirTemp("", "lcm-agent-bin-")
		if err != nil {
			agentBinErr = err
			return
		}
		agentBin = filepath.Join(dir, "lcm-agent")
		cmd := exec.Command("go", "build", "-o", agentBin, "./cmd/agent")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			agentBinErr = errors.New("go build ./cmd/agent: " + err.Error() + "\n" + string(out))
		}
	})
	if agentBinErr != nil {
		t.Fatal(agentBinErr)
	}
	return agentBin
}

// syncBuffer is a goroutine-safe bytes.Buffer for process output.
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

// startAgent enrolls a real lcm-agent process with a token from Enroll,
// starts `lcm-agent run` and waits until it announces itself online.
func startAgent(t *testing.T, e *env) string {
	t.Helper()
	bin := agentBinary(t)
	token, id, err := Enroll(context.Background(), e.creds, "server-1", e.url, e.fp)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "lcm-agent", "agent.json")
	if out, err := exec.Command(bin, "enroll", "-config", cfg, token).CombinedOutput(); err != nil {
		t.Fatalf("lcm-agent enroll: %v\n%s", err, out)
	}
	if st, err := os.Stat(cfg); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("agent config: %v %v", err, st)
	}
	// Enrollment spent the token.
	if out, err := exec.Command(bin, "enroll", "-force", "-config", cfg+".2", token).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "rejected the enrollment token") {
		t.Fatalf("second enroll with the same token: %v\n%s", err, out)
	}
	status := e.natsInbox(t, id, agentproto.ChannelStatus)
	logs := &syncBuffer{}
	cmd := exec.Command(bin, "run", "-config", cfg)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("lcm-agent run exited with %v\n%s", err, logs.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("lcm-agent did not stop on SIGINT\n%s", logs.String())
		}
		if t.Failed() {
			t.Logf("lcm-agent log:\n%s", logs.String())
		}
	})
	for {
		m, err := agentproto.Decode(recv(t, status))
		if s, ok := m.(*agentproto.Status); err == nil && ok && s.State == agentproto.StateOnline {
			return id
		}
	}
}

func TestExecutorThroughRealAgent(t *testing.T) {
	e := newEnv(t, 0)
	id := startAgent(t, e)
	ex := NewExecutor(e.bus, id)
	defer ex.Close()

	t.Run("output and exit code", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		res, err := ex.Run(context.Background(), remote.Command{Cmd: "echo hello; echo oops >&2; exit 3", Stdout: &stdout, Stderr: &stderr})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 3 || stdout.String() != "hello\n" || stderr.String() != "oops\n" {
			t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, stdout.String(), stderr.String())
		}
	})

	t.Run("stdin and large output in order", func(t *testing.T) {
		var stdout bytes.Buffer
		res, err := ex.Run(context.Background(), remote.Command{Cmd: "cat; seq 1 200000",
			Stdin: strings.NewReader("first\n"), Stdout: &stdout})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%v %+v", err, res)
		}
		want, _ := exec.Command("seq", "1", "200000").Output()
		if stdout.String() != "first\n"+string(want) {
			t.Fatalf("output of %d bytes differs from the expected %d", stdout.Len(), len(want)+6)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w := &cancelOn{marker: "started", cancel: cancel}
		_, err := ex.Run(ctx, remote.Command{Cmd: "echo started; sleep 300", Stdout: w})
		if !errors.Is(err, remote.ErrAborted) {
			t.Fatalf("cancelled run: %v", err)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		_, err := ex.Run(context.Background(), remote.Command{Cmd: "sleep 300", Timeout: 200 * time.Millisecond})
		if !errors.Is(err, remote.ErrTimeout) {
			t.Fatalf("timed-out run: %v", err)
		}
	})
}

func TestExecutorAgentOffline(t *testing.T) {
	e := newEnv(t, 0)
	_, id, err := Enroll(context.Background(), e.creds, "server-1", e.url, e.fp)
	if err != nil {
		t.Fatal(err)
	}
	ex := NewExecutor(e.bus, id)
	ex.DispatchTimeout = 100 * time.Millisecond
	if _, err := ex.Run(context.Background(), remote.Command{Cmd: "true"}); !errors.Is(err, remote.ErrUnreachable) {
		t.Fatalf("offline agent: %v", err)
	}
	ex.Close()
	if _, err := ex.Run(context.Background(), remote.Command{Cmd: "true"}); !errors.Is(err, remote.ErrUnreachable) {
		t.Fatalf("closed executor: %v", err)
	}
}

// cancelOn cancels a context once the output contains marker.
type cancelOn struct {
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.marker) {
		c.cancel()
	}
	return len(p), nil
}
