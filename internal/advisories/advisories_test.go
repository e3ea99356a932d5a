package advisories_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/advisories"
	"github.com/lcmproject/lcm/internal/advisories/advisoriestest"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var admin = &domain.Principal{UserID: "admin", Username: "admin", Roles: []string{domain.RoleAdmin}}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

type env struct {
	st      *store.Store
	inv     *inventory.Service
	svc     *advisories.Service
	src     *advisoriestest.Source
	clock   *clock
	mirror  string
	mu      sync.Mutex
	created [][]store.EarlyWarning
}

func setup(t *testing.T, dbURL string) *env {
	t.Helper()
	e := &env{st: storetest.Open(t, dbURL), src: advisoriestest.New(t), mirror: t.TempDir(),
		clock: &clock{t: time.Date(2024, 6, 30, 12, 0, 0, 0, time.UTC)}}
	e.inv = inventory.New(e.st, inventory.Options{Log: quiet})
	e.svc = advisories.New(e.st, advisories.Options{Log: quiet, MirrorDir: e.mirror, Now: e.clock.now,
		OnCreated: func(_ context.Context, c []store.EarlyWarning) {
			e.mu.Lock()
			e.created = append(e.created, c)
			e.mu.Unlock()
		}})
	return e
}

func (e *env) server(t *testing.T, name, osID, ver string, pkgs ...pkgmgr.Package) string {
	t.Helper()
	ctx := context.Background()
	srv, err := e.st.CreateServer(ctx, store.NewServer{Server: domain.Server{Name: name, Host: "192.0.2.10",
		Port: 22, Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, Joined: true,
		HostKey: "ssh-ed25519 AAAA", HostKeyFingerprint: "SHA256:x"}})
	if err != nil {
		t.Fatal(err)
	}
	f := facts.Facts{OS: facts.OSRelease{ID: osID, VersionID: ver}}
	if err := e.inv.Ingest(ctx, srv.ID, f, pkgmgr.Inventory{Manager: "apt", Packages: pkgs}); err != nil {
		t.Fatal(err)
	}
	return srv.ID
}

func deb(name, version, source string) pkgmgr.Package {
	return pkgmgr.Package{Name: name, Version: version, Arch: "amd64", Source: source, Manager: "apt"}
}

func (e *env) enable(t *testing.T) {
	t.Helper()
	on, u := true, e.src.URL()
	if _, err := e.svc.UpdateSettings(context.Background(), admin, advisories.SettingsInput{Enabled: &on, BaseURL: &u}); err != nil {
		t.Fatal(err)
	}
}

