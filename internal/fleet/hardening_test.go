package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// TestHardeningJobsOnTestHost hardens test host 12 through the fleet
// service (job, worker, finish hook) and checks the server record and the
// host, then the restricted-mode gate of reboot.
func TestHardeningJobsOnTestHost(t *testing.T) {
	h := testutil.TestHostAt(t, 12) // host 12: internal/actions resets host 8 while this package runs
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
	p := plane.Start(t, plane.Options{})
	ctx := context.Background()
	pr := probe(t, p, h)
	srv, job, err := p.Fleet.Join(ctx, p.Admin, fleet.JoinRequest{Name: "hardened-1", Host: h.Host, Port: h.Port,
		Username: "root", Auth: domain.AuthKey, PrivateKey: string(h.PrivateKey), HostKey: pr.HostKey})
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, job.ID, 2*time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("join %s: %s\n%s", done.Status, done.Error, readAll(t, p, p.Admin, job.ID))
	}
	if s, _ := p.Fleet.Get(ctx, p.Admin, srv.ID); s.SSHHardened || s.Hardening.SSHHardenedAt != nil || s.Hardening.SudoMode != domain.SudoFull {
		t.Fatalf("fresh server: %+v", s.Hardening)
	}

	start := time.Now()
	j, err := p.Fleet.HardenSSH(ctx, p.Admin, srv.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, j.ID, time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("harden %s: %s\n%s", done.Status, done.Error, readAll(t, p, p.Admin, j.ID))
	}
	t.Logf("harden-ssh job end to end: %s", time.Since(start).Round(time.Millisecond))
	s, _ := p.Fleet.Get(ctx, p.Admin, srv.ID)
	if !s.SSHHardened || s.Hardening.SSHHardenedAt == nil || !slices.Contains(s.Hardening.SSHProof, "passwordauthentication no") || s.Hardening.PortAt == nil {
		t.Fatalf("after harden: %v %+v", s.SSHHardened, s.Hardening)
	}
	if out, err := rootRun(t, h, "sshd -T -C user=bootstrap,host=x,addr=127.0.0.1 | grep ^passwordauthentication"); err != nil || out != "passwordauthentication no\n" {
		t.Fatalf("on the host: %v %q", err, out)
	}

	// An earlier main-file line wins: the job fails, names it, rolls back;
	// the record shows the proven state (not hardened).
	if out, err := rootRun(t, h, "rm "+"/etc/ssh/sshd_config.d/60-lcm-hardening.conf && sed -i '1i PasswordAuthentication yes' /etc/ssh/sshd_config && "+testutil.ReloadSSHD); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	j, err = p.Fleet.HardenSSH(ctx, p.Admin, srv.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	done := p.WaitJob(t, j.ID, time.Minute)
	if done.Status != domain.JobFailed || !strings.Contains(done.Error, "/etc/ssh/sshd_config:1: PasswordAuthentication yes wins") || !strings.Contains(done.Error, "rolled back") {
		t.Fatalf("harden over an earlier line: %s %q", done.Status, done.Error)
	}
	if s, _ := p.Fleet.Get(ctx, p.Admin, srv.ID); s.SSHHardened || !slices.Contains(s.Hardening.SSHProof, "passwordauthentication yes") {
		t.Fatalf("after the rollback: %v %+v", s.SSHHardened, s.Hardening)
	}

	// Root login off, proven for root's connection.
	j, err = p.Fleet.SetSSHRootLogin(ctx, p.Admin, srv.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, j.ID, time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("root login %s: %s\n%s", done.Status, done.Error, readAll(t, p, p.Admin, j.ID))
	}
	if s, _ := p.Fleet.Get(ctx, p.Admin, srv.ID); s.Hardening.RootLogin != "no" || s.Hardening.RootLoginAt == nil {
		t.Fatalf("root login record: %+v", s.Hardening)
	}
	if _, err := rootRun(t, h, "true"); err == nil {
		t.Fatal("root must not log in any more")
	}

	// Restricted sudo mode, for real: the job installs the helper and
	// proves the allowlist; the stored mode follows the proof.
	t.Setenv("LCM_HELPER_BIN", buildHelper(t))
	j, err = p.Fleet.RestrictSudo(ctx, p.Admin, srv.ID, domain.SudoRestricted)
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, j.ID, 2*time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("restrict-sudo %s: %s\n%s", done.Status, done.Error, readAll(t, p, p.Admin, j.ID))
	}
	s, _ = p.Fleet.Get(ctx, p.Admin, srv.ID)
	if s.Hardening.SudoMode != domain.SudoRestricted || s.Hardening.SudoModeAt == nil || !strings.HasPrefix(s.Hardening.HelperVersion, "lcm-helper ") ||
		len(s.Hardening.HelperSHA256) != 64 || s.Hardening.HelperAt == nil {
		t.Fatalf("sudo mode record: %+v", s.Hardening)
	}
	// LCM's version changes while the server stays restricted: the next
	// job that uses the helper (unharden-ssh) upgrades it first, and the
	// record shows the new one.
	oldSum := s.Hardening.HelperSHA256
	t.Setenv("LCM_HELPER_BIN", buildHelperAs(t, "9.8.7"))
	j, err = p.Fleet.UnhardenSSH(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, j.ID, 2*time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("unharden with a helper upgrade %s: %s\n%s", done.Status, done.Error, readAll(t, p, p.Admin, j.ID))
	}
	testutil.WaitFor(t, 10*time.Second, "the upgraded helper on the record", func() bool {
		s, _ = p.Fleet.Get(ctx, p.Admin, srv.ID)
		return strings.HasPrefix(s.Hardening.HelperVersion, "lcm-helper 9.8.7 ") && s.Hardening.HelperSHA256 != oldSum
	})
	if s.Hardening.SudoMode != domain.SudoRestricted || !strings.Contains(readAll(t, p, p.Admin, j.ID), "helper upgraded to lcm-helper 9.8.7") {
		t.Fatalf("after the upgrade: %+v\n%s", s.Hardening, readAll(t, p, p.Admin, j.ID))
	}
	if out, err := rootRunAsRootAgain(t, h); err != nil || !strings.Contains(out, "NOPASSWD:SETENV: /usr/bin/apt-get") {
		t.Fatalf("rule on the host: %v %s", err, out)
	}
	// Reboot is refused at submit, before a job exists.
	_, err = p.Fleet.Reboot(ctx, p.Admin, srv.ID)
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != "restricted_mode" || !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("reboot in restricted mode: %v", err)
	}
	// A connectivity check keeps working.
	j, err = p.Fleet.CheckConnectivity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, j.ID, time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("connectivity in restricted mode %s: %s", done.Status, done.Error)
	}
	j, err = p.Fleet.RestrictSudo(ctx, p.Admin, srv.ID, domain.SudoFull)
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, j.ID, 2*time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("restrict-sudo full %s: %s\n%s", done.Status, done.Error, readAll(t, p, p.Admin, j.ID))
	}
	if s, _ := p.Fleet.Get(ctx, p.Admin, srv.ID); s.Hardening.SudoMode != domain.SudoFull {
		t.Fatalf("sudo mode record after full: %+v", s.Hardening)
	}
	if _, err := p.Fleet.RestrictSudo(ctx, p.Admin, srv.ID, "root"); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("bad mode: %v", err)
	}
}

