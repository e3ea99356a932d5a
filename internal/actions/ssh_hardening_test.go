package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/credbox"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
)

// hardeningHostIndex is the test host of the hardening area (127.0.0.9).
const hardeningHostIndex = 8

// hardeningHost is test host 8 with the management user joined: it
// returns a root connection (the test's own view of the server, separate
// from LCM's) and an Env that runs as the management user with its key.
func hardeningHost(t *testing.T) (root remote.Executor, env *Env, h testutil.TestHost, out *bytes.Buffer) {
	t.Helper()
	h = testutil.TestHostAt(t, hardeningHostIndex)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	root, env, out = joinedHost(t, h)
	return root, env, h, out
}

// joinedHost joins the management user to h (the caller picks, locks and
// resets the host) and returns a root connection and the management
// user's Env.
func joinedHost(t *testing.T, h testutil.TestHost) (root remote.Executor, env *Env, out *bytes.Buffer) {
	t.Helper()
	ctx := context.Background()
	dial := func(ctx context.Context, user, key string) (remote.Executor, error) {
		tg := sshexec.Target{Addr: h.Addr, User: user, HostKey: h.HostKeys[0]}
		s, err := ssh.ParsePrivateKey([]byte(key))
		if err != nil {
			return nil, err
		}
		tg.Signer = s
		return sshexec.Dial(ctx, tg)
	}
	rootEx, err := dial(ctx, "root", string(h.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rootEx.Close() })
	key, err := NewManagementKey("lcm@hardening-test")
	if err != nil {
		t.Fatal(err)
	}
	out = &bytes.Buffer{}
	jenv := &Env{Exec: rootEx, Dial: dial, Out: out, Creds: credbox.Credentials{User: "root", PrivateKey: string(h.PrivateKey), NewPrivateKey: key}}
	if _, err := (Join{}).Run(ctx, jenv); err != nil {
		t.Fatalf("join: %v\n%s", err, out)
	}
	lcm, err := dial(ctx, domain.ManagementUser, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lcm.Close() })
	dialPort := func(ctx context.Context, user, key string, port int) (remote.Executor, error) {
		s, err := ssh.ParsePrivateKey([]byte(key))
		if err != nil {
			return nil, err
		}
		return sshexec.Dial(ctx, sshexec.Target{Addr: net.JoinHostPort(h.Host, strconv.Itoa(port)), User: user, Signer: s, HostKey: h.HostKeys[0]})
	}
	env = &Env{Exec: lcm, Dial: dial, DialPort: dialPort, Out: out, Creds: credbox.Credentials{User: domain.ManagementUser, PrivateKey: key, Addr: h.Addr}}
	return rootEx, env, out
}

// sh runs cmd as root on the test's own connection and returns stdout.
func sh(t *testing.T, ex remote.Executor, cmd string) string {
	t.Helper()
	var o, e bytes.Buffer
	res, err := ex.Run(context.Background(), remote.Command{Cmd: cmd, Stdout: &o, Stderr: &e})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s: exit %d, %v\n%s%s", cmd, res.ExitCode, err, o.String(), e.String())
	}
	return o.String()
}

// passwordLogin tries the bootstrap user's password on a new connection.
func passwordLogin(t *testing.T, h testutil.TestHost) error {
	t.Helper()
	c, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: h.Addr, User: testutil.BootstrapUser, Password: h.Password, HostKey: h.HostKeys[0]})
	if err == nil {
		c.Close()
	}
	return err
}

func keyLogin(t *testing.T, h testutil.TestHost, env *Env, user, key string) error {
	t.Helper()
	ex, err := env.Dial(context.Background(), user, key)
	if err != nil {
		return err
	}
	defer ex.Close()
	var o bytes.Buffer
	if _, err := ex.Run(context.Background(), remote.Command{Cmd: "id -un", Stdout: &o}); err != nil {
		return err
	}
	if strings.TrimSpace(o.String()) != user {
		return errors.New("logged in as " + o.String())
	}
	return nil
}

