package actions

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/testutil"
)

// buildHelper builds cmd/helper once per test run (testutil.BuildHelper).
func buildHelper(t *testing.T) string { return testutil.BuildHelper(t) }

// as runs cmd on a fresh connection of env's user and returns the exit code.
func as(t *testing.T, env *Env, cmd string) (int, string) {
	t.Helper()
	ex, err := env.Dial(context.Background(), env.Creds.User, env.Creds.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	out, code, err := capture(context.Background(), ex, &strings.Builder{}, remote.Command{Cmd: cmd})
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

func TestRestrictSudoOnTestHost(t *testing.T) {
	buildHelper(t)
	root, env, h, out := hardeningHost(t)
	ctx := context.Background()
	// Before the switch (the allowlist holds what exists then): tree, for
	// LCM to remove in restricted mode, and Debian's zypper, to prove the
	// form LCM runs it in (sudo's VAR=value, never env) is allowed.
	sh(t, root, "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends tree zypper >/tmp/lcm-install.log 2>&1 || { tail -20 /tmp/lcm-install.log; exit 1; }")

	env.Params, _ = json.Marshal(RestrictSudoParams{Mode: domain.SudoRestricted})
	r, err := RestrictSudo{}.Run(ctx, env)
	if err != nil || r.Sudo == nil || !r.Sudo.Proven || r.Sudo.Mode != domain.SudoRestricted {
		t.Fatalf("restrict: %v %+v\n%s", err, r.Sudo, out)
	}
	if !containsStr(r.Sudo.Allowed, "/usr/bin/apt-get") || !containsStr(r.Sudo.Allowed, HelperPath) || len(r.Sudo.Checks) != 3 {
		t.Fatalf("allowlist/checks: %+v", r.Sudo)
	}
	// Read back from outside LCM: the helper, the rule, no watchdog left.
	if got := sh(t, root, "stat -c '%U %G %a' "+HelperPath); got != "root root 755\n" {
		t.Fatalf("helper file: %q", got)
	}
	rule := sh(t, root, "cat /etc/sudoers.d/lcm; stat -c '%a' /etc/sudoers.d/lcm; test -e /etc/sudoers.d/.lcm-restrict-pending && echo PENDING || true")
	if strings.Contains(rule, "NOPASSWD: ALL") || !strings.Contains(rule, "lcm ALL=(root) NOPASSWD:SETENV: /usr/bin/apt-get") || !strings.Contains(rule, "\n440\n") || strings.Contains(rule, "PENDING") {
		t.Fatalf("restricted rule:\n%s", rule)
	}
	for cmd, want := range map[string]bool{
		"sudo -n apt-get --version":                                true,
		"sudo -n " + HelperPath + " version":                       true,
		"sudo -n DEBIAN_FRONTEND=noninteractive apt-get --version": true,
		"sudo -n /bin/sh -c true":                                  false,
		"sudo -n sh -c true":                                       false,
		"sudo -n true":                                             false,
		"sudo -n env true":                                         false,
		"sudo -n cat /etc/shadow":                                  false,
		"sudo -n " + HelperPath + " rm -rf /":                      false,
	} {
		if code, o := as(t, env, cmd+" 2>&1"); (code == 0) != want {
			t.Errorf("%s: exit %d, want success=%v\n%s", cmd, code, want, o)
		}
	}
	// The helper's refusals: a bad subcommand exits 2, a broken sudoers
	// line is refused by visudo and nothing changes.
	if code, o := as(t, env, "sudo -n "+HelperPath+" sshd-read /etc/shadow 2>&1"); code != 2 || !strings.Contains(o, "refused") {
		t.Fatalf("helper refusal: %d %s", code, o)
	}
	if code, o := as(t, env, `printf '%%lcm-prof-web ALL=(root) NOPASSWD: /usr/bin/id :\n' | sudo -n `+HelperPath+" sudoers-profile write web 2>&1"); code != 1 || !strings.Contains(o, "visudo refused") {
		t.Fatalf("broken sudoers line: %d %s", code, o)
	}
	if got := sh(t, root, "ls /etc/sudoers.d/"); strings.Contains(got, "lcm-prof-web") || strings.Contains(got, ".lcm-helper") {
		t.Fatalf("after the refusal: %s", got)
	}
	if code, o := as(t, env, `printf '%%lcm-prof-web ALL=(root) NOPASSWD: /usr/bin/id\n' | sudo -n `+HelperPath+" sudoers-profile write web 2>&1"); code != 0 {
		t.Fatalf("valid profile: %d %s", code, o)
	}

	// What LCM does keeps working: the connectivity check, a security upgrade.
	out.Reset()
	if _, err := (Connectivity{}).Run(ctx, env); err != nil {
		t.Fatalf("connectivity in restricted mode: %v\n%s", err, out)
	}
	out.Reset()
	if _, err := (UpgradeSecurity{}).Run(ctx, env); err != nil {
		t.Fatalf("upgrade-security in restricted mode: %v\n%s", err, out)
	}
	// The inventory refresh and the package actions, as jobs run them.
	env.Creds.PackageFamily = "apt"
	out.Reset()
	if _, data, err := (RefreshJob{}).RunData(ctx, env); err != nil || len(data) == 0 {
		t.Fatalf("refresh in restricted mode: %v\n%s", err, out)
	}
	for _, p := range []PackageParams{
		{Action: PkgRefreshLists},
		{Action: PkgUpdate, Names: []string{"tzdata"}},
		{Action: PkgHold, Names: []string{"tree"}},
		{Action: PkgUnhold, Names: []string{"tree"}},
		{Action: PkgRemove, Names: []string{"tree"}},
		{Action: PkgAutoremove},
	} {
		out.Reset()
		env.Params, _ = json.Marshal(p)
		if _, _, err := (PackageJob{}).RunData(ctx, env); err != nil {
			t.Fatalf("%s in restricted mode: %v\n%s", p.Action, err, out)
		}
	}
	if got := sh(t, root, "dpkg-query -W -f='${db:Status-Abbrev}' tree 2>/dev/null || true"); strings.HasPrefix(got, "ii") {
		t.Fatalf("tree is still installed after remove in restricted mode: %q", got)
	}
	// zypper as pkgmgr runs it: sudo's VAR=value form is allowed (SETENV),
	// env is not on the allowlist.
	zy := pkgmgr.Zypper{}.RefreshLists()
	prefix := zy[:strings.Index(zy, "--non-interactive ")+len("--non-interactive ")]
	if !strings.HasPrefix(prefix, "sudo -n ZYPP_LOCK_TIMEOUT=120 ") {
		t.Fatalf("zypper command %q", zy)
	}
	if code, o := as(t, env, prefix+"--version 2>&1"); code != 0 || !strings.Contains(o, "zypper") {
		t.Fatalf("%s--version in restricted mode: %d %s", prefix, code, o)
	}
	if code, _ := as(t, env, "sudo -n env ZYPP_LOCK_TIMEOUT=120 zypper --version 2>&1"); code == 0 {
		t.Fatal("sudo env … must be refused in restricted mode")
	}
	env.Params = nil

	// SSH hardening works through the helper, proven the same way.
	out.Reset()
	env.Params = nil
	if r, err := (HardenSSH{}).Run(ctx, env); err != nil || !r.SSH.Hardened() || !strings.Contains(out.String(), "through lcm-helper") {
		t.Fatalf("harden in restricted mode: %v\n%s", err, out)
	}
	if err := passwordLogin(t, h); err == nil {
		t.Fatal("hardened in restricted mode: a password login must be refused")
	}
	// An override needs the main-file edit, which the helper does not do.
	sh(t, root, `sed -i '1i PasswordAuthentication yes' /etc/ssh/sshd_config`)
	env.Params, _ = json.Marshal(HardenParams{FixMainConfig: true})
	out.Reset()
	var failed *Failed
	if _, err := (HardenSSH{}).Run(ctx, env); !errors.As(err, &failed) || !strings.Contains(failed.Reason, "switch to full mode") {
		t.Fatalf("fix_main_config in restricted mode: %v\n%s", err, out)
	}
	sh(t, root, `sed -i '1d' /etc/ssh/sshd_config`)
	out.Reset()
	if r, err := (UnhardenSSH{}).Run(ctx, env); err != nil || r.SSH.PasswordAuth != "yes" {
		t.Fatalf("unharden in restricted mode: %v\n%s", err, out)
	}

	// ssh-port through the helper: the host's ListenAddress carries port
	// 22, so the new port never answers and the helper rolls the drop-in
	// back (the socket-activated case is TestSSHPortSocketActivatedOnTestHost).
	env.Params, _ = json.Marshal(SSHPortParams{Port: 2222})
	out.Reset()
	r2, err := (SSHPort{}).Run(ctx, env)
	if !errors.As(err, &failed) || !r2.SSH.RolledBack || !strings.Contains(failed.Reason, "sshd listens on port 22 as before") || !strings.Contains(out.String(), "through lcm-helper") {
		t.Fatalf("ssh-port in restricted mode: %v %+v\n%s", err, r2.SSH, out)
	}
	if got := sh(t, root, "test -e "+SSHDropIn+" && echo present || echo absent"); got != "absent\n" {
		t.Fatalf("10-lcm-ssh.conf after the restricted rollback: %s", got)
	}
	env.Params = nil

	// The key rotation works in restricted mode too.
	newKey, err := NewManagementKey("lcm@rotated")
	if err != nil {
		t.Fatal(err)
	}
	env.Creds.NewPrivateKey = newKey
	out.Reset()
	if _, err := (RotateKey{}).Run(ctx, env); err != nil {
		t.Fatalf("rotate-key in restricted mode: %v\n%s", err, out)
	}
	env.Creds.PrivateKey, env.Creds.NewPrivateKey = newKey, ""
	lcmEx, err := env.Dial(ctx, env.Creds.User, newKey)
	if err != nil {
		t.Fatal(err)
	}
	defer lcmEx.Close()
	env.Exec = lcmEx

	// Back to full mode, proven.
	env.Params, _ = json.Marshal(RestrictSudoParams{Mode: domain.SudoFull})
	out.Reset()
	r, err = RestrictSudo{}.Run(ctx, env)
	if err != nil || !r.Sudo.Proven || r.Sudo.Mode != domain.SudoFull {
		t.Fatalf("full: %v %+v\n%s", err, r.Sudo, out)
	}
	if code, _ := as(t, env, "sudo -n true"); code != 0 {
		t.Fatal("sudo -n true must work in full mode")
	}

	// Decommissioning a restricted server removes the rule and the helper.
	env.Params, _ = json.Marshal(RestrictSudoParams{Mode: domain.SudoRestricted})
	if _, err := (RestrictSudo{}).Run(ctx, env); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if r, err := (Decommission{}).Run(ctx, env); err != nil || r.Message != "access removed" {
		t.Fatalf("decommission: %v %+v\n%s", err, r, out)
	}
	if got := sh(t, root, "ls /etc/sudoers.d/lcm "+HelperPath+" 2>&1 || true"); strings.Count(got, "No such file") != 2 {
		t.Fatalf("after decommission: %s", got)
	}
}

// TestRestrictSudoUnreachableHelper: the helper breaks between the switch
// and the proof; it can neither be proven nor restore full mode, and the
// watchdog it armed restores full mode within its grace period.
func TestRestrictSudoUnreachableHelper(t *testing.T) {
	buildHelper(t)
	root, env, _, out := hardeningHost(t)
	env.Params, _ = json.Marshal(RestrictSudoParams{Mode: domain.SudoRestricted})
	start := time.Now()
	r, err := RestrictSudo{beforeProof: func() {
		sh(t, root, "printf '#!/bin/sh\\nexit 1\\n' > "+HelperPath)
	}}.Run(context.Background(), env)
	var failed *Failed
	if !errors.As(err, &failed) || !strings.Contains(failed.Reason, "watchdog restored full mode") || !r.Sudo.RolledBack || !r.Sudo.Proven || r.Sudo.Mode != domain.SudoFull {
		// What the host looks like, before the cleanup resets it.
		state := sh(t, root, "date; ls -la /etc/sudoers.d; cat /etc/sudoers.d/lcm; ps -eo pid,etime,args | cut -c1-120")
		t.Fatalf("got %v %+v\n%s\nhost state:\n%s", err, r.Sudo, out, state)
	}
	t.Logf("full mode back after %s", time.Since(start).Round(time.Second))
	if code, _ := as(t, env, "sudo -n true"); code != 0 {
		t.Fatal("sudo -n true must work again")
	}
	if got := sh(t, root, "cat /etc/sudoers.d/lcm"); got != "lcm ALL=(ALL:ALL) NOPASSWD: ALL\n" {
		t.Fatalf("rule: %q", got)
	}
}
