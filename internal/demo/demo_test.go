package demo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/demo"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

type counts struct {
	servers, packages, outdated, days int
	status                            map[string]domain.ServerStatus
}

func countAll(t *testing.T, p *plane.Plane, inv *inventory.Service, st *status.Service) counts {
	t.Helper()
	ctx := context.Background()
	srvs, err := p.Store.ListServers(ctx, store.ScopeOf(p.Admin), store.ServerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	c := counts{servers: len(srvs), status: map[string]domain.ServerStatus{}}
	ids := []string{}
	for _, s := range srvs {
		ids = append(ids, s.ID)
		pk, err := inv.Packages(ctx, p.Admin, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		od, err := inv.Outdated(ctx, p.Admin, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		h, err := inv.StorageHistory(ctx, p.Admin, s.ID, "/", 90)
		if err != nil {
			t.Fatal(err)
		}
		c.packages += len(pk)
		c.outdated += len(od)
		c.days += len(h.Samples)
	}
	res, err := st.Of(ctx, p.Admin, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		c.status[s.Name] = res[s.ID].Status
	}
	return c
}

func setup(t *testing.T) (*plane.Plane, *inventory.Service, *status.Service, demo.Deps) {
	// No worker: a job that is not simulated would stay pending forever.
	p := plane.Start(t, plane.Options{NoWorker: true})
	st := status.New(p.Store, nil)
	inv := inventory.New(p.Store, inventory.Options{OnIngest: st.RecomputeMany})
	p.Jobs.SetSimulator(demo.Simulator(p.Store, nil))
	p.Jobs.SimulatedDelay = 20 * time.Millisecond
	return p, inv, st, demo.Deps{Store: p.Store, Inventory: inv, Status: st}
}

func TestSeedIsIdempotent(t *testing.T) {
	p, inv, st, d := setup(t)
	ctx := context.Background()
	r1, err := demo.Seed(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	first := countAll(t, p, inv, st)
	r2, err := demo.Seed(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	second := countAll(t, p, inv, st)
	if r1.Created != 8 || r2.Created != 0 || r2.Existing != 8 {
		t.Fatalf("seed results %+v then %+v", r1, r2)
	}
	if first.servers != 8 || first.packages < 80 || first.outdated < 5 || first.days < 8*59 {
		t.Fatalf("first seed counts %+v", first)
	}
	if first.servers != second.servers || first.packages != second.packages || first.outdated != second.outdated || first.days != second.days {
		t.Fatalf("counts changed: %+v vs %+v", first, second)
	}
	if first.status["app-01"] != domain.ServerRed || first.status["mail-01"] != domain.ServerYellow {
		t.Fatalf("statuses %v, want app-01 red and mail-01 yellow", first.status)
	}
	ids, _ := demo.IDs(ctx, p.Store)
	if len(ids) != 8 {
		t.Fatalf("%d demo markers, want 8", len(ids))
	}
	hist, err := inv.StorageHistory(ctx, p.Admin, serverID(t, p, "db-01"), "/", 90)
	if err != nil || len(hist.Samples) < 59 || hist.Samples[len(hist.Samples)-1].UsedPercent <= hist.Samples[0].UsedPercent {
		t.Fatalf("db-01 not trending up: %v %+v", err, hist)
	}
}

func serverID(t *testing.T, p *plane.Plane, name string) string {
	t.Helper()
	s, err := p.Store.ListServers(context.Background(), store.ScopeOf(p.Admin), store.ServerFilter{Q: name})
	if err != nil || len(s) != 1 {
		t.Fatalf("server %s: %v %d", name, err, len(s))
	}
	return s[0].ID
}

// A demo server's job runs simulated, never through a worker (the plane
// has none, so a published job would stay pending and no SSH dial can
// happen), and succeeds with canned output.
func TestDemoJobIsSimulated(t *testing.T) {
	p, _, _, d := setup(t)
	ctx := context.Background()
	if _, err := demo.Seed(ctx, d); err != nil {
		t.Fatal(err)
	}
	// Each kind with a line its simulated output must hold.
	for _, c := range []struct{ kind, want string }{
		{"check", "host key matches pinned"},
		{"upgrade", "Upgrading openssl"},
		{"reboot", "Server is back after"},
		{"hold", "openssl set on hold."},
		{"upgrade-all", " upgraded, 0 newly installed"},
		{"refresh", "Listing packages"},
	} {
		kind := c.kind
		id := serverID(t, p, "web-01")
		var job domain.Job
		var err error
		switch kind {
		case "check":
			job, err = p.Fleet.CheckConnectivity(ctx, p.Admin, id)
		case "upgrade":
			job, err = p.Fleet.UpgradeSecurity(ctx, p.Admin, id)
		case "reboot":
			job, err = p.Fleet.Reboot(ctx, p.Admin, id)
		case "hold":
			job, err = p.Fleet.PackageAction(ctx, p.Admin, id, actions.PkgHold, []string{"openssl"})
		case "upgrade-all":
			job, err = p.Fleet.PackageAction(ctx, p.Admin, id, actions.PkgUpgradeAll, nil)
		case "refresh":
			job, err = p.Fleet.Refresh(ctx, p.Admin, id)
		}
		if err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, "simulated job finished", func() bool {
			j, err := p.Jobs.Get(ctx, p.Admin, job.ID)
			return err == nil && j.Status.Terminal()
		})
		j, _ := p.Jobs.Get(ctx, p.Admin, job.ID)
		if j.Status != domain.JobSuccess {
			t.Fatalf("job %+v, want success by the simulator", j)
		}
		out, err := p.Jobs.Output(ctx, p.Admin, job.ID, 0)
		if err != nil || !out.Complete || !strings.Contains(string(out.Output), "simulated, no connection made") {
			t.Fatalf("output %q complete=%v err=%v", out.Output, out.Complete, err)
		}
		if !strings.Contains(string(out.Output), c.want) {
			t.Fatalf("%s output %q, want %q in it", kind, out.Output, c.want)
		}
		// Jobs that decide what to install (and the refresh) say how old
		// the package lists were and refresh them first, as real ones do.
		refreshed := strings.Contains(string(out.Output), "lcm: refreshing every configured apt source (apt-get update)") &&
			strings.Contains(string(out.Output), "lcm: package lists are ")
		if want := kind == "upgrade" || kind == "upgrade-all" || kind == "refresh"; refreshed != want ||
			want && strings.Index(string(out.Output), "lcm: refreshing") > strings.Index(string(out.Output), c.want) {
			t.Fatalf("%s output %q: lists refreshed %v, want %v (before %q)", kind, out.Output, refreshed, want, c.want)
		}
	}
}