func TestSSHHardeningOnTestHost(t *testing.T) {
	root, env, h, out := hardeningHost(t)
	ctx := context.Background()
	mainBefore := sh(t, root, "cat /etc/ssh/sshd_config")
	if err := passwordLogin(t, h); err != nil {
		t.Fatalf("before hardening a password login must work: %v", err)
	}

	// Harden: proven, and the server really refuses passwords now.
	start := time.Now()
	r, err := HardenSSH{}.Run(ctx, env)
	if err != nil {
		t.Fatalf("harden: %v\n%s", err, out)
	}
	// Budget (docs/benchmarks.md): ≤ 2 s on a pooled connection.
	t.Logf("harden-ssh on a pooled connection: %s", time.Since(start).Round(time.Millisecond))
	if !r.SSH.Hardened() || r.SSH.RolledBack || !contains(r.SSH.Lines, "passwordauthentication no") {
		t.Fatalf("harden proof: %+v", r.SSH)
	}
	if got := sh(t, root, "cat "+HardeningDropIn); !strings.Contains(got, "\nPasswordAuthentication no\n") {
		t.Fatalf("drop-in on the server:\n%s", got)
	}
	for _, l := range strings.Split(strings.TrimSpace(sh(t, root, "grep -v '^#' "+HardeningDropIn)), "\n") {
		prev := sh(t, root, "grep -B1 -xF "+shQuote(l)+" "+HardeningDropIn+" | head -n1")
		if !strings.HasPrefix(prev, "#") && !strings.HasPrefix(l, "IgnoreRhosts") && !strings.HasPrefix(l, "ClientAliveCountMax") {
			t.Errorf("drop-in line %q has no comment above it", l)
		}
	}
	if err := passwordLogin(t, h); err == nil {
		t.Fatal("after hardening a password login must be refused")
	}
	if err := keyLogin(t, h, env, domain.ManagementUser, env.Creds.PrivateKey); err != nil {
		t.Fatalf("after hardening the management key must log in: %v", err)
	}

	// Unharden: the drop-in is gone and passwords work again.
	out.Reset()
	r, err = UnhardenSSH{}.Run(ctx, env)
	if err != nil || r.SSH.PasswordAuth != "yes" || r.SSH.Hardened() {
		t.Fatalf("unharden: %v %+v\n%s", err, r.SSH, out)
	}
	if got := sh(t, root, "test -e "+HardeningDropIn+" && echo present || echo absent"); got != "absent\n" {
		t.Fatalf("drop-in after unharden: %s", got)
	}
	if err := passwordLogin(t, h); err != nil {
		t.Fatalf("after unhardening a password login must work: %v", err)
	}

	// An earlier line in the main file wins: rollback, naming the line.
	sh(t, root, `sed -i '1i PasswordAuthentication yes' /etc/ssh/sshd_config`)
	out.Reset()
	r, err = HardenSSH{}.Run(ctx, env)
	var failed *Failed
	if !errors.As(err, &failed) || r.SSH == nil || !r.SSH.RolledBack {
		t.Fatalf("harden with an overriding main line must fail and roll back: %v %+v\n%s", err, r.SSH, out)
	}
	if !strings.Contains(failed.Reason, "/etc/ssh/sshd_config:1: PasswordAuthentication yes wins") {
		t.Fatalf("the failure must name the winning line: %s", failed.Reason)
	}
	if got := sh(t, root, "test -e "+HardeningDropIn+" && echo present || echo absent"); got != "absent\n" {
		t.Fatalf("drop-in after rollback: %s", got)
	}
	if err := passwordLogin(t, h); err != nil {
		t.Fatalf("after the rollback the server is as before: %v", err)
	}

	// With fix_main_config the line is commented out (marked) and the
	// hardening holds; unhardening brings the line back exactly.
	withLine := sh(t, root, "cat /etc/ssh/sshd_config")
	env.Params, _ = json.Marshal(HardenParams{FixMainConfig: true})
	out.Reset()
	r, err = HardenSSH{}.Run(ctx, env)
	env.Params = nil
	if err != nil || !r.SSH.Hardened() || len(r.SSH.MainEdits) != 1 {
		t.Fatalf("harden with fix_main_config: %v %+v\n%s", err, r.SSH, out)
	}
	if got := sh(t, root, "head -n1 /etc/ssh/sshd_config"); got != "#lcm-disabled:harden# PasswordAuthentication yes\n" {
		t.Fatalf("marked line: %q", got)
	}
	if err := passwordLogin(t, h); err == nil {
		t.Fatal("hardened with the main file fixed: a password login must be refused")
	}
	out.Reset()
	if _, err := (UnhardenSSH{}).Run(ctx, env); err != nil {
		t.Fatalf("unharden: %v\n%s", err, out)
	}
	if got := sh(t, root, "cat /etc/ssh/sshd_config"); got != withLine {
		t.Fatalf("unharden must restore the main file exactly:\n%s\nwant:\n%s", got, withLine)
	}
	sh(t, root, `sed -i '1d' /etc/ssh/sshd_config`)
	if got := sh(t, root, "cat /etc/ssh/sshd_config"); got != mainBefore {
		t.Fatal("test cleanup: main file differs")
	}

	// A Match block for the management user turns passwords back on:
	// sshd -T -C sees it, the drop-in is rolled back, the block is named.
	sh(t, root, `printf 'Match User lcm\n    PasswordAuthentication yes\n' >> /etc/ssh/sshd_config`)
	out.Reset()
	r, err = HardenSSH{}.Run(ctx, env)
	if !errors.As(err, &failed) || !r.SSH.RolledBack || r.SSH.PasswordAuth != "yes" {
		t.Fatalf("harden with a Match block must roll back: %v %+v\n%s", err, r.SSH, out)
	}
	if !strings.Contains(failed.Reason, `(inside "Match User lcm") applies to this connection`) {
		t.Fatalf("the failure must name the Match block: %s", failed.Reason)
	}
	if got := sh(t, root, "test -e "+HardeningDropIn+" && echo present || echo absent"); got != "absent\n" {
		t.Fatalf("drop-in after rollback: %s", got)
	}
}

