package sshexec_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
)

// TestExplainDialErrors: what the add-server wizard shows for real probe
// and login failures reads as plain words with a hint, names the host and
// port, and never leaks Go's error chain ("remote: host unreachable: dial
// …"). "Connection refused" is not "host unreachable".
func TestExplainDialErrors(t *testing.T) {
	// A listener that accepts and never speaks, one that answers like a
	// web server, and a port nothing listens on.
	silent := listen(t, func(c net.Conn) { <-t.Context().Done() })
	web := listen(t, func(c net.Conn) { _, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) })
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	_, closedPort, _ := net.SplitHostPort(closedAddr)
	closed.Close()

	fleet, err := fleetsim.Start(fleetsim.Config{N: 1, AuthorizedKey: newSigner(t).PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	inst := fleet.Instances[0]
	otherPin := sshexec.AuthorizedKey(newSigner(t).PublicKey())

	probe := func(addr string, timeout time.Duration) func() error {
		return func() error {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			_, _, err := sshexec.Probe(ctx, addr)
			return err
		}
	}
	dial := func(tg sshexec.Target) func() error {
		return func() error {
			c, err := sshexec.Dial(context.Background(), tg)
			if c != nil {
				c.Close()
			}
			return err
		}
	}
	// The kernel's answers for hosts without a route cannot be produced
	// on every machine on demand; these are the errors a dial returns then.
	kernel := func(addr string, errno syscall.Errno) func() error {
		return func() error {
			return remote.Errorf(remote.ErrUnreachable, "dial", addr,
				&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)})
		}
	}
	tests := []struct {
		name string
		err  func() error
		want []string
	}{
		{"refused", probe(closedAddr, 5*time.Second), []string{"connection refused on port " + closedPort + " of 127.0.0.1", "is sshd running"}},
		{"unresolvable name", probe("no-such-host.invalid:22", 10*time.Second), []string{"host name no-such-host.invalid could not be resolved", "IP address"}},
		{"dial timeout", probe("127.0.0.1:22", 0), []string{"no answer from 127.0.0.1 on port 22 in time", "firewall"}},
		{"handshake timeout", probe(silent, 300*time.Millisecond), []string{"accepted the connection", "SSH login did not finish in time"}},
		{"not an SSH server", probe(web, 5*time.Second), []string{"closed the connection", "is that port an SSH server"}},
		{"auth", dial(sshexec.Target{Addr: inst.Addr, User: "lcm", Signer: newSigner(t), HostKey: inst.AuthorizedHostKey()}),
			[]string{"refused the login", "check the user name and the key or password"}},
		{"host key mismatch", dial(sshexec.Target{Addr: inst.Addr, User: "lcm", Signer: newSigner(t), HostKey: otherPin}),
			[]string{"host key changed", "no command was sent", "probe and join the server again"}},
		{"no route", kernel("192.0.2.99:22", syscall.EHOSTUNREACH), []string{"no route to host 192.0.2.99", "check the address"}},
		{"network unreachable", kernel("[2001:db8::1]:22", syscall.ENETUNREACH), []string{"network unreachable", "2001:db8::1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil {
				t.Fatal("no error")
			}
			got := remote.Explain(err)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("Explain(%v) = %q, want %q in it", err, got, w)
				}
			}
			for _, leak := range []string{"remote: ", "dial tcp", "ssh: handshake failed", "host unreachable"} {
				if strings.Contains(got, leak) {
					t.Errorf("Explain(%v) = %q leaks %q", err, got, leak)
				}
			}
		})
	}
	if got := remote.Explain(errors.New("something else")); got != "something else" {
		t.Fatalf("unknown error explained as %q", got)
	}
}

// listen serves every connection with serve on a local port and returns
// its address.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}
