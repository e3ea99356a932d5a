package sshexec_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
)

func dial(t *testing.T, tg sshexec.Target) *sshexec.Client {
	t.Helper()
	c, err := sshexec.Dial(context.Background(), tg)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// syncBuffer is a bytes.Buffer safe for the output copiers and the test.
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

func TestRunExitCodesOutputStdin(t *testing.T) {
	c := dial(t, newExecServer(t, false).target())
	tests := []struct {
		name           string
		cmd            string
		stdin          io.Reader
		code           int
		stdout, stderr string
	}{
		{"ok", "echo hello", nil, 0, "hello\n", ""},
		{"exit code", "echo out; echo err >&2; exit 3", nil, 3, "out\n", "err\n"},
		{"LC_ALL is C", `echo "$LC_ALL"`, nil, 0, "C\n", ""},
		{"no stdin reads EOF", "cat; echo done", nil, 0, "done\n", ""},
		{"stdin", "tr a-z A-Z", strings.NewReader("abc\n"), 0, "ABC\n", ""},
		{"large stdin", "wc -c", bytes.NewReader(bytes.Repeat([]byte("x"), 200_000)), 0, "200000\n", ""},
		{"quotes survive", `printf '%s\n' "it's" '$HOME'`, nil, 0, "it's\n$HOME\n", ""},
		{"killed by signal", "kill -TERM $$", nil, 143, "", "Terminated\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb syncBuffer
			res, err := c.Run(context.Background(), remote.Command{Cmd: tt.cmd, Stdin: tt.stdin, Stdout: &out, Stderr: &errb})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if res.ExitCode != tt.code || strings.TrimSpace(out.String()) != strings.TrimSpace(tt.stdout) || errb.String() != tt.stderr {
				t.Fatalf("got code %d stdout %q stderr %q; want %d %q %q", res.ExitCode, out.String(), errb.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

func TestRunSudo(t *testing.T) {
	testutil.RequireTool(t, "sudo")
	c := dial(t, newExecServer(t, false).target())
	var out syncBuffer
	res, err := c.Run(context.Background(), remote.Command{Cmd: `id -u; echo "$LC_ALL"`, Sudo: true, Stdout: &out})
	if err != nil || res.ExitCode != 0 || out.String() != "0\nC\n" {
		t.Fatalf("sudo run: %v code %d out %q", err, res.ExitCode, out.String())
	}
}

// chanWriter reports each write on a channel.
type chanWriter chan string

func (c chanWriter) Write(p []byte) (int, error) { c <- string(p); return len(p), nil }

// TestRunStreams proves output arrives while the command still runs: the
// command waits for stdin that the test sends only after seeing "first".
func TestRunStreams(t *testing.T) {
	c := dial(t, newExecServer(t, false).target())
	pr, pw := io.Pipe()
	out := make(chanWriter, 10)
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), remote.Command{Cmd: "echo first; read x; echo second:$x", Stdin: pr, Stdout: out})
		done <- err
	}()
	if got := <-out; got != "first\n" {
		t.Fatalf("first chunk %q", got)
	}
	fmt.Fprintln(pw, "go")
	pw.Close()
	if got := <-out; got != "second:go\n" {
		t.Fatalf("second chunk %q", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// remoteSleep returns a unique sleep argument and a func reporting whether
// a process with it runs on this machine.
func remoteSleep(t *testing.T, pgrep func(pattern string) bool) (string, func() bool) {
	arg := fmt.Sprintf("1000.%06d", time.Now().UnixNano()%1_000_000)
	return arg, func() bool { return pgrep("sleep " + arg) }
}

func localPgrep(pattern string) bool { return exec.Command("pgrep", "-f", pattern).Run() == nil }

func TestAbortKillsRemoteProcessGroup(t *testing.T) {
	testutil.RequireTool(t, "pgrep")
	tests := []struct {
		name     string
		noSignal bool // the server ignores signal requests: only the lifeline kills
		sudo     bool
		stdin    io.Reader
		cancel   string // "ctx", "timeout", "idle"
		want     error
	}{
		{"cancel", false, false, nil, "ctx", remote.ErrAborted},
		{"cancel lifeline only", true, false, nil, "ctx", remote.ErrAborted},
		{"cancel lifeline only with stdin", true, false, strings.NewReader("data\n"), "ctx", remote.ErrAborted},
		{"cancel sudo lifeline only", true, true, nil, "ctx", remote.ErrAborted},
		{"command timeout", true, false, nil, "timeout", remote.ErrTimeout},
		{"idle timeout", true, false, nil, "idle", remote.ErrIdle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.sudo {
				testutil.RequireTool(t, "sudo")
			}
			c := dial(t, newExecServer(t, tt.noSignal).target())
			arg, running := remoteSleep(t, localPgrep)
			cmd := remote.Command{Cmd: "echo started; sh -c 'sleep " + arg + "; echo never' & wait", Sudo: tt.sudo, Stdin: tt.stdin}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch tt.cancel {
			case "timeout":
				cmd.Timeout = 500 * time.Millisecond
			case "idle":
				cmd.IdleTimeout = 500 * time.Millisecond
			}
			done := make(chan error, 1)
			go func() { _, err := c.Run(ctx, cmd); done <- err }()
			testutil.WaitFor(t, 10*time.Second, "remote sleep started", running)
			if tt.cancel == "ctx" {
				cancel()
			}
			err := <-done
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			testutil.WaitFor(t, 10*time.Second, "remote sleep killed", func() bool { return !running() })
		})
	}
}

func TestHostKeyMismatchSendsNothing(t *testing.T) {
	s := newExecServer(t, false)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	otherSigner, _ := ssh.NewSignerFromSigner(other)
	for _, pin := range []string{sshexec.AuthorizedKey(otherSigner.PublicKey()), ssh.FingerprintSHA256(otherSigner.PublicKey())} {
		tg := s.target()
		tg.HostKey = pin
		_, err := sshexec.Dial(context.Background(), tg)
		var mm *remote.HostKeyMismatchError
		if !errors.Is(err, remote.ErrHostKeyMismatch) || !errors.As(err, &mm) {
			t.Fatalf("pin %q: err %v, want host key mismatch", pin, err)
		}
		if mm.Expected != ssh.FingerprintSHA256(otherSigner.PublicKey()) || mm.Got != ssh.FingerprintSHA256(s.hostKey.PublicKey()) {
			t.Fatalf("fingerprints %+v", mm)
		}
	}
	if s.authed.Load() != 0 || s.handled.Load() != 0 {
		t.Fatalf("server saw auth=%d sessions=%d after mismatch", s.authed.Load(), s.handled.Load())
	}
	if _, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: s.addr}); err == nil {
		t.Fatal("dial without a pinned host key succeeded")
	}
}

func TestDialErrors(t *testing.T) {
	// A listener that accepts and never speaks: only the handshake deadline ends it.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()

	fleet, err := fleetsim.Start(fleetsim.Config{N: 1, AuthorizedKey: newSigner(t).PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	inst := fleet.Instances[0]
	pin := sshexec.AuthorizedKey(newSigner(t).PublicKey())

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		tg   sshexec.Target
		want error
	}{
		{"handshake timeout", context.Background(), sshexec.Target{Addr: silent.Addr().String(), HostKey: pin, Timeouts: sshexec.Timeouts{Handshake: 300 * time.Millisecond}}, remote.ErrTimeout},
		{"refused", context.Background(), sshexec.Target{Addr: closedAddr, HostKey: pin}, remote.ErrUnreachable},
		{"auth", context.Background(), sshexec.Target{Addr: inst.Addr, User: "lcm", Signer: newSigner(t), HostKey: inst.AuthorizedHostKey()}, remote.ErrAuth},
		{"cancelled", cancelled, sshexec.Target{Addr: inst.Addr, HostKey: pin}, remote.ErrAborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sshexec.Dial(tt.ctx, tt.tg)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
		})
	}
}

func newSigner(t testing.TB) ssh.Signer {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestProbe(t *testing.T) {
	fleet, err := fleetsim.Start(fleetsim.Config{N: 1, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	inst := fleet.Instances[0]
	key, fp, err := sshexec.Probe(context.Background(), inst.Addr)
	if err != nil || fp != inst.Fingerprint || sshexec.AuthorizedKey(key) != inst.AuthorizedHostKey() {
		t.Fatalf("probe: %v %s, want %s", err, fp, inst.Fingerprint)
	}
	keys, err := sshexec.ProbeAll(context.Background(), inst.Addr)
	if err != nil || len(keys) != 1 {
		t.Fatalf("probe all: %v %d keys", err, len(keys))
	}
	if inst.Execs() != 0 {
		t.Fatal("probe ran a command")
	}
}
