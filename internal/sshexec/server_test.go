package sshexec_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"

	gssh "github.com/gliderlabs/ssh"
	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/sshexec"
)

// execServer is an in-process SSH server that runs commands on this machine
// the way sshd does for a non-PTY session: `sh -c LINE` in a new session
// (setsid), stdin/stdout/stderr as pipes, a closed channel only closes the
// pipes, and a signal request goes to the process group.
type execServer struct {
	addr     string
	hostKey  ssh.Signer
	handled  atomic.Int64 // session handlers entered
	authed   atomic.Int64 // successful authentications
	noSignal bool         // ignore signal requests (proves the lifeline alone)
}

func newExecServer(t *testing.T, noSignal bool) *execServer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	s := &execServer{hostKey: signer, noSignal: noSignal}
	srv := &gssh.Server{
		Handler: s.handle,
		PasswordHandler: func(gssh.Context, string) bool {
			s.authed.Add(1)
			return true
		},
	}
	srv.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *execServer) target() sshexec.Target {
	return sshexec.Target{Addr: s.addr, User: "root", Password: "x", HostKey: sshexec.AuthorizedKey(s.hostKey.PublicKey())}
}

func (s *execServer) handle(sess gssh.Session) {
	s.handled.Add(1)
	cmd := exec.Command("sh", "-c", sess.RawCommand())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdin, _ := cmd.StdinPipe()
	cmd.Stdout, cmd.Stderr = sess, sess.Stderr()
	sigs := make(chan gssh.Signal, 1)
	sess.Signals(sigs)
	if err := cmd.Start(); err != nil {
		_ = sess.Exit(127)
		return
	}
	go func() { // like sshd: channel EOF or close → close the stdin pipe
		_, _ = io.Copy(stdin, sess)
		stdin.Close()
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			if !s.noSignal && sig == gssh.SIGKILL {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		case err := <-done:
			var ee *exec.ExitError
			code := 0
			if errors.As(err, &ee) {
				code = ee.ExitCode()
				if code < 0 {
					code = 137
				}
			}
			_ = sess.Exit(code)
			return
		case <-sess.Context().Done():
			<-done
			return
		}
	}
}

var _ = context.Background
