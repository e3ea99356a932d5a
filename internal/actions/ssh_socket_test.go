package actions

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/helper"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/testutil"
)

// socketHostIndex is the test host of the socket-activated sshd
// (127.0.0.18): it gets systemd's tools and a stand-in systemctl.
const socketHostIndex = 17

// socketActivatedHost is test host 17 made to look socket-activated, as
// far as a host without systemd as PID 1 can: systemd 252 installed (for
// systemd-analyze and systemd-socket-activate), /run/systemd/system, and
// testdata/fake-systemctl.sh as /usr/local/bin/systemctl (see its
// comment for what is real and what is translated); ssh.socket is loaded
// from Debian 12's unit and started.
func socketActivatedHost(t *testing.T) (root remote.Executor, env *Env, h testutil.TestHost) {
	t.Helper()
	h = testutil.TestHostAt(t, socketHostIndex)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	root, env, _ = joinedHost(t, h)
	fake, err := os.ReadFile("testdata/fake-systemctl.sh")
	if err != nil {
		t.Fatal(err)
	}
	sh(t, root, "command -v systemd-analyze >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends systemd >/tmp/lcm-systemd-install.log 2>&1 || { tail -20 /tmp/lcm-systemd-install.log; exit 1; }")
	var o strings.Builder
	res, err := root.Run(context.Background(), remote.Command{Cmd: "cat > /usr/local/bin/systemctl && chmod 0755 /usr/local/bin/systemctl && mkdir -p /run/systemd/system && systemctl daemon-reload && systemctl restart ssh.socket && systemctl show ssh.socket --property=Listen",
		Stdin: strings.NewReader(string(fake)), Stdout: &o, Stderr: &o})
	if err != nil || res.ExitCode != 0 || o.String() != "Listen=[::]:22 (Stream)\n" {
		t.Fatalf("fake systemd: exit %d %v\n%s", res.ExitCode, err, o.String())
	}
	return root, env, h
}

