package vulnsvc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
	"github.com/lcmproject/lcm/internal/vulnsvc"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var admin = &domain.Principal{UserID: "admin", Username: "admin", Roles: []string{domain.RoleAdmin}}

func addServer(t testing.TB, st *store.Store, name string) string {
	t.Helper()
	srv, err := st.CreateServer(context.Background(), store.NewServer{Server: domain.Server{Name: name, Host: "192.0.2.10",
		Port: 22, Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, Joined: true,
		HostKey: "ssh-ed25519 AAAA", HostKeyFingerprint: "SHA256:x"}})
	if err != nil {
		t.Fatal(err)
	}
	return srv.ID
}

func bookworm(pkgs ...pkgmgr.Package) (facts.Facts, pkgmgr.Inventory) {
	f := facts.Facts{OS: facts.OSRelease{ID: "debian", VersionID: "12", PrettyName: "Debian GNU/Linux 12 (bookworm)"}}
	return f, pkgmgr.Inventory{Manager: "apt", Packages: pkgs}
}

func deb(name, version, source string) pkgmgr.Package {
	return pkgmgr.Package{Name: name, Version: version, Arch: "amd64", Source: source, Manager: "apt"}
}

type env struct {
	st   *store.Store
	stat *status.Service
	inv  *inventory.Service
	svc  *vulnsvc.Service
}

