package sshexec_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestRealOpenSSH runs against a real Debian test host (OpenSSH 9.2):
// run, stream, exit codes, stdin, sudo, abort killing the remote sleep
// (also under sudo and with only the lifeline), host key mismatch.
func TestRealOpenSSH(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	h := testutil.TestHostAt(t, 1)
	tg := sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]}
	c := dial(t, tg)
	ctx := context.Background()

	t.Run("run exit code stdin", func(t *testing.T) {
		var out, errb syncBuffer
		res, err := c.Run(ctx, remote.Command{Cmd: `tr a-z A-Z; echo "$LC_ALL" >&2; exit 7`, Stdin: strings.NewReader("abc\n"), Stdout: &out, Stderr: &errb})
		if err != nil || res.ExitCode != 7 || out.String() != "ABC\n" || errb.String() != "C\n" {
			t.Fatalf("%v code %d out %q err %q", err, res.ExitCode, out.String(), errb.String())
		}
	})
	t.Run("sudo", func(t *testing.T) {
		var out syncBuffer
		res, err := c.Run(ctx, remote.Command{Cmd: "id -u", Sudo: true, Stdout: &out})
		if err != nil || res.ExitCode != 0 || out.String() != "0\n" {
			t.Fatalf("%v code %d out %q", err, res.ExitCode, out.String())
		}
	})
	t.Run("stream", func(t *testing.T) {
		out := make(chanWriter, 10)
		done := make(chan error, 1)
		go func() {
			_, err := c.Run(ctx, remote.Command{Cmd: "echo first; sleep 30; echo late", Stdout: out, Timeout: 3 * time.Second})
			done <- err
		}()
		select {
		case got := <-out:
			if got != "first\n" {
				t.Fatalf("chunk %q", got)
			}
		case err := <-done:
			t.Fatalf("run ended before streaming: %v", err)
		}
		// Output arrived while the command still sleeps; the timeout ends it.
		if err := <-done; !errors.Is(err, remote.ErrTimeout) {
			t.Fatalf("err %v", err)
		}
	})
	for _, sudo := range []bool{false, true} {
		t.Run(fmt.Sprintf("abort kills remote sleep sudo=%v", sudo), func(t *testing.T) {
			arg := fmt.Sprintf("1000.%06d", time.Now().UnixNano()%1_000_000)
			running := func() bool {
				r, err := c.Run(ctx, remote.Command{Cmd: "pgrep -f '[s]leep " + arg + "'"})
				return err == nil && r.ExitCode == 0
			}
			actx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := c.Run(actx, remote.Command{Cmd: "sleep " + arg + " & wait", Sudo: sudo})
				done <- err
			}()
			testutil.WaitFor(t, 10*time.Second, "remote sleep running", running)
			cancel()
			if err := <-done; !errors.Is(err, remote.ErrAborted) {
				t.Fatalf("err %v", err)
			}
			testutil.WaitFor(t, 10*time.Second, "remote sleep gone from ps", func() bool { return !running() })
		})
	}
	t.Run("host key mismatch", func(t *testing.T) {
		bad := tg
		bad.HostKey = sshexec.AuthorizedKey(newSigner(t).PublicKey())
		_, err := sshexec.Dial(ctx, bad)
		var mm *remote.HostKeyMismatchError
		if !errors.As(err, &mm) || !strings.HasPrefix(mm.Got, "SHA256:") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("probe", func(t *testing.T) {
		key, fp, err := sshexec.Probe(ctx, h.Addr)
		if err != nil || fp == "" {
			t.Fatal(err)
		}
		found := false
		for _, k := range h.HostKeys {
			found = found || strings.HasPrefix(k, sshexec.AuthorizedKey(key))
		}
		if !found {
			t.Fatalf("probed key %s not among the host's keys", fp)
		}
		keys, err := sshexec.ProbeAll(ctx, h.Addr)
		if err != nil || len(keys) < 2 {
			t.Fatalf("probe all: %v, %d keys", err, len(keys))
		}
	})
}
