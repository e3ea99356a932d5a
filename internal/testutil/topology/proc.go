package topology

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is one process of the topology. Its stdout and stderr are
// appended to <dir>/logs/<name>.log across restarts (the secret scan
// reads them).
type Proc struct {
	t    testing.TB
	Name string
	bin  string
	args []string
	env  []string
	dir  string
	Log  string // the log file

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	// exit is the last exit status (-1 for a signal).
	exit int
	// starts counts Start calls (restarts included).
	starts int
}

func newProc(t testing.TB, dir, name, bin string, args, env []string) *Proc {
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	return &Proc{t: t, Name: name, bin: bin, args: args, env: env, dir: dir, Log: filepath.Join(logs, name+".log")}
}

// Start starts the process (again, after it ended).
func (p *Proc) Start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			p.t.Fatalf("%s: started while running", p.Name)
		}
	}
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.starts++
	fmt.Fprintf(f, "=== start %d at %s ===\n", p.starts, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: a kill reaches what it started, and a ^C of
	// the test run does not reach it before the cleanup does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		p.t.Fatalf("%s: %v", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	go func() {
		_ = cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.exit = cmd.ProcessState.ExitCode()
		p.mu.Unlock()
		close(done)
	}()
}

// Running reports whether the process is up.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Done is closed when the current run ended.
func (p *Proc) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return p.done
}

// ExitCode is the last run's exit code (-1 after a signal).
func (p *Proc) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// PID is the current run's process id.
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig syscall.Signal) {
	if pid := p.PID(); pid > 0 {
		_ = syscall.Kill(pid, sig)
	}
}

// Stop sends SIGTERM and waits up to 20 s, then kills.
func (p *Proc) Stop() {
	if !p.Running() {
		return
	}
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		p.Kill()
	}
}

// Kill ends the process with SIGKILL (kill -9) and waits for it.
func (p *Proc) Kill() {
	if !p.Running() {
		return
	}
	if pid := p.PID(); pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // the group: nginx's workers too
	}
	<-p.Done()
}

// Wait waits for the process to end by itself and returns its exit code;
// ok is false after the timeout.
func (p *Proc) Wait(timeout time.Duration) (code int, ok bool) {
	select {
	case <-p.Done():
		return p.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

// Tail returns the last n bytes of the log (for failure messages).
func (p *Proc) Tail(n int) string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
