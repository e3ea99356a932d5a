package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestInstallerSelfManagement runs deploy/install/install.sh on a Debian
// test host (host 5, after TestInventoryE2E's turn): with self-management
// it creates the management account, a visudo-checked sudo rule and a
// 0600 handover key owned by the service account — and that key really
// logs in as lcm with sudo; a re-run never hands over a second key. With
// the installation-time opt-out there is no account, no sudo rule and no
// handover file, only the marker lcm-api reads.
func TestInstallerSelfManagement(t *testing.T) {
	h := testutil.TestHostAt(t, 5)
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
	ctx := context.Background()
	root, err := sshexec.Dial(ctx, sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { root.Close() }()
	sh := func(cmd string, stdin []byte) (string, int) {
		t.Helper()
		var out, errOut bytes.Buffer
		c := remote.Command{Cmd: cmd, Stdout: &out, Stderr: &errOut, Timeout: 2 * time.Minute}
		if stdin != nil {
			c.Stdin = bytes.NewReader(stdin)
		}
		res, err := root.Run(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return out.String() + errOut.String(), res.ExitCode
	}
	must := func(cmd string) string {
		t.Helper()
		out, code := sh(cmd, nil)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", cmd, code, out)
		}
		return out
	}
	upload := func() {
		t.Helper()
		modRoot, err := testutil.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		must("mkdir -p /tmp/lcm-inst/deploy/install /tmp/lcm-inst/deploy/systemd /tmp/lcm-inst/bin")
		for dst, src := range map[string]string{
			"/tmp/lcm-inst/deploy/install/install.sh":      filepath.Join(modRoot, "deploy/install/install.sh"),
			"/tmp/lcm-inst/deploy/systemd/lcm-api.service": filepath.Join(modRoot, "deploy/systemd/lcm-api.service"),
			"/tmp/lcm-inst/bin/lcm-api":                    testutil.APIBinary(t),
		} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if out, code := sh("cat > "+dst+" && chmod 0755 "+dst, b); code != 0 {
				t.Fatalf("upload %s: %s", dst, out)
			}
		}
	}
	const install = "sh /tmp/lcm-inst/deploy/install/install.sh --bin /tmp/lcm-inst/bin --no-start"

	upload()
	out := must(install)
	if !strings.Contains(out, "handed over in /var/lib/lcm/selfmanage.key") {
		t.Fatalf("install output:\n%s", out)
	}
	if got := must("stat -c '%a %U' /var/lib/lcm/selfmanage.key /var/lib/lcm"); got != "600 lcm-api\n700 lcm-api\n" {
		t.Fatalf("modes and owners: %q", got)
	}
	if got := must("cat /etc/sudoers.d/lcm; visudo -c >/dev/null && echo valid"); got != "lcm ALL=(ALL:ALL) NOPASSWD: ALL\nvalid\n" {
		t.Fatalf("sudo rule: %q", got)
	}
	must("/usr/lib/lcm/lcm-api -version") // the installed binary runs
	// The handed-over key is the management account's: it logs in and
	// has sudo, as lcm-api will use it.
	key := must("cat /var/lib/lcm/selfmanage.key")
	signer, err := ssh.ParsePrivateKey([]byte(key))
	if err != nil {
		t.Fatalf("handover key: %v", err)
	}
	mgmt, err := sshexec.Dial(ctx, sshexec.Target{Addr: h.Addr, User: "lcm", Signer: signer, HostKey: h.HostKeys[0]})
	if err != nil {
		t.Fatalf("login as lcm with the handed-over key: %v", err)
	}
	res, err := mgmt.Run(ctx, remote.Command{Cmd: "true", Sudo: true})
	mgmt.Close()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("sudo -n as lcm: %+v %v", res, err)
	}
	// Re-runs: the waiting key stays; once consumed, no second key.
	if out := must(install); !strings.Contains(out, "still waiting for lcm-api") || must("cat /var/lib/lcm/selfmanage.key") != key {
		t.Fatalf("re-run replaced the waiting key:\n%s", out)
	}
	must("rm /var/lib/lcm/selfmanage.key") // what lcm-api does on its next start
	if out := must(install); !strings.Contains(out, "already has a management key") {
		t.Fatalf("re-run after the handover:\n%s", out)
	}
	if n := must("grep -c lcm-management ~lcm/.ssh/authorized_keys"); n != "1\n" {
		t.Fatalf("authorized keys after re-runs: %q", n)
	}
	must("test ! -e /var/lib/lcm/selfmanage.key && test ! -e /var/lib/lcm/selfmanage.disabled")

	// Installation-time opt-out on a fresh host.
	testutil.ResetTestHost(t, h)
	root.Close()
	if root, err = sshexec.Dial(ctx, sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]}); err != nil {
		t.Fatal(err)
	}
	upload()
	out = must("LCM_NO_SELF_MANAGE=1 " + install)
	if !strings.Contains(out, "opted out") {
		t.Fatalf("opt-out output:\n%s", out)
	}
	if _, code := sh("id lcm", nil); code == 0 {
		t.Fatal("opt-out created the management account")
	}
	must("test ! -e /etc/sudoers.d/lcm && test ! -e /var/lib/lcm/selfmanage.key && test -f /var/lib/lcm/selfmanage.disabled && id lcm-api")
}