func setup(t *testing.T, dbURL, vulnDir string) env {
	t.Helper()
	st := storetest.Open(t, dbURL)
	stat := status.New(st, quiet)
	inv := inventory.New(st, inventory.Options{Log: quiet, OnIngest: stat.RecomputeMany})
	b, err := bus.Open(context.Background(), bus.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	sc := scanner.New(vulnDir, "test", quiet)
	done := make(chan struct{})
	go func() { defer close(done); _ = sc.Serve(ctx, b, 2) }()
	t.Cleanup(func() { cancel(); <-done })
	cl := &scanner.Client{Bus: b}
	for i := 0; i < 100; i++ {
		if _, ok := cl.Status(ctx); ok {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return env{st: st, stat: stat, inv: inv, svc: vulnsvc.New(st, stat, cl, quiet)}
}

// TestScanLifecycle: a server running bookworm's pre-DSA openssh gets the
// real DSA-5724-1 (high, via the Ubuntu record's CVSS) → yellow with an
// insight naming the package and the fix; acknowledging keeps it open;
// after the upgrade to the test hosts' version the DSA is fixed and only
// the unfixed DEBIAN-CVE remains.
func TestScanLifecycle(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			e := setup(t, db.URL, vulndbtest.Build(t))
			id := addServer(t, e.st, "web-01")
			twin := addServer(t, e.st, "web-02")
			never := addServer(t, e.st, "never-refreshed")
			f, inv := bookworm(deb("openssh-server", "1:9.2p1-2+deb12u2", "openssh"), deb("tzdata", "2026b-0+deb12u1", "tzdata"))
			for _, s := range []string{id, twin} {
				if err := e.inv.Ingest(ctx, s, f, inv); err != nil {
					t.Fatal(err)
				}
				e.stat.RecordContact(ctx, s, true, "")
			}
			if _, err := e.svc.ScanAll(ctx); err != nil {
				t.Fatal(err)
			}
			list, total, err := e.svc.Findings(ctx, admin, store.VulnFilter{ServerID: id})
			if err != nil || total != 2 {
				t.Fatalf("findings %d %v: %+v", total, err, list)
			}
			dsa := list[0]
			if dsa.Advisory != "DSA-5724-1" || dsa.Severity != "high" || dsa.Fixed != "1:9.2p1-2+deb12u3" || dsa.State != store.VulnNew ||
				strings.Join(dsa.CVEs, ",") != "CVE-2024-6387" || dsa.CVSS != 8.1 {
				t.Fatalf("first finding %+v", dsa)
			}
			r, err := e.stat.Recompute(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != domain.ServerYellow || !hasInsight(r.Insights, "cve_high", "openssh-server (fixed in 1:9.2p1-2+deb12u3)") {
				t.Fatalf("status %s %+v", r.Status, r.Insights)
			}
			// Filters.
			for _, tc := range []struct {
				f    store.VulnFilter
				want int64
			}{
				{store.VulnFilter{MinSeverity: 3}, 2}, {store.VulnFilter{CVE: "cve-2024-6387"}, 2}, {store.VulnFilter{FixOnly: true}, 2},
				{store.VulnFilter{Package: "tzdata"}, 0}, {store.VulnFilter{CVE: "51767"}, 2}, {store.VulnFilter{}, 4},
			} {
				if _, n, err := e.svc.Findings(ctx, admin, tc.f); err != nil || n != tc.want {
					t.Errorf("filter %+v: %d %v, want %d", tc.f, n, err, tc.want)
				}
			}
			vp, err := e.svc.VulnerablePackages(ctx, admin, store.VulnFilter{})
			if err != nil || len(vp) != 2 || len(vp[0].ServerIDs) != 2 || vp[0].Severity != "high" || vp[0].Fixed != "1:9.2p1-2+deb12u3" || vp[1].Fixed != "" {
				t.Fatalf("vulnerable packages %+v %v", vp, err)
			}
			// Acknowledge, then upgrade: the DSA becomes fixed, the unfixed record stays.
			if a, err := e.svc.Acknowledge(ctx, admin, dsa.ID); err != nil || a.State != store.VulnAcknowledged || a.AcknowledgedBy != "admin" {
				t.Fatalf("ack %+v %v", a, err)
			}
			f, inv = bookworm(deb("openssh-server", "1:9.2p1-2+deb12u10", "openssh"))
			if err := e.inv.Ingest(ctx, id, f, inv); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.ScanServer(ctx, admin, id); err != nil {
				t.Fatal(err)
			}
			list, _, _ = e.svc.Findings(ctx, admin, store.VulnFilter{ServerID: id})
			states := map[string]string{}
			for _, v := range list {
				states[v.Advisory] = v.State
			}
			if states["DSA-5724-1"] != store.VulnFixed || states["DEBIAN-CVE-2023-51767"] != store.VulnNew {
				t.Fatalf("states after upgrade %v", states)
			}
			if _, err := e.svc.Acknowledge(ctx, admin, dsa.ID); !isKind(err, domain.ErrConflict) {
				t.Fatalf("ack of a fixed finding: %v", err)
			}
			r, _ = e.stat.Recompute(ctx, id)
			if r.Status != domain.ServerGreen {
				t.Fatalf("after upgrade %s %+v", r.Status, r.Insights)
			}
			if _, err := e.svc.ScanServer(ctx, admin, never); !isKind(err, domain.ErrConflict) {
				t.Fatalf("scan of a never refreshed server: %v", err)
			}
			bom, err := e.svc.SBOM(ctx, admin, id)
			if err != nil || bom.Components == nil || len(*bom.Components) != 2 {
				t.Fatalf("sbom %v", err)
			}
			st, err := e.svc.Status(ctx)
			if err != nil || !st.Enabled || st.Records != 6 || st.Freshness != vulnsvc.FreshCritical || st.LastScanAt == nil {
				t.Fatalf("status %+v %v", st, err)
			}
		})
	}
}

// TestDisabledWithoutDatabase: no database → scans refuse with the reason
// and the status says why.
func TestDisabledWithoutDatabase(t *testing.T) {
	ctx := context.Background()
	e := setup(t, "", t.TempDir())
	id := addServer(t, e.st, "web-01")
	f, inv := bookworm(deb("openssh-server", "1:9.2p1-2+deb12u2", "openssh"))
	if err := e.inv.Ingest(ctx, id, f, inv); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ScanServer(ctx, admin, id); !isKind(err, domain.ErrUnavailable) || !strings.Contains(err.Error(), "no vulnerability database") {
		t.Fatalf("scan: %v", err)
	}
	st, _ := e.svc.Status(ctx)
	if st.Enabled || !strings.Contains(st.Reason, "no vulnerability database") {
		t.Fatalf("status %+v", st)
	}
}

func TestFreshness(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for h, want := range map[int]string{0: "current", 47: "current", 48: "outdated", 167: "outdated", 168: "critical"} {
		if got := vulnsvc.Freshness(now.Add(-time.Duration(h)*time.Hour), now); got != want {
			t.Errorf("%d h: %s, want %s", h, got, want)
		}
	}
}

func hasInsight(ins []status.Insight, code, text string) bool {
	for _, i := range ins {
		if i.Code == code && strings.Contains(i.Text, text) {
			return true
		}
	}
	return false
}

func isKind(err, kind error) bool {
	return err != nil && fmt.Sprint(err) != "" && errorsIs(err, kind)
}

type fakeUpgrader struct {
	calls []string
	busy  string
}

func (f *fakeUpgrader) UpgradeSecurity(ctx context.Context, p *domain.Principal, id string) (domain.Job, error) {
	f.calls = append(f.calls, id)
	if id == f.busy {
		return domain.Job{}, domain.Conflict("server_busy", "server is busy with job j-1")
	}
	return domain.Job{ID: "job-" + id, ServerID: id, Status: domain.JobPending}, nil
}

// TestUpdateAll: the security upgrade goes to every server with an open
// finding that has a fix (not to a server whose findings have none); a
// busy server is listed as blocked.
func TestUpdateAll(t *testing.T) {
	ctx := context.Background()
	e := setup(t, "", vulndbtest.Build(t))
	a, b, c := addServer(t, e.st, "a-web"), addServer(t, e.st, "b-web"), addServer(t, e.st, "c-nofix")
	for _, id := range []string{a, b} {
		f, inv := bookworm(deb("openssh-server", "1:9.2p1-2+deb12u2", "openssh"))
		if err := e.inv.Ingest(ctx, id, f, inv); err != nil {
			t.Fatal(err)
		}
	}
	f, inv := bookworm(deb("libc6", "2.36-9+deb12u14", "glibc")) // only the unfixed DEBIAN-CVE
	if err := e.inv.Ingest(ctx, c, f, inv); err != nil {
		t.Fatal(err)
	}
	// c's CVE-relevant container has the fixable openssh: a host upgrade
	// would not change it, so c is still left out.
	ctr, _ := json.Marshal(containers.Inventory{CVEPackages: []containers.ImagePackages{{Engine: "docker", Container: "web", OSID: "debian", OSVersion: "12",
		Packages: []containers.Package{{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Arch: "amd64", Source: "openssh"}}}}})
	if err := e.st.SetContainerInventory(ctx, store.ContainerInventory{ServerID: c, Data: ctr, RefreshedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetContainerCVERelevance(ctx, store.ContainerCVEMark{ServerID: c, Engine: "docker", Container: "web", MarkedAt: time.Now()}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ScanAll(ctx); err != nil {
		t.Fatal(err)
	}
	fs, _, err := e.svc.Findings(ctx, admin, store.VulnFilter{ServerID: c, FixOnly: true})
	if err != nil || len(fs) != 1 || fs[0].Container != "docker/web" || fs[0].Advisory != "DSA-5724-1" {
		t.Fatalf("c's container findings %+v %v", fs, err)
	}
	up := &fakeUpgrader{busy: b}
	e.svc.SetUpgrader(up)
	run, err := e.svc.UpdateAll(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(up.calls) != 2 || len(run.Items) != 2 || run.Items[0].JobID != "job-"+a || run.Items[1].Status != "blocked" {
		t.Fatalf("run %+v calls %v", run, up.calls)
	}
	// The fake jobs are not in the ledger: the run counts as over.
	st, err := e.svc.UpdateAllStatus(ctx, admin)
	if err != nil || st.Running || st.Items[0].Status != "gone" {
		t.Fatalf("status %+v %v", st, err)
	}
}

// TestScheduledScanSkipsMaintenance: the scheduled fleet scan leaves out a
// server in maintenance mode and scans it again once maintenance ends.
func TestScheduledScanSkipsMaintenance(t *testing.T) {
	ctx := context.Background()
	e := setup(t, "", vulndbtest.Build(t))
	a, b := addServer(t, e.st, "a-web"), addServer(t, e.st, "b-maint")
	for _, id := range []string{a, b} {
		f, inv := bookworm(deb("openssh-server", "1:9.2p1-2+deb12u2", "openssh"))
		if err := e.inv.Ingest(ctx, id, f, inv); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.st.StartMaintenance(ctx, domain.Maintenance{ServerID: b, StartedBy: "admin", StartedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if n, err := e.svc.ScanAll(ctx); err != nil || n != 1 {
		t.Fatalf("scanned %d (%v), want 1 while b is in maintenance", n, err)
	}
	if _, err := e.st.EndMaintenance(ctx, b); err != nil {
		t.Fatal(err)
	}
	if n, err := e.svc.ScanAll(ctx); err != nil || n != 2 {
		t.Fatalf("scanned %d (%v), want 2 after maintenance", n, err)
	}
}

// TestSBOMContainerManagers: an Alpine container's packages (read from
// apk's database) get apk purls on the container's release; an inventory
// stored before the manager was recorded still means dpkg.
func TestSBOMContainerManagers(t *testing.T) {
	ctx := context.Background()
	e := setup(t, "", vulndbtest.Build(t))
	id := addServer(t, e.st, "web")
	f, inv := bookworm(deb("openssh-server", "1:9.2p1-2+deb12u2", "openssh"))
	if err := e.inv.Ingest(ctx, id, f, inv); err != nil {
		t.Fatal(err)
	}
	ctr, _ := json.Marshal(containers.Inventory{CVEPackages: []containers.ImagePackages{
		{Engine: "podman", Container: "edge", OSID: "alpine", OSVersion: "3.14.2", Manager: "apk",
			Packages: []containers.Package{{Name: "libssl1.1", Version: "1.1.1k-r0", Arch: "armv7", Source: "openssl"}}},
		{Engine: "docker", Container: "old", OSID: "debian", OSVersion: "12",
			Packages: []containers.Package{{Name: "zlib1g", Version: "1:1.2.13.dfsg-1", Arch: "amd64", Source: "zlib"}}},
	}})
	if err := e.st.SetContainerInventory(ctx, store.ContainerInventory{ServerID: id, Data: ctr, RefreshedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"edge", "old"} {
		eng := map[string]string{"edge": "podman", "old": "docker"}[n]
		if err := e.st.SetContainerCVERelevance(ctx, store.ContainerCVEMark{ServerID: id, Engine: eng, Container: n, MarkedAt: time.Now()}, true); err != nil {
			t.Fatal(err)
		}
	}
	bom, err := e.svc.SBOM(ctx, admin, id)
	if err != nil {
		t.Fatal(err)
	}
	purls := map[string]string{}
	for _, c := range sbom.Components(bom) {
		purls[c.Container+" "+c.Name] = c.Distro
	}
	if purls["podman/edge libssl1.1"] != "alpine-3.14.2" || purls["docker/old zlib1g"] != "debian-12" || purls[" openssh-server"] != "debian-12" {
		t.Fatalf("components %v", purls)
	}
	found := false
	for _, c := range *bom.Components {
		found = found || strings.HasPrefix(c.PackageURL, "pkg:apk/alpine/libssl1.1@1.1.1k-r0?")
	}
	if !found {
		t.Fatal("no apk purl for the Alpine container's libssl1.1")
	}
}