func TestSSHHardeningWithoutInclude(t *testing.T) {
	root, env, h, out := hardeningHost(t)
	ctx := context.Background()
	// An older distribution's main file: no Include line.
	// The test host's own settings (zz-lcm-testhost.conf: its listen
	// address, no PAM) move into the main file, as they would be there.
	sh(t, root, `sed -i 's|^Include .*|ListenAddress 127.0.0.9:22\nUsePAM no\nPasswordAuthentication yes|' /etc/ssh/sshd_config`)
	r, err := HardenSSH{}.Run(ctx, env)
	var failed *Failed
	if !errors.As(err, &failed) || !r.SSH.RolledBack {
		t.Fatalf("without Include the drop-in cannot be proven: %v %+v\n%s", err, r.SSH, out)
	}
	if !strings.Contains(failed.Reason, `has no "Include /etc/ssh/sshd_config.d/*.conf"`) || !strings.Contains(failed.Reason, "fix_main_config") {
		t.Fatalf("the failure must say the Include is missing and how to fix it: %s", failed.Reason)
	}
	env.Params, _ = json.Marshal(HardenParams{FixMainConfig: true})
	out.Reset()
	r, err = HardenSSH{}.Run(ctx, env)
	if err != nil || !r.SSH.Hardened() {
		t.Fatalf("harden with fix_main_config: %v %+v\n%s", err, r.SSH, out)
	}
	if got := sh(t, root, "head -n1 /etc/ssh/sshd_config"); got != "Include /etc/ssh/sshd_config.d/*.conf # lcm-added\n" {
		t.Fatalf("added Include: %q", got)
	}
	if err := passwordLogin(t, h); err == nil {
		t.Fatal("a password login must be refused")
	}
	out.Reset()
	env.Params = nil
	if _, err := (UnhardenSSH{}).Run(ctx, env); err != nil {
		t.Fatalf("unharden: %v\n%s", err, out)
	}
	if got := sh(t, root, "grep -c '^Include' /etc/ssh/sshd_config || true"); got != "0\n" {
		t.Fatalf("unharden must remove the Include LCM added: %q", got)
	}
}