func manager(t *testing.T, st *store.Store, ids ...string) *domain.Principal {
	t.Helper()
	ctx := context.Background()
	u, err := st.CreateUser(ctx, store.NewUser{Username: fmt.Sprintf("mgr%d", time.Now().UnixNano()), Active: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := st.CreateGroup(ctx, domain.Group{Name: "g-" + u.Username})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := st.AddGroupServer(ctx, g.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AddGroupManager(ctx, g.ID, u.ID); err != nil {
		t.Fatal(err)
	}
	return &domain.Principal{UserID: u.ID, Username: u.Username, Roles: []string{domain.RoleManager}}
}

// TestEarlyWarningPoll: the poll is off by default; once on, its first
// run sets the cursor; DSA-5724-1 (regreSSHion), published afterwards,
// becomes a finding for the bookworm server still on the pre-fix openssh
// and none for the one already fixed; UBUNTU-CVE-2024-6387 one for the
// Ubuntu 22.04 server, rated high by its own CVSS. Acknowledging hides a
// finding; a manager sees only the findings of their groups' servers.
func TestEarlyWarningPoll(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			e := setup(t, db.URL)
			old := e.server(t, "bookworm-old", "debian", "12", deb("openssh-server", "1:9.2p1-2+deb12u2", "openssh"), deb("tzdata", "2024a-0+deb12u1", "tzdata"))
			fixed := e.server(t, "bookworm-fixed", "debian", "12", deb("openssh-server", "1:9.2p1-2+deb12u3", "openssh"))
			jammy := e.server(t, "jammy", "ubuntu", "22.04", deb("openssh-server", "1:8.9p1-3ubuntu0.6", "openssh"))
			e.src.Publish(t, "Debian", "DSA-5514-1")

			sum, err := e.svc.Poll(ctx, true)
			if err != nil || sum.Skipped == "" || e.src.Count("/Debian/modified_id.csv") != 0 {
				t.Fatalf("a scheduled poll with the early warning off: %+v %v", sum, err)
			}
			if _, err := e.svc.Poll(ctx, false); !errors.Is(err, domain.ErrConflict) {
				t.Fatalf("a manual poll with the early warning off: %v", err)
			}
			e.enable(t)
			sum, err = e.svc.Poll(ctx, true)
			if err != nil || sum.Findings != 0 || len(sum.Ecosystems) != 2 {
				t.Fatalf("first poll %+v %v", sum, err)
			}
			if e.src.Count("/Debian/DSA-5514-1.json") != 0 {
				t.Fatal("the first poll read a record older than its look-back")
			}

			// A week later regreSSHion is published, and the Ubuntu record.
			e.src.Publish(t, "Debian", "DSA-5724-1")
			e.src.Publish(t, "Ubuntu", "UBUNTU-CVE-2024-6387")
			e.clock.set(time.Date(2024, 7, 10, 0, 0, 0, 0, time.UTC))
			sum, err = e.svc.Poll(ctx, false)
			if err != nil || sum.Findings != 2 {
				t.Fatalf("second poll %+v %v", sum, err)
			}
			list, total, err := e.svc.Findings(ctx, admin, store.EarlyWarningFilter{})
			if err != nil || total != 2 {
				t.Fatalf("findings %d %v %+v", total, err, list)
			}
			by := map[string]store.EarlyWarning{}
			for _, w := range list {
				by[w.ServerID] = w
			}
			d, u := by[old], by[jammy]
			if d.Advisory != "DSA-5724-1" || d.Package != "openssh-server" || d.Source != "openssh" || d.Fixed != "1:9.2p1-2+deb12u3" ||
				strings.Join(d.CVEs, ",") != "CVE-2024-6387" || d.ServerName != "bookworm-old" || d.Ecosystem != "Debian:12" {
				t.Fatalf("Debian finding %+v", d)
			}
			if u.Advisory != "UBUNTU-CVE-2024-6387" || u.Severity != "high" || u.CVSS != 8.1 || u.Fixed != "1:8.9p1-3ubuntu0.10" {
				t.Fatalf("Ubuntu finding %+v", u)
			}
			if _, ok := by[fixed]; ok {
				t.Fatal("the server with the fixed openssh got a finding")
			}
			if len(e.created) != 1 || len(e.created[0]) != 2 {
				t.Fatalf("created hook %+v", e.created)
			}

			// Polling again finds nothing new and reads nothing again.
			reads := e.src.Count("/Debian/DSA-5724-1.json")
			if sum, err := e.svc.Poll(ctx, false); err != nil || sum.Findings != 0 {
				t.Fatalf("third poll %+v %v", sum, err)
			}
			if e.src.Count("/Debian/DSA-5724-1.json") != reads {
				t.Fatal("a record before the cursor was fetched again")
			}

			mgr := manager(t, e.st, jammy)
			if l, n, _ := e.svc.Findings(ctx, mgr, store.EarlyWarningFilter{}); n != 1 || l[0].ServerID != jammy {
				t.Fatalf("manager sees %d: %+v", n, l)
			}
			if _, err := e.svc.Acknowledge(ctx, mgr, d.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("a manager acknowledged another group's finding: %v", err)
			}
			a, err := e.svc.Acknowledge(ctx, mgr, u.ID)
			if err != nil || a.AcknowledgedBy != mgr.Username || a.AcknowledgedAt == nil {
				t.Fatalf("acknowledge %+v %v", a, err)
			}
			if _, n, _ := e.svc.Findings(ctx, admin, store.EarlyWarningFilter{}); n != 1 {
				t.Fatalf("%d open after the acknowledgement", n)
			}
			if _, n, _ := e.svc.Findings(ctx, admin, store.EarlyWarningFilter{State: "acknowledged"}); n != 1 {
				t.Fatalf("%d acknowledged", n)
			}
			st, err := e.svc.Status(ctx, admin)
			if err != nil || st.LastPoll == nil || st.Open != 1 || st.Acknowledged != 1 || len(st.Cursors) != 2 || !st.Settings.Enabled {
				t.Fatalf("status %+v %v", st, err)
			}
			caches := e.svc.Caches(ctx)
			if caches[0].Misses != 2 || caches[1].Misses == 0 {
				t.Fatalf("caches %+v", caches)
			}
		})
	}
}

