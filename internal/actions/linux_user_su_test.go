package actions

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
)

// lockedBuffer collects a session's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// suPrompt bounds the wait for su's Password: prompt and for su to end
// (PAM delays a failure by about two seconds; a loaded host is slower).
const suPrompt = 30 * time.Second

// suWithPassword logs in as login (key), runs "su - user -c 'id -un'" on
// a PTY (su reads the password from the terminal), answers the Password:
// prompt with password and returns what su printed after the prompt and
// whether it succeeded: PAM (pam_unix and /etc/shadow), not sshd, checks
// the password.
func suWithPassword(t *testing.T, h testutil.TestHost, login string, signer ssh.Signer, user, password string) (string, bool) {
	t.Helper()
	c, err := ssh.Dial("tcp", h.Addr, &ssh.ClientConfig{User: login, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: h.HostKeyCallback(t), Timeout: suPrompt})
	if err != nil {
		t.Fatalf("login as %s: %v", login, err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.RequestPty("xterm", 40, 120, ssh.TerminalModes{ssh.ECHO: 0, ssh.TTY_OP_ISPEED: 38400, ssh.TTY_OP_OSPEED: 38400}); err != nil {
		t.Fatalf("pty: %v", err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	sess.Stdout, sess.Stderr = &out, &out
	if err := sess.Start("LC_ALL=C su - " + user + " -c 'id -un'"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	// Wait for the prompt (a condition, not a sleep).
	deadline := time.After(suPrompt)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(out.String(), "assword:") {
		select {
		case err := <-done:
			t.Fatalf("su ended before asking for a password (%v): %q", err, out.String())
		case <-deadline:
			t.Fatalf("no Password: prompt from su within %s: %q", suPrompt, out.String())
		case <-tick.C:
		}
	}
	if _, err := stdin.Write([]byte(password + "\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		_, after, _ := strings.Cut(out.String(), "assword:")
		return strings.TrimSpace(strings.ReplaceAll(after, "\r", "")), err == nil
	case <-time.After(suPrompt):
		t.Fatalf("su did not end within %s: %q", suPrompt, out.String())
	}
	return "", false
}

// assertSu proves that su - accepts password for user and refuses a wrong
// one, from a session of login.
func assertSu(t *testing.T, h testutil.TestHost, login string, signer ssh.Signer, user, password string) {
	t.Helper()
	if o, ok := suWithPassword(t, h, login, signer, user, password); !ok || o != user {
		t.Fatalf("su - %s with the activation password: ok=%v %q", user, ok, o)
	}
	if o, ok := suWithPassword(t, h, login, signer, user, password+"x"); ok || o == user {
		t.Fatalf("su - %s with a wrong password: ok=%v %q", user, ok, o)
	}
}

// dialUser logs in as user with a key through LCM's SSH client.
func dialUser(ctx context.Context, h testutil.TestHost, user string, signer ssh.Signer) (*sshexec.Client, error) {
	return sshexec.Dial(ctx, sshexec.Target{Addr: h.Addr, User: user, Signer: signer, HostKey: h.HostKeys[0]})
}

// dialSSH logs in as user with a key through x/crypto/ssh (subsystems).
func dialSSH(t *testing.T, h testutil.TestHost, user string, signer ssh.Signer) (*ssh.Client, error) {
	return ssh.Dial("tcp", h.Addr, &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: h.HostKeyCallback(t)})
}