func TestSSHRootLoginOnTestHost(t *testing.T) {
	root, env, h, out := hardeningHost(t)
	ctx := context.Background()
	// An earlier conflicting line in the main file, before the Include.
	sh(t, root, `sed -i '1i PermitRootLogin yes' /etc/ssh/sshd_config`)
	env.Params, _ = json.Marshal(RootLoginParams{Enabled: false})
	r, err := SSHRootLogin{}.Run(ctx, env)
	if err != nil || r.SSH.RootLogin != "no" || len(r.SSH.MainEdits) != 1 {
		t.Fatalf("disable root login: %v %+v\n%s", err, r.SSH, out)
	}
	if got := sh(t, root, "head -n1 /etc/ssh/sshd_config"); got != "#lcm-disabled:root-login# PermitRootLogin yes\n" {
		t.Fatalf("marked line: %q", got)
	}
	if err := keyLogin(t, h, env, "root", string(h.PrivateKey)); err == nil {
		t.Fatal("root login must be refused")
	}
	if err := keyLogin(t, h, env, domain.ManagementUser, env.Creds.PrivateKey); err != nil {
		t.Fatalf("the management key must still log in: %v", err)
	}
	env.Params, _ = json.Marshal(RootLoginParams{Enabled: true})
	out.Reset()
	r, err = SSHRootLogin{}.Run(ctx, env)
	if err != nil || r.SSH.RootLogin != "prohibit-password" {
		t.Fatalf("enable root login: %v %+v\n%s", err, r.SSH, out)
	}
	if err := keyLogin(t, h, env, "root", string(h.PrivateKey)); err != nil {
		t.Fatalf("root key login must work again: %v", err)
	}
	// "yes" conflicts with "prohibit-password" too: it stays marked.
	if got := sh(t, root, "head -n1 /etc/ssh/sshd_config"); got != "#lcm-disabled:root-login# PermitRootLogin yes\n" {
		t.Fatalf("still conflicting line: %q", got)
	}

	// A main-file line that agrees with the setting LCM goes back to: it is
	// marked while root login is forbidden and restored, byte for byte,
	// when root login is set back (the marked edit does not outlive the
	// setting that needed it).
	sh(t, root, `sed -i '1d' /etc/ssh/sshd_config && sed -i '1i PermitRootLogin prohibit-password' /etc/ssh/sshd_config`)
	mainBefore := sh(t, root, "cat /etc/ssh/sshd_config")
	for _, c := range []struct {
		enabled bool
		head    string
		edit    string
	}{
		{false, "#lcm-disabled:root-login# PermitRootLogin prohibit-password\n", "commented out"},
		{true, "PermitRootLogin prohibit-password\n", "restored (it no longer conflicts)"},
	} {
		env.Params, _ = json.Marshal(RootLoginParams{Enabled: c.enabled})
		out.Reset()
		r, err := SSHRootLogin{}.Run(ctx, env)
		if err != nil || len(r.SSH.MainEdits) != 1 || !strings.Contains(r.SSH.MainEdits[0], c.edit) {
			t.Fatalf("root login %v: %v %+v\n%s", c.enabled, err, r.SSH, out)
		}
		if got := sh(t, root, "head -n1 /etc/ssh/sshd_config"); got != c.head {
			t.Fatalf("root login %v: first line %q", c.enabled, got)
		}
	}
	if got := sh(t, root, "cat /etc/ssh/sshd_config"); got != mainBefore {
		t.Fatalf("the main file is not as before:\n%s\n---\n%s", got, mainBefore)
	}
}