// rootRunAsRootAgain reads the management rule; root's own SSH login was
// turned off above, so it goes through the bootstrap user's sudo.
func rootRunAsRootAgain(t *testing.T, h testutil.TestHost) (string, error) {
	t.Helper()
	c, err := sshexec.Dial(context.Background(), sshexec.Target{Addr: h.Addr, User: testutil.BootstrapUser, Password: h.Password, HostKey: h.HostKeys[0]})
	if err != nil {
		return "", err
	}
	defer c.Close()
	var out strings.Builder
	_, err = c.Run(context.Background(), remote.Command{Cmd: "sudo -S -p '' cat /etc/sudoers.d/lcm", Stdin: strings.NewReader(h.Password + "\n"), Stdout: &out})
	return out.String(), err
}

var (
	helperOnce sync.Once
	helperPath string
)

// buildHelperAs builds cmd/helper as release version v.
func buildHelperAs(t *testing.T, v string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lcm-helper")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X github.com/lcmproject/lcm/internal/version.semver="+v, "-o", p, "github.com/lcmproject/lcm/cmd/helper")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build helper %s: %v\n%s", v, err, out)
	}
	return p
}

func buildHelper(t *testing.T) string {
	t.Helper()
	helperOnce.Do(func() {
		helperPath = filepath.Join(os.TempDir(), fmt.Sprintf("lcm-helper-fleet-test-%d", os.Getpid()))
		cmd := exec.Command("go", "build", "-trimpath", "-o", helperPath, "github.com/lcmproject/lcm/cmd/helper")
		cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build helper: %v\n%s", err, out)
		}
	})
	return helperPath
}

