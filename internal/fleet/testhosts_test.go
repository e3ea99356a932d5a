package fleet_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// rootRun runs cmd as root on a test host with the bootstrap key, outside
// LCM, to check what LCM did.
func rootRun(t *testing.T, h testutil.TestHost, cmd string) (string, error) {
	t.Helper()
	return userRun(t, h, "root", h.Signer(t), cmd)
}

func userRun(t *testing.T, h testutil.TestHost, user string, signer ssh.Signer, cmd string) (string, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", h.Addr, 10*time.Second)
	if err != nil {
		return "", err
	}
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	c, chans, reqs, err := ssh.NewClientConn(conn, h.Addr, &ssh.ClientConfig{User: user,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: h.HostKeyCallback(t)})
	if err != nil {
		conn.Close()
		return "", err
	}
	cl := ssh.NewClient(c, chans, reqs)
	defer cl.Close()
	sess, err := cl.NewSession()
	if err != nil {
		return "", err
	}
	defer sess.Close()
	out, err := sess.CombinedOutput(cmd)
	return string(out), err
}

func probe(t *testing.T, p *plane.Plane, h testutil.TestHost) fleet.ProbeResult {
	t.Helper()
	res, err := p.Fleet.Probe(context.Background(), h.Host, h.Port)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(h.HostKeys, res.HostKey) || !strings.HasPrefix(res.FingerprintSHA256, "SHA256:") {
		t.Fatalf("probe returned %s (%s), not one of the host's keys", res.HostKey, res.FingerprintSHA256)
	}
	return res
}

// readAll polls ssh-output until complete.
func readAll(t *testing.T, p *plane.Plane, pr *domain.Principal, id string) string {
	t.Helper()
	var b strings.Builder
	var off int64
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		o, err := p.Jobs.Output(context.Background(), pr, id, off)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(o.Output)
		off = o.Offset
		if o.Complete {
			return b.String()
		}
		time.Sleep(20 * time.Millisecond) // polling the output, not waiting for time to pass
	}
	t.Fatalf("output of %s never complete", id)
	return ""
}

// follow collects a live stream until it ends.
func follow(t *testing.T, p *plane.Plane, pr *domain.Principal, id string) (string, domain.Job) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ch, err := p.Jobs.Follow(ctx, pr, id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var last domain.Job
	for ev := range ch {
		if ev.Output != nil {
			if int64(b.Len()) != ev.Output.Offset {
				t.Fatalf("stream offset %d after %d bytes", ev.Output.Offset, b.Len())
			}
			b.Write(ev.Output.Data)
		}
		if ev.State != nil {
			last = *ev.State
		}
	}
	return b.String(), last
}

// TestJoinAndUpgradeSecurityOnTestHost runs the onboarding and a real apt
// security upgrade against a real Debian test host.
func TestJoinAndUpgradeSecurityOnTestHost(t *testing.T) {
	h := testutil.TestHostAt(t, 2)
	testutil.LockTestHost(t, h) // internal/testutil's own test reads host 2
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
	p := plane.Start(t, plane.Options{})
	ctx := context.Background()
	pr := probe(t, p, h)

	srv, job, err := p.Fleet.Join(ctx, p.Admin, fleet.JoinRequest{Name: "web-1", Host: h.Host, Port: h.Port,
		Username: "root", Auth: domain.AuthKey, PrivateKey: string(h.PrivateKey), HostKey: pr.HostKey})
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, job.ID, 2*time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("join %s: %s\n%s", done.Status, done.Error, readAll(t, p, p.Admin, job.ID))
	}
	// The effect, checked from outside LCM: user, key, validated sudo rule.
	out, err := rootRun(t, h, "id -un lcm && stat -c '%a %U' /etc/sudoers.d/lcm && cat /etc/sudoers.d/lcm && wc -l < ~lcm/.ssh/authorized_keys && visudo -c")
	if err != nil || !strings.Contains(out, "440 root") || !strings.Contains(out, "lcm ALL=(ALL:ALL) NOPASSWD: ALL") {
		t.Fatalf("join effect on the host: %v\n%s", err, out)
	}
	joined, err := p.Fleet.Get(ctx, p.Admin, srv.ID)
	if err != nil || !joined.Joined || joined.Hostname != h.Hostname || joined.PackageFamily != "apt" || joined.HostKeyFingerprint != pr.FingerprintSHA256 {
		t.Fatalf("joined server: %v %+v", err, joined)
	}
	if _, sec, _ := p.Store.ServerSecretsOf(ctx, srv.ID); sec.BootstrapKey != "" || sec.PrivateKey == "" || sec.PendingKey != "" {
		t.Fatal("after join the bootstrap key must be gone and the management key stored")
	}
	joinOut := readAll(t, p, p.Admin, job.ID)
	if !strings.Contains(joinOut, "proven: new key logs in as lcm") {
		t.Fatalf("join output lacks the proof:\n%s", joinOut)
	}

	// A real apt security upgrade, followed live and read back by polling.
	up, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	live, final := follow(t, p, p.Admin, up.ID)
	if final.Status != domain.JobSuccess {
		t.Fatalf("upgrade-security %s: %s\n%s", final.Status, final.Error, live)
	}
	polled := readAll(t, p, p.Admin, up.ID)
	if polled != live || !strings.Contains(polled, "lcm: security updates:") || !strings.Contains(polled, "Setting up") {
		t.Fatalf("output: live %d bytes, polled %d bytes:\n%s", len(live), len(polled), polled)
	}
	sim, err := rootRun(t, h, "apt-get -s -o Debug::NoLocking=1 dist-upgrade | grep -ci security || true")
	if err != nil || strings.TrimSpace(sim) != "0" {
		t.Fatalf("security updates still pending after the job: %v %s", err, sim)
	}
	hist, total, err := p.Jobs.History(ctx, p.Admin, domain.JobFilter{ServerID: srv.ID})
	if err != nil || total != 2 || hist[0].Kind != domain.JobUpgradeSecurity || hist[1].Kind != domain.JobJoin {
		t.Fatalf("history: %v %d %+v", err, total, hist)
	}
}