// TestSSHChangeRollsBackWithoutFreshLogin: LCM loses its way in after a
// change (the fresh login with the management key fails): harden-ssh and
// ssh-root-login put the previous files back in the same run, and the
// server reads back as before.
func TestSSHChangeRollsBackWithoutFreshLogin(t *testing.T) {
	root, env, h, out := hardeningHost(t)
	ctx := context.Background()
	dial := env.Dial
	locked := false
	env.Dial = func(ctx context.Context, user, key string) (remote.Executor, error) {
		if locked {
			return nil, errors.New("ssh: handshake failed: ssh: unable to authenticate (the test locks LCM out)")
		}
		return dial(ctx, user, key)
	}
	before := sh(t, root, "cat /etc/ssh/sshd_config; ls /etc/ssh/sshd_config.d/")
	for name, run := range map[string]func() (Result, error){
		"harden-ssh": func() (Result, error) { env.Params = nil; return HardenSSH{}.Run(ctx, env) },
		"ssh-root-login": func() (Result, error) {
			env.Params, _ = json.Marshal(RootLoginParams{Enabled: false})
			return SSHRootLogin{}.Run(ctx, env)
		},
	} {
		locked = true
		out.Reset()
		r, err := run()
		locked = false
		var failed *Failed
		if !errors.As(err, &failed) || r.SSH == nil || !r.SSH.RolledBack || !strings.Contains(failed.Reason, "a fresh login with the management key failed after the change") ||
			!strings.Contains(failed.Reason, "rolled back, nothing changed") {
			t.Fatalf("%s without a fresh login: %v %+v\n%s", name, err, r.SSH, out)
		}
		// The proof after the rollback is the server's state as before.
		if !r.SSH.Proven || r.SSH.PasswordAuth != "yes" || r.SSH.RootLogin != "prohibit-password" {
			t.Fatalf("%s: read back after the rollback %+v", name, r.SSH)
		}
		if got := sh(t, root, "cat /etc/ssh/sshd_config; ls /etc/ssh/sshd_config.d/"); got != before {
			t.Fatalf("%s: files after the rollback:\n%s\n---\n%s", name, got, before)
		}
		if err := passwordLogin(t, h); err != nil {
			t.Fatalf("%s: password logins work as before the change: %v", name, err)
		}
	}
}

// TestSSHHardeningNoProofOnTestHost: the spec's third transition — sshd -T
// gives no result (here a wrapper in front of sshd fails "-T" and passes
// everything else on): ssh_hardened stays off, the drop-in is rolled back
// and the failure names the missing proof.
func TestSSHHardeningNoProofOnTestHost(t *testing.T) {
	root, env, h, out := hardeningHost(t)
	ctx := context.Background()
	sh(t, root, `printf '#!/bin/sh
for a; do [ "$a" = -T ] && { echo "sshd: no effective configuration (test)" >&2; exit 255; }; done
exec /usr/sbin/sshd "$@"
' > /usr/local/sbin/sshd && chmod 755 /usr/local/sbin/sshd`)
	r, err := HardenSSH{}.Run(ctx, env)
	var failed *Failed
	if !errors.As(err, &failed) || r.SSH == nil || r.SSH.Hardened() || !r.SSH.RolledBack || !strings.Contains(failed.Reason, "no proof: sshd -T -C exited with code 255") {
		t.Fatalf("harden without a read-back: %v %+v\n%s", err, r.SSH, out)
	}
	if r.SSH.Proven || !strings.Contains(r.SSH.Missing, "sshd -T -C exited with code 255") {
		t.Fatalf("the proof must be missing and named: %+v", r.SSH)
	}
	if got := sh(t, root, "test -e "+HardeningDropIn+" && echo present || echo absent"); got != "absent\n" {
		t.Fatalf("drop-in after the rollback: %s", got)
	}
	if err := passwordLogin(t, h); err != nil {
		t.Fatalf("password logins work as before: %v", err)
	}
}