// TestSSHPortSocketActivatedOnTestHost moves a socket-activated sshd's port
// for real on test host 17, in full and in restricted sudo mode: LCM
// writes its ssh.socket drop-in, daemon-reload loads it (through
// systemd-analyze, real systemd), the socket listens on the new port, and
// a fresh login there proves it; a port the socket cannot take is rolled
// back (the drop-in as before, the login on the old port works).
func TestSSHPortSocketActivatedOnTestHost(t *testing.T) {
	buildHelper(t)
	root, env, h := socketActivatedHost(t)
	ctx := context.Background()
	out := env.Out.(interface {
		String() string
		Reset()
	})
	dropIn := func() string { return sh(t, root, "cat "+SSHSocketDropIn+" 2>/dev/null || echo absent") }
	listen := func() []int {
		return helper.ParseSocketListen(sh(t, root, "systemctl show ssh.socket --property=Listen"))
	}
	// blockPort holds port on the host's address, so the socket cannot.
	blockPort := func(port string) func() {
		// A plain listener (perl's, SO_REUSEADDR but not SO_REUSEPORT, which
		// systemd-socket-activate would share), accepting and closing.
		sh(t, root, "setsid perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => shift, Listen => 5, ReuseAddr => 1) or die; while ($c = $s->accept) { close $c }' "+
			h.Host+":"+port+" </dev/null >/dev/null 2>&1 & echo $! > /run/lcm-block."+port)
		testutil.WaitFor(t, 5*time.Second, "port "+port+" blocked", func() bool {
			c, err := net.Dial("tcp", net.JoinHostPort(h.Host, port))
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		return func() { sh(t, root, "kill $(cat /run/lcm-block."+port+")") }
	}
	move := func(port int) (Result, error) {
		t.Helper()
		out.Reset()
		env.Params, _ = json.Marshal(SSHPortParams{Port: port})
		return SSHPort{}.Run(ctx, env)
	}

	// 1. A port the socket cannot take: rolled back, nothing changed.
	unblock := blockPort("2300")
	r, err := move(2300)
	var failed *Failed
	if !errors.As(err, &failed) || !r.SSH.RolledBack || !r.SSH.Socket || !strings.Contains(failed.Reason, "restarting ssh.socket exited with code 1") ||
		!strings.Contains(failed.Reason, "rolled back, sshd listens on port 22 as before") {
		t.Fatalf("blocked port: %v %+v\n%s", err, r.SSH, out.String())
	}
	unblock()
	if got := dropIn(); got != "absent\n" || !reflect.DeepEqual(listen(), []int{22}) {
		t.Fatalf("after the rollback: drop-in %q, listen %v", got, listen())
	}
	if err := keyLogin(t, h, env, domain.ManagementUser, env.Creds.PrivateKey); err != nil {
		t.Fatalf("login on 22 after the rollback: %v", err)
	}

	// 2. Full sudo mode: 22 → 2222 through the socket.
	r, err = move(2222)
	if err != nil || r.SSH.Port != 2222 || !r.SSH.Socket || !reflect.DeepEqual(r.SSH.SocketPorts, []int{2222}) || !strings.Contains(r.Message, "through ssh.socket") {
		t.Fatalf("move to 2222: %v %+v\n%s", err, r.SSH, out.String())
	}
	if got := dropIn(); got != helper.SSHSocketDropIn([]int{2222}) || !reflect.DeepEqual(listen(), []int{2222}) {
		t.Fatalf("drop-in %q, listen %v", got, listen())
	}
	if got := sh(t, root, "grep -v '^#' "+SSHDropIn); got != "Port 2222\n" {
		t.Fatalf("sshd drop-in: %q", got)
	}
	ex2222, err := env.DialPort(ctx, domain.ManagementUser, env.Creds.PrivateKey, 2222)
	if err != nil {
		t.Fatalf("login on 2222: %v", err)
	}
	defer ex2222.Close()
	// From here on LCM reaches the server on 2222, as the worker does
	// once the stored port changed.
	env.Exec, env.Creds.Addr = ex2222, net.JoinHostPort(h.Host, "2222")
	env.Dial = func(ctx context.Context, user, key string) (remote.Executor, error) {
		return env.DialPort(ctx, user, key, 2222)
	}

	// 3. Restricted sudo mode: the helper's ssh-socket does the same.
	out.Reset()
	env.Params, _ = json.Marshal(RestrictSudoParams{Mode: domain.SudoRestricted})
	if r, err := (RestrictSudo{}).Run(ctx, env); err != nil || !r.Sudo.Proven {
		t.Fatalf("restrict: %v\n%s", err, out.String())
	}
	r, err = move(2400)
	if err != nil || r.SSH.Port != 2400 || !reflect.DeepEqual(r.SSH.SocketPorts, []int{2400}) || !strings.Contains(out.String(), "\nwrote "+SSHSocketDropIn) {
		// (the helper's words; the full-mode script says "lcm: wrote")
		t.Fatalf("restricted move to 2400: %v %+v\n%s", err, r.SSH, out.String())
	}
	if got := dropIn(); got != helper.SSHSocketDropIn([]int{2400}) {
		t.Fatalf("drop-in written by the helper: %q", got)
	}
	ex2400, err := env.DialPort(ctx, domain.ManagementUser, env.Creds.PrivateKey, 2400)
	if err != nil {
		t.Fatalf("login on 2400: %v", err)
	}
	defer ex2400.Close()
	env.Exec, env.Creds.Addr = ex2400, net.JoinHostPort(h.Host, "2400")
	env.Dial = func(ctx context.Context, user, key string) (remote.Executor, error) {
		return env.DialPort(ctx, user, key, 2400)
	}
	// A blocked port in restricted mode: the helper puts 2400 back.
	unblock = blockPort("2500")
	r, err = move(2500)
	if !errors.As(err, &failed) || !r.SSH.RolledBack || !strings.Contains(failed.Reason, "sshd listens on port 2400 as before") {
		t.Fatalf("restricted, blocked port: %v %+v\n%s", err, r.SSH, out.String())
	}
	unblock()
	if got := dropIn(); got != helper.SSHSocketDropIn([]int{2400}) || !reflect.DeepEqual(listen(), []int{2400}) {
		t.Fatalf("after the restricted rollback: drop-in %q, listen %v", got, listen())
	}
	// And back to 22.
	if r, err := move(22); err != nil || r.SSH.Port != 22 || !reflect.DeepEqual(r.SSH.SocketPorts, []int{22}) {
		t.Fatalf("back to 22: %v\n%s", err, out.String())
	}
	env.Dial = func(ctx context.Context, user, key string) (remote.Executor, error) {
		return env.DialPort(ctx, user, key, 22)
	}
	if err := keyLogin(t, h, env, domain.ManagementUser, env.Creds.PrivateKey); err != nil {
		t.Fatalf("login on 22: %v", err)
	}
}
