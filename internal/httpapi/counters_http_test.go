package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/demo"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
	"github.com/lcmproject/lcm/internal/version"
)

// TestServerCountersMatchInventory: for every server of a demo-seeded
// fleet and of a fleet seeded through the jobs' ingest hook, on SQLite and
// PostgreSQL, the counters of the server list (the admin's cached
// listing) and of the server page equal the inventory tables: the number
// of outdated packages, of security ones among them, and the reboot flag
// of the last refresh — also after a second refresh moved them (issue 24:
// the list showed 0 while the insights said otherwise).
func TestServerCountersMatchInventory(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			p := plane.Start(t, plane.Options{DatabaseURL: db.URL, NoWorker: true})
			st := status.New(p.Store, slog.Default())
			inv := inventory.New(p.Store, inventory.Options{OnIngest: st.RecomputeMany})
			h := &fleetHTTP{p: p, users: map[string]*domain.Principal{"admin": p.Admin}}
			s := &Server{deps: Deps{Store: p.Store, Bus: p.Bus, Log: slog.Default(), ClientAddr: remoteAddr,
				Services: Services{Fleet: p.Fleet, Jobs: p.Jobs, Status: st, Inventory: inv}}, engine: gin.New(), info: version.Get()}
			s.engine.Use(s.recoverPanics(), func(c *gin.Context) {
				if pr := h.users[c.GetHeader("X-Test-User")]; pr != nil {
					c.Set(ctxPrincipal, pr)
				}
				c.Next()
			})
			s.registerRoutes()
			h.ts = httptest.NewServer(s.engine)
			t.Cleanup(h.ts.Close)

			if _, err := demo.Seed(ctx, demo.Deps{Store: p.Store, Inventory: inv, Status: st}); err != nil {
				t.Fatal(err)
			}
			seen := checkCounters(t, h)
			if app := seen["app-01"]; app.updates != 2 || app.security != 1 || !app.reboot {
				t.Fatalf("demo app-01: %+v, want 2 updates, 1 security, reboot (its insights say so)", app)
			}

			// A fleet refreshed through the finish hook of real jobs.
			var ids []string
			for i := range 12 {
				srv, err := p.Store.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: fmt.Sprintf("real-%02d", i),
					Host: fmt.Sprintf("198.51.100.%d", i+1), Port: 22, Transport: domain.TransportSSH, Status: domain.ServerUnknown,
					AuthMethod: domain.AuthKey, Joined: true, HostKey: "k", PackageFamily: "apt"},
					Secrets: store.ServerSecrets{Username: domain.ManagementUser}})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, srv.ID)
			}
			refresh := func(round int) {
				t.Helper()
				jobs := make([]domain.Job, len(ids))
				for i, id := range ids {
					data, err := actions.EncodeRefresh(refreshOf(i, round))
					if err != nil {
						t.Fatal(err)
					}
					jobs[i] = domain.Job{ID: fmt.Sprintf("job-%d-%d", round, i), Kind: domain.JobRefresh, ServerID: id, Data: data}
				}
				for i, err := range inv.IngestJobs(ctx, jobs) {
					if err != nil {
						t.Fatalf("ingest %d: %v", i, err)
					}
				}
			}
			refresh(0)
			seen = checkCounters(t, h)
			if r := seen["real-07"]; r.updates != 7%5 || r.security != 7%3 || !r.reboot {
				t.Fatalf("real-07: %+v", r)
			}
			refresh(1) // every count moves; the cached listing must follow
			seen = checkCounters(t, h)
			if r := seen["real-07"]; r.updates != 8%5 || r.security != min(8%3, 8%5) || r.reboot {
				t.Fatalf("real-07 after the second refresh: %+v", r)
			}
		})
	}
}

// refreshOf is server i's refresh in round r: (i+r)%5 outdated packages,
// the first min((i+r)%3, …) of them security fixes, one of them held
// when there are four, a reboot pending on odd i+r.
func refreshOf(i, r int) actions.RefreshData {
	n := i + r
	d := actions.RefreshData{Facts: facts.Facts{Hostname: fmt.Sprintf("real-%02d", i), Kernel: "6.1.0-28-amd64",
		Reboot: facts.Reboot{Required: n%2 == 1}, PackageManager: "apt"}, Inventory: pkgmgr.Inventory{Manager: "apt"}}
	for k := range 6 {
		d.Inventory.Packages = append(d.Inventory.Packages, pkgmgr.Package{Name: fmt.Sprintf("pkg%d", k), Version: "1.0", Arch: "amd64", Manager: "apt"})
	}
	for k := range n % 5 {
		d.Inventory.Upgradable = append(d.Inventory.Upgradable, pkgmgr.Upgradable{Name: fmt.Sprintf("pkg%d", k), Current: "1.0",
			Candidate: "1.1", Arch: "amd64", Security: k < n%3, Held: k == 3})
	}
	return d
}

type counters struct {
	updates, security int
	reboot            bool
}

// checkCounters compares, for every listed server, the listing's counters
// with GET /servers/{id} and with the inventory tables, and returns them
// by server name.
func checkCounters(t *testing.T, h *fleetHTTP) map[string]counters {
	t.Helper()
	ctx := context.Background()
	code, body := h.do(t, "admin", http.MethodGet, "/api/v1/servers", "")
	if code != http.StatusOK {
		t.Fatalf("list: %d %s", code, body)
	}
	type listed struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Updates  int    `json:"updates_available"`
		Security int    `json:"security_updates"`
		Reboot   bool   `json:"reboot_required"`
	}
	out := map[string]counters{}
	for _, l := range decode[[]listed](t, body) {
		_, one := h.do(t, "admin", http.MethodGet, "/api/v1/servers/"+l.ID, "")
		if d := decode[listed](t, one); d != l {
			t.Fatalf("%s: listed %+v, server page %+v", l.Name, l, d)
		}
		od, err := h.p.Store.ServerOutdated(ctx, store.SystemScope, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := counters{updates: len(od)}
		for _, u := range od {
			if u.Security {
				want.security++
			}
		}
		if f, err := h.p.Store.ServerFactsOf(ctx, store.SystemScope, l.ID); err == nil {
			want.reboot = f.RebootRequired
		}
		got := counters{l.Updates, l.Security, l.Reboot}
		if got != want {
			t.Errorf("%s: listed %+v, inventory tables %+v", l.Name, got, want)
		}
		out[l.Name] = got
	}
	if t.Failed() {
		t.FailNow()
	}
	return out
}
