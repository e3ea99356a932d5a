package linuxusers

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// TestProvisioningJobsOnTestHost goes through the whole path on test host 9:
// catalogue user with a generated key and a password from the activation
// link, custom profile, assignment → provisioning job (the password hash
// travels sealed with the job's credentials) → key and password logins,
// sudo as the profile allows; a second sync changes no file; the scan;
// disable; remove; delete from the catalogue once no server has it.
func TestProvisioningJobsOnTestHost(t *testing.T) {
	h := testutil.TestHostAt(t, 9)
	ctx := context.Background()
	p := plane.Start(t, plane.Options{})
	testutil.LockTestHost(t, h)
	t.Cleanup(func() { testutil.ResetTestHost(t, h) })
	svc := New(p.Store, p.Jobs, nil)
	svc.RegisterJobs()
	if err := svc.SeedBuiltins(ctx); err != nil {
		t.Fatal(err)
	}
	root, err := sshexec.Dial(ctx, sshexec.Target{Addr: h.Addr, User: "root", Signer: h.Signer(t), HostKey: h.HostKeys[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	rootSh := func(cmd string) string {
		var out bytes.Buffer
		if _, err := root.Run(ctx, remote.Command{Cmd: cmd, Stdout: &out, Stderr: &out, Timeout: 3 * time.Minute}); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return out.String()
	}
	// systemd's tools are missing on the minimal test host; a server has them.
	rootSh("command -v systemctl >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd acl >/dev/null 2>&1")
	// The server as joined, managed through root (sudo works for root too).
	srv, err := p.Store.CreateServer(ctx, store.NewServer{
		Server: domain.Server{Name: "lu-host-9", Host: h.Host, Port: h.Port, Transport: domain.TransportSSH, Status: domain.ServerGreen,
			Joined: true, AuthMethod: domain.AuthKey, HostKey: h.HostKeys[0], PackageFamily: "apt"},
		Secrets: store.ServerSecrets{Username: "root", PrivateKey: string(h.PrivateKey)},
	})
	if err != nil {
		t.Fatal(err)
	}

	rules := []domain.ProfileRule{{Kind: "command", Argv: []string{"/usr/bin/systemctl", "status", "ssh"}}}
	prof, err := svc.CreateProfile(ctx, p.Admin, ProfileInput{Name: ptr("Ops"), Rules: &rules})
	if err != nil {
		t.Fatal(err)
	}
	u, err := svc.CreateUser(ctx, p.Admin, UserInput{Username: "carla", FullName: ptr("Carla Jobs"), DefaultProfileID: &prof.Profile.ID})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := svc.GenerateKey(ctx, p.Admin, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey([]byte(gen.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	link, err := svc.GenerateActivationLink(ctx, p.Admin, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	const pw = "Amber-Quarry-58z"
	if _, err := svc.ConsumeActivationLink(ctx, link.Token, pw); err != nil {
		t.Fatal(err)
	}

	wait := func(j domain.Job, err error) domain.Job {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		done := p.WaitJob(t, j.ID, 3*time.Minute)
		if done.Status != domain.JobSuccess {
			o, _ := p.Jobs.Output(ctx, p.Admin, j.ID, 0)
			t.Fatalf("job %s %s: %s\n%s", j.Kind, done.Status, done.Error, o.Output)
		}
		// The finish hooks run right after the final state is stored.
		time.Sleep(300 * time.Millisecond)
		return done
	}
	wait(svc.AssignServer(ctx, p.Admin, srv.ID, u.ID, ""))
	provs, err := p.Store.ListLinuxUserProvisions(ctx, u.ID, srv.ID)
	if err != nil || len(provs) != 1 || provs[0].State != domain.ProvisionProvisioned || provs[0].ProfileSlug != "ops" {
		t.Fatalf("provisions %+v %v", provs, err)
	}
	if pend, err := svc.Pending(ctx, p.Admin, srv.ID); err != nil || len(pend) != 0 {
		t.Fatalf("pending after provisioning: %+v %v", pend, err)
	}

	login := func(user string, auth sshexec.Target) (*sshexec.Client, error) {
		auth.Addr, auth.User, auth.HostKey = h.Addr, user, h.HostKeys[0]
		return sshexec.Dial(ctx, auth)
	}
	c, err := login("carla", sshexec.Target{Signer: signer})
	if err != nil {
		t.Fatalf("key login: %v", err)
	}
	var out bytes.Buffer
	_, _ = c.Run(ctx, remote.Command{Cmd: "sudo -n -l /usr/bin/systemctl --no-pager status ssh; sudo -n sh -c id; sudo -n /usr/bin/id", Stdout: &out, Stderr: &out})
	c.Close()
	if !strings.Contains(out.String(), "/usr/bin/systemctl --no-pager status ssh") || strings.Contains(out.String(), "uid=0") {
		t.Fatalf("sudo as carla:\n%s", out.String())
	}
	if c, err := login("carla", sshexec.Target{Password: pw}); err != nil {
		t.Fatalf("password login: %v", err)
	} else {
		c.Close()
	}

	// A second sync changes no file.
	snap := "sha256sum /etc/passwd /etc/shadow /etc/group /etc/gshadow /etc/sudoers.d/lcm-prof-ops /home/carla/.ssh/authorized_keys"
	before := rootSh(snap)
	wait(svc.Sync(ctx, p.Admin, srv.ID))
	if after := rootSh(snap); after != before {
		t.Fatalf("sync changed files:\n%s\n%s", before, after)
	}

	// The scan lists carla as a managed human account.
	wait(svc.Scan(ctx, p.Admin, srv.ID))
	su, err := svc.ServerUsers(ctx, p.Admin, srv.ID)
	if err != nil || su.ScannedAt == nil {
		t.Fatalf("scan: %v", err)
	}
	var seen *actions.Account
	for i := range su.Accounts {
		if su.Accounts[i].Username == "carla" {
			seen = &su.Accounts[i]
		}
	}
	if seen == nil || !seen.Human || !seen.Managed {
		t.Fatalf("carla in scan: %+v", seen)
	}

	// Disable: no login; the provision says disabled; a sync keeps it so.
	wait(svc.UserOpByName(ctx, p.Admin, srv.ID, actions.LinuxUserDisable, "carla", false))
	if c, err := login("carla", sshexec.Target{Signer: signer}); err == nil {
		c.Close()
		t.Fatal("login after disable")
	}
	if provs, _ := p.Store.ListLinuxUserProvisions(ctx, u.ID, srv.ID); len(provs) != 1 || provs[0].State != domain.ProvisionDisabled {
		t.Fatalf("after disable: %+v", provs)
	}
	// Delete from the catalogue is refused while the account exists.
	if _, err := svc.DeleteUser(ctx, p.Admin, u.ID); codeOf(err) != "still_provisioned" {
		t.Fatalf("delete while provisioned: %v", err)
	}
	// Remove from every server, then the catalogue entry can go.
	jobs, err := svc.RemoveFromServers(ctx, p.Admin, u.ID, true)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("remove from servers: %v %v", jobs, err)
	}
	wait(jobs[0], nil)
	if o := rootSh("id carla 2>&1; test -d /home/carla && echo home-left; true"); !strings.Contains(o, "no such user") || strings.Contains(o, "home-left") {
		t.Fatalf("carla still on the host: %s", o)
	}
	if _, err := svc.DeleteUser(ctx, p.Admin, u.ID); err != nil {
		t.Fatalf("delete after removal: %v", err)
	}
}
