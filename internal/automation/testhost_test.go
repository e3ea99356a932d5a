package automation_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/automation"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/aptrepo"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// testHost is this package's Debian test host (docs/testing.md).
const testHost = 15

func rootRun(t *testing.T, h testutil.TestHost, cmd string) (string, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", h.Addr, 10*time.Second)
	if err != nil {
		return "", err
	}
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	c, chans, reqs, err := ssh.NewClientConn(conn, h.Addr, &ssh.ClientConfig{User: "root",
		Auth: []ssh.AuthMethod{ssh.PublicKeys(h.Signer(t))}, HostKeyCallback: h.HostKeyCallback(t)})
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

// TestAutomationOnTestHost joins a real Debian host into a group whose
// schedule fires every second with a refresh rule and a custom action
// rule; the run's history names both jobs, and the custom action's effect
// (a file written as root) is on the host.
func TestAutomationOnTestHost(t *testing.T) {
	h := testutil.TestHostAt(t, testHost)
	testutil.ResetTestHost(t, h)
	defer testutil.ResetTestHost(t, h)
	// The refresh rule runs apt-get update. Against Debian's mirrors one
	// stalled fetch held the host's refresh (and so every run behind it)
	// past the wait below; the test's own repository on 127.0.0.1 is the
	// only source instead (docs/testing.md "A test's own apt repository").
	repo := aptrepo.StartStaleProbe(t)
	if out, err := rootRun(t, h, repo.OnlySourceScript()); err != nil {
		t.Fatalf("apt source on the test host: %v\n%s", err, out)
	}
	ctx := context.Background()
	p := plane.Start(t, plane.Options{})
	pr, err := p.Fleet.Probe(ctx, h.Host, h.Port)
	if err != nil {
		t.Fatal(err)
	}
	srv, job, err := p.Fleet.Join(ctx, p.Admin, fleet.JoinRequest{Name: "auto-1", Host: h.Host, Port: h.Port,
		Username: "root", Auth: domain.AuthKey, PrivateKey: string(h.PrivateKey), HostKey: pr.HostKey})
	if err != nil {
		t.Fatal(err)
	}
	if done := p.WaitJob(t, job.ID, 2*time.Minute); done.Status != domain.JobSuccess {
		t.Fatalf("join %s: %s", done.Status, done.Error)
	}
	g, err := p.Store.CreateGroup(ctx, domain.Group{Name: "debian"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Fleet.AssignServer(ctx, g.ID, srv.ID); err != nil {
		t.Fatal(err)
	}
	s := automation.New(automation.Options{Store: p.Store, Jobs: p.Jobs, Log: quiet, Owner: "host15"})
	ca, err := s.SaveCustomAction(ctx, p.Admin, "", automation.CustomActionInput{Name: ptr("proof"),
		Commands: &[]string{"id -u > /root/lcm-automation-proof", "cat /root/lcm-automation-proof"}})
	if err != nil {
		t.Fatal(err)
	}
	sch, err := s.DefineSchedule(ctx, p.Admin, g.ID, automation.ScheduleInput{Name: ptr("fast"), Cron: ptr("* * * * * *")})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []automation.RuleInput{{Type: ptr(automation.RuleRefresh)},
		{Type: ptr(automation.RuleCustomAction), Params: &domain.RuleParams{CustomActionID: ca.ID}}} {
		in.ScheduleID = sch.ID
		if _, err := s.DefineRule(ctx, p.Admin, g.ID, in); err != nil {
			t.Fatal(err)
		}
	}
	var done domain.ScheduleRun
	testutil.WaitFor(t, 3*time.Minute, "a successful run on the test host", func() bool {
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		rs, err := p.Store.ListRuns(ctx, sch.ID, 500)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Status == automation.RunSuccess {
				done = r
				return true
			}
		}
		return false
	})
	if _, err := s.SetScheduleEnabled(ctx, p.Admin, sch.ID, false); err != nil {
		t.Fatal(err)
	}
	automation.WaitIdle()
	kinds := []domain.JobKind{domain.JobRefresh, domain.JobCustomAction}
	for i, st := range done.Steps {
		j, err := p.Store.GetJob(ctx, store.SystemScope, st.Items[0].JobID)
		if err != nil || j.Kind != kinds[i] || j.Status != domain.JobSuccess {
			t.Fatalf("step %d job: %+v %v", i, j, err)
		}
	}
	out, err := rootRun(t, h, "cat /root/lcm-automation-proof")
	if err != nil || strings.TrimSpace(out) != "0" {
		t.Fatalf("custom action's effect: %v %q", err, out)
	}
	hist, _, err := p.Jobs.History(ctx, p.Admin, domain.JobFilter{ServerID: srv.ID, Kind: domain.JobRefresh})
	if err != nil || len(hist) == 0 {
		t.Fatalf("job history has no refresh: %v %+v", err, hist)
	}
}