func TestSSHChangeRefusesPasswordDevices(t *testing.T) {
	env := &Env{Out: &bytes.Buffer{}, Creds: credbox.Credentials{User: "lcm", Password: "pw"}}
	_, err := HardenSSH{}.Run(context.Background(), env)
	var failed *Failed
	if !errors.As(err, &failed) || !strings.Contains(failed.Reason, "no key") {
		t.Fatalf("got %v", err)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestSSHPortOnTestHost(t *testing.T) {
	root, env, h, out := hardeningHost(t)
	ctx := context.Background()
	// The test host's ListenAddress carries port 22, which beats any Port
	// line: the new port never answers, so the change is rolled back.
	env.Params, _ = json.Marshal(SSHPortParams{Port: 2222})
	r, err := SSHPort{}.Run(ctx, env)
	var failed *Failed
	if !errors.As(err, &failed) || !r.SSH.RolledBack || !strings.Contains(failed.Reason, "a fresh login on port 2222 failed") || !strings.Contains(failed.Reason, "sshd listens on port 22 as before") {
		t.Fatalf("port change behind a ListenAddress with a port: %v %+v\n%s", err, r.SSH, out)
	}
	if err := keyLogin(t, h, env, domain.ManagementUser, env.Creds.PrivateKey); err != nil {
		t.Fatalf("after the rollback port 22 must work: %v", err)
	}
	if got := sh(t, root, "test -e "+SSHDropIn+" && echo present || echo absent"); got != "absent\n" {
		t.Fatalf("drop-in after the rollback: %s", got)
	}

	// A ListenAddress without a port (as on a real server): the move works.
	sh(t, root, `sed -i 's/^ListenAddress 127.0.0.9:22$/ListenAddress 127.0.0.9/' /etc/ssh/sshd_config.d/zz-lcm-testhost.conf && `+testutil.ReloadSSHD)
	out.Reset()
	r, err = SSHPort{}.Run(ctx, env)
	if err != nil || r.SSH.Port != 2222 || !slices.Contains(r.SSH.Ports, 2222) || slices.Contains(r.SSH.Ports, 22) {
		t.Fatalf("move to 2222: %v %+v\n%s", err, r.SSH, out)
	}
	if c, err := net.DialTimeout("tcp", h.Addr, 2*time.Second); err == nil {
		c.Close()
		t.Fatal("port 22 must be closed after the move")
	}
	ex2222, err := env.DialPort(ctx, domain.ManagementUser, env.Creds.PrivateKey, 2222)
	if err != nil {
		t.Fatalf("login on 2222: %v", err)
	}
	defer ex2222.Close()
	if got := sh(t, ex2222, "cat "+SSHDropIn+" | grep -v '^#'"); got != "Port 2222\n" {
		t.Fatalf("drop-in: %q", got)
	}
	// Root login keeps the port line (both live in 10-lcm-ssh.conf).
	// What the stored port does in production: the worker dials it.
	dial22 := env.Dial
	env.Exec, env.Creds.Addr = ex2222, net.JoinHostPort(h.Host, "2222")
	env.Dial = func(ctx context.Context, user, key string) (remote.Executor, error) {
		return env.DialPort(ctx, user, key, 2222)
	}
	env.Params, _ = json.Marshal(RootLoginParams{Enabled: false})
	out.Reset()
	if _, err := (SSHRootLogin{}).Run(ctx, env); err != nil {
		t.Fatalf("root login after the port move: %v\n%s", err, out)
	}
	if got := sh(t, ex2222, "grep -v '^#' "+SSHDropIn); got != "PermitRootLogin no\nPort 2222\n" {
		t.Fatalf("drop-in after root login: %q", got)
	}
	// And back to 22.
	env.Params, _ = json.Marshal(SSHPortParams{Port: 22})
	out.Reset()
	if r, err := (SSHPort{}).Run(ctx, env); err != nil || r.SSH.Port != 22 {
		t.Fatalf("back to 22: %v\n%s", err, out)
	}
	env.Dial = dial22
	if err := keyLogin(t, h, env, domain.ManagementUser, env.Creds.PrivateKey); err != nil {
		t.Fatalf("port 22 again: %v", err)
	}
}