// TestMirrorOffline: the mirror downloads the fleet's exports; with the
// source gone, a poll reads the mirror's list and records (cache hits)
// and rates the Debian DSA high through the mirrored Ubuntu record.
func TestMirrorOffline(t *testing.T) {
	ctx := context.Background()
	e := setup(t, "")
	old := e.server(t, "bookworm-old", "debian", "12", deb("openssh-server", "1:9.2p1-2+deb12u2", "openssh"))
	e.server(t, "jammy", "ubuntu", "22.04", deb("openssh-server", "1:8.9p1-3ubuntu0.10", "openssh")) // fixed
	e.src.Publish(t, "Debian", "DSA-5724-1", "DSA-5514-1", "DSA-5764-1", "DEBIAN-CVE-2023-51767", "DEBIAN-CVE-2010-4756")
	e.src.Publish(t, "Ubuntu", "UBUNTU-CVE-2024-6387")
	u := e.src.URL()
	if _, err := e.svc.UpdateSettings(ctx, admin, advisories.SettingsInput{BaseURL: &u}); err != nil {
		t.Fatal(err)
	}
	sum, err := e.svc.Mirror(ctx)
	if err != nil || len(sum.Ecosystems) != 2 || sum.Ecosystems[0].Records != 5 || sum.Ecosystems[0].Error != "" {
		t.Fatalf("mirror %+v %v", sum, err)
	}
	for _, f := range []string{"Debian/all.zip", "Debian/modified_id.csv", "Ubuntu/all.zip"} {
		if _, err := os.Stat(filepath.Join(e.mirror, f)); err != nil {
			t.Fatal(err)
		}
	}
	e.src.SetDown(true)
	e.enable(t)
	// The day after regreSSHion's DSA: the look-back window holds it and
	// the later-modified DEBIAN-CVE records of the mirror.
	e.clock.set(time.Date(2024, 7, 2, 0, 0, 0, 0, time.UTC))
	ps, err := e.svc.Poll(ctx, false)
	if err != nil || ps.Findings != 2 || !ps.Ecosystems[0].Offline {
		t.Fatalf("offline poll %+v %v", ps, err)
	}
	list, _, _ := e.svc.Findings(ctx, admin, store.EarlyWarningFilter{ServerID: old})
	adv := map[string]store.EarlyWarning{}
	for _, w := range list {
		adv[w.Advisory] = w
	}
	if d := adv["DSA-5724-1"]; d.Severity != "high" || adv["DEBIAN-CVE-2023-51767"].Fixed != "" || len(list) != 2 {
		t.Fatalf("findings %+v", list)
	}
	if c := e.svc.Caches(ctx); c[0].Hits < 1 || c[0].Misses != 0 {
		t.Fatalf("record cache %+v", c[0])
	}
	st, err := e.svc.Status(ctx, admin)
	if err != nil || st.LastMirror == nil || len(st.Mirror) != 2 || st.LastPoll == nil {
		t.Fatalf("status %+v %v", st, err)
	}
}

func TestSettingsValidation(t *testing.T) {
	e := setup(t, "")
	for _, bad := range []string{"ftp://x", "http://", "https://u:p@host", "https://h/?q=1", "not a url"} {
		if _, err := e.svc.UpdateSettings(context.Background(), admin, advisories.SettingsInput{BaseURL: &bad}); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	s, err := e.svc.Settings(context.Background())
	if err != nil || s.Enabled || s.BaseURL != advisories.DefaultBaseURL {
		t.Fatalf("defaults %+v %v", s, err)
	}
}