// TestPasswordJoinRotateDecommissionOnTestHost onboards through the
// bootstrap user whose sudo asks for its password, rotates the key and
// decommissions the server.
func TestPasswordJoinRotateDecommissionOnTestHost(t *testing.T) {
	h := testutil.TestHostAt(t, 3)
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
	p := plane.Start(t, plane.Options{})
	ctx := context.Background()
	pr := probe(t, p, h)
	srv, job, err := p.Fleet.Join(ctx, p.Admin, fleet.JoinRequest{Name: "db-1", Host: h.Host, Port: h.Port,
		Username: testutil.BootstrapUser, Auth: domain.AuthPassword, Password: h.Password, HostKey: pr.HostKey})
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, job.ID, 2*time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("join %s: %s\n%s", done.Status, done.Error, readAll(t, p, p.Admin, job.ID))
	}
	if out := readAll(t, p, p.Admin, job.ID); strings.Contains(out, h.Password) {
		t.Fatal("the bootstrap password appears in the console output")
	}
	_, before, _ := p.Store.ServerSecretsOf(ctx, srv.ID)
	if before.LoginPassword != h.Password {
		t.Fatal("a password device must keep its encrypted login password")
	}

	rot, err := p.Fleet.RotateKey(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, rot.ID, time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("rotate %s: %s\n%s", done.Status, done.Error, readAll(t, p, p.Admin, rot.ID))
	}
	_, after, _ := p.Store.ServerSecretsOf(ctx, srv.ID)
	if after.PrivateKey == before.PrivateKey || after.CredVersion <= before.CredVersion {
		t.Fatal("rotation did not replace the stored key")
	}
	oldSigner, _ := ssh.ParsePrivateKey([]byte(before.PrivateKey))
	if _, err := userRun(t, h, "lcm", oldSigner, "true"); err == nil {
		t.Fatal("the old key still logs in after rotation")
	}
	newSigner, _ := ssh.ParsePrivateKey([]byte(after.PrivateKey))
	if out, err := userRun(t, h, "lcm", newSigner, "sudo -n true && echo ok"); err != nil || !strings.Contains(out, "ok") {
		t.Fatalf("new key: %v %s", err, out)
	}
	chk, err := p.Fleet.CheckConnectivity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, chk.ID, time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("connectivity %s: %s", done.Status, done.Error)
	}

	if _, err := p.Fleet.Decommission(ctx, p.Admin, srv.ID); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, "server deleted after decommission", func() bool {
		_, err := p.Fleet.Get(ctx, p.Admin, srv.ID)
		return err != nil
	})
	if out, _ := rootRun(t, h, "test -e /etc/sudoers.d/lcm && echo present || echo gone"); !strings.Contains(out, "gone") {
		t.Fatalf("sudo rule still on the host: %s", out)
	}
}
