package jobs_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// simAptOutput is the console text every simulated apt run prints.
func simAptOutput(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Setting up libsim%d:amd64 (1.0-%d+deb12u1) ...\n", i, i)
	}
	return b.String()[:n]
}

// simTable answers LCM's upgrade-security script (and any command with
// apt-get in it) like apt: it waits latency, prints out, exits 0.
func simTable(latency time.Duration, out string) *fleetsim.Table {
	t := fleetsim.DefaultTable()
	t.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "apt-get") }, func(ctx context.Context, r *fleetsim.Request) int {
		select {
		case <-time.After(latency):
		case <-ctx.Done():
			return 137
		}
		_, _ = io.WriteString(r.Stdout, out)
		return 0
	})
	return t
}

func startSim(t testing.TB, n int, latency time.Duration, out string) *fleetsim.Fleet {
	t.Helper()
	f, err := fleetsim.Start(fleetsim.Config{N: n, Latency: 0, Responders: simTable(latency, out)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func simServer(t testing.TB, p *plane.Plane, inst *fleetsim.Instance, groups ...string) domain.Server {
	t.Helper()
	key, err := actions.NewManagementKey("test")
	if err != nil {
		t.Fatal(err)
	}
	return p.AddServer(t, inst.Hostname, inst.Addr, inst.AuthorizedHostKey(), key, groups...)
}

func TestUpgradeSecurityOnSimulator(t *testing.T) {
	out := simAptOutput(300 << 10)
	f := startSim(t, 1, 200*time.Millisecond, out)
	p := plane.Start(t, plane.Options{})
	srv := simServer(t, p, f.Instances[0])
	ctx := context.Background()

	job, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != domain.JobPending || job.Kind != domain.JobUpgradeSecurity {
		t.Fatalf("submit returned %+v", job)
	}
	// One job per server: a second submit is refused with the running job.
	_, err = p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if busy, ok := err.(*jobs.BusyError); !ok || busy.JobID != job.ID {
		t.Fatalf("second submit: want busy with %s, got %v", job.ID, err)
	}
	done := p.WaitJob(t, job.ID, 20*time.Second)
	if done.Status != domain.JobSuccess || done.ExitCode == nil || *done.ExitCode != 0 {
		t.Fatalf("job ended %s (%s)", done.Status, done.Error)
	}
	var got []byte
	var off int64
	for {
		o, err := p.Jobs.Output(ctx, p.Admin, job.ID, off)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Output...)
		off = o.Offset
		if o.Complete {
			break
		}
	}
	if !strings.Contains(string(got), out) {
		t.Fatalf("output missing: got %d bytes", len(got))
	}
	hist, total, err := p.Jobs.History(ctx, p.Admin, domain.JobFilter{ServerID: srv.ID})
	if err != nil || total != 1 || hist[0].ID != job.ID || hist[0].ServerName != srv.Name {
		t.Fatalf("history: %v %d %+v", err, total, hist)
	}
	// The lock is free again: the next job starts.
	next, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	p.WaitJob(t, next.ID, 20*time.Second)
}