// TestWorkerRefusesBlockedJobInRestrictedMode: a reboot submitted while the
// server was in full mode reaches the worker after the switch to restricted
// mode: the worker refuses it (the credentials carry the stored mode).
func TestWorkerRefusesBlockedJobInRestrictedMode(t *testing.T) {
	f, err := fleetsim.Start(fleetsim.Config{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	p := plane.Start(t, plane.Options{NoWorker: true})
	ctx := context.Background()
	key, _ := actions.NewManagementKey("t")
	srv := p.AddServer(t, "sim", f.Instances[0].Addr, f.Instances[0].AuthorizedHostKey(), key)
	j, err := p.Fleet.Reboot(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Store.RecordSudoMode(ctx, srv.ID, domain.SudoRestricted, time.Now()); err != nil {
		t.Fatal(err)
	}
	p.StartWorker(t, []string{domain.DefaultSegment}, 1)
	done := p.WaitJob(t, j.ID, time.Minute)
	if done.Status != domain.JobFailed || !strings.Contains(done.Error, "refused: the management user's sudo is restricted") {
		t.Fatalf("reboot reached the worker in restricted mode: %s %q", done.Status, done.Error)
	}
}

// TestSSHPortJobOnTestHost: the stored port follows a proven move, and the
// next job reaches the server on the new port.
func TestSSHPortJobOnTestHost(t *testing.T) {
	h := testutil.TestHostAt(t, 12) // host 12: internal/actions resets host 8 while this package runs
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
	p := plane.Start(t, plane.Options{})
	ctx := context.Background()
	pr := probe(t, p, h)
	srv, job, err := p.Fleet.Join(ctx, p.Admin, fleet.JoinRequest{Name: "port-1", Host: h.Host, Port: h.Port,
		Username: "root", Auth: domain.AuthKey, PrivateKey: string(h.PrivateKey), HostKey: pr.HostKey})
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, job.ID, 2*time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("join %s: %s", done.Status, done.Error)
	}
	// As on a real server: a ListenAddress without a port.
	if out, err := rootRun(t, h, fmt.Sprintf(`sed -i 's/^ListenAddress %[1]s:22$/ListenAddress %[1]s/' /etc/ssh/sshd_config.d/zz-lcm-testhost.conf && `, h.Host)+testutil.ReloadSSHD); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for _, port := range []int{2222, 22} {
		j, err := p.Fleet.SetSSHPort(ctx, p.Admin, srv.ID, port)
		if err != nil {
			t.Fatal(err)
		}
		if done := p.WaitJob(t, j.ID, time.Minute); done.Status != domain.JobSuccess {
			t.Fatalf("ssh-port %d %s: %s\n%s", port, done.Status, done.Error, readAll(t, p, p.Admin, j.ID))
		}
		if s, _ := p.Fleet.Get(ctx, p.Admin, srv.ID); s.Port != port || s.Hardening.PortAt == nil || s.Hardening.PortAt.Before(j.CreatedAt) {
			t.Fatalf("stored port %d (proven %v), want %d", s.Port, s.Hardening.PortAt, port)
		}
		// The next job dials the stored port.
		c, err := p.Fleet.CheckConnectivity(ctx, p.Admin, srv.ID)
		if err != nil {
			t.Fatal(err)
		}
		if done := p.WaitJob(t, c.ID, time.Minute); done.Status != domain.JobSuccess {
			t.Fatalf("connectivity on port %d: %s %s", port, done.Status, done.Error)
		}
	}
}
