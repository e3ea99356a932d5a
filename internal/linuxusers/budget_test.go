package linuxusers

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// TestProvision100Servers provisions one user with a profile to 100
// simulated servers end to end (assignment, 100 jobs through NATS and the
// worker with sealed credentials, SSH to each simulated server, outcomes
// recorded), the jobs started by the group assignment itself. The simulated servers accept the script (they check it is the
// provisioning script with the user's sudoers file) and answer success.
// The time is the budget (≤ 5 s): BenchmarkProvision100Servers
// measures it; the test only proves the outcome.
func TestProvision100Servers(t *testing.T) {
	t.Logf("one user with a profile to 100 simulated servers: %s", provision100(t))
}

// BenchmarkProvision100Servers: go test ./internal/linuxusers -run '^$' -bench Provision100 -benchtime 3x
func BenchmarkProvision100Servers(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.ReportMetric(provision100(b).Seconds(), "s/100-servers")
	}
}

func provision100(t testing.TB) time.Duration {
	ctx := context.Background()
	table := fleetsim.DefaultTable()
	table.HandleFunc(func(cmd string) bool { return cmd == "sh -s" }, func(ctx context.Context, r *fleetsim.Request) int {
		script, _ := io.ReadAll(r.Stdin)
		if !strings.Contains(string(script), "lcm-prof-budget") || !strings.Contains(string(script), "visudo -cf") {
			_, _ = io.WriteString(r.Stderr, "unexpected script\n")
			return 1
		}
		_, _ = io.WriteString(r.Stdout, "lcm: account hana in place\n")
		return 0
	})
	f, err := fleetsim.Start(fleetsim.Config{N: 100, Responders: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	p := plane.Start(t, plane.Options{Concurrency: 100})
	svc := New(p.Store, p.Jobs, nil)
	svc.RegisterJobs()
	if err := svc.SeedBuiltins(ctx); err != nil {
		t.Fatal(err)
	}
	key, _ := actions.NewManagementKey("t")
	g, err := p.Store.CreateGroup(ctx, domain.Group{Name: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	var servers []domain.Server
	for _, inst := range f.Instances {
		servers = append(servers, p.AddServer(t, inst.Hostname, inst.Addr, inst.AuthorizedHostKey(), key, g.ID))
	}
	rules := []domain.ProfileRule{{Argv: []string{"/usr/bin/systemctl", "restart", "nginx"}}}
	prof, err := svc.CreateProfile(ctx, p.Admin, ProfileInput{Name: ptr("Budget"), Rules: &rules})
	if err != nil {
		t.Fatal(err)
	}
	u, err := svc.CreateUser(ctx, p.Admin, UserInput{Username: "hana"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.GenerateKey(ctx, p.Admin, u.ID); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	// The group assignment starts one provisioning job per server itself.
	ch, err := svc.AssignGroup(ctx, p.Admin, u.ID, g.ID, prof.Profile.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Jobs) != len(servers) || len(ch.NotStarted) != 0 {
		t.Fatalf("%d jobs for %d servers, not started: %+v", len(ch.Jobs), len(servers), ch.NotStarted)
	}
	jobs := ch.Jobs
	for _, j := range jobs {
		if done := p.WaitJob(t, j.ID, 30*time.Second); done.Status != domain.JobSuccess {
			t.Fatalf("job %s: %s %s", j.ID, done.Status, done.Error)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		provs, err := p.Store.ListLinuxUserProvisions(ctx, u.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(provs) == 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 100 provisions recorded", len(provs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}
