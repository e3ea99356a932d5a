package inventory_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func addServer(t testing.TB, st *store.Store, name string, groups ...string) string {
	t.Helper()
	srv, err := st.CreateServer(context.Background(), store.NewServer{Server: domain.Server{Name: name, Host: "192.0.2.10",
		Port: 22, Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, Joined: true,
		GroupIDs: groups, HostKey: "ssh-ed25519 AAAA", HostKeyFingerprint: "SHA256:x"}})
	if err != nil {
		t.Fatal(err)
	}
	return srv.ID
}

// managerOf creates a manager user who manages one new group holding ids.
func managerOf(t testing.TB, st *store.Store, ids ...string) *domain.Principal {
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
	return &domain.Principal{UserID: u.ID, Roles: []string{domain.RoleManager}}
}

var admin = &domain.Principal{UserID: "admin", Roles: []string{domain.RoleAdmin}}

func sampleFacts(used, avail uint64) facts.Facts {
	return facts.Facts{OS: facts.OSRelease{ID: "debian", PrettyName: "Debian GNU/Linux 12 (bookworm)", VersionID: "12"},
		Kernel: "6.1.0-31-amd64", Hostname: "web1", PackageManager: "apt",
		Reboot:      facts.Reboot{Required: true, Reason: "reboot-required-file"},
		Filesystems: []facts.Filesystem{{Device: "/dev/vda1", Type: "ext4", MountPoint: "/", SizeBytes: used + avail, UsedBytes: used, AvailBytes: avail}, {MountPoint: "/srv", SizeBytes: 100, UsedBytes: 10, AvailBytes: 90}}}
}

func pkgs(n int, version string) []pkgmgr.Package {
	out := make([]pkgmgr.Package, n)
	for i := range out {
		out[i] = pkgmgr.Package{Name: fmt.Sprintf("pkg%04d", i), Version: version, Arch: "amd64", Source: fmt.Sprintf("src%04d", i), Manager: "apt"}
	}
	return out
}

func TestIngestAndReads(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			stat := status.New(st, quiet)
			inv := inventory.New(st, inventory.Options{Log: quiet, OnIngest: stat.RecomputeMany})
			a, b := addServer(t, st, "alpha"), addServer(t, st, "beta")
			mgr := managerOf(t, st, a)

			up := []pkgmgr.Upgradable{{Name: "pkg0001", Current: "1.0", Candidate: "1.1", Arch: "amd64", Security: true}, {Name: "pkg0002", Current: "1.0", Candidate: "1.2", Arch: "amd64"}}
			if err := inv.Ingest(ctx, a, sampleFacts(50, 50), pkgmgr.Inventory{Manager: "apt", Packages: pkgs(50, "1.0"), Upgradable: up}); err != nil {
				t.Fatal(err)
			}
			if err := inv.Ingest(ctx, b, sampleFacts(90, 10), pkgmgr.Inventory{Manager: "apt", Packages: pkgs(10, "2.0")}); err != nil {
				t.Fatal(err)
			}
			// Replace-set: one version change, one removal, one addition.
			next := pkgs(50, "1.0")
			next[3].Version = "1.1"
			next = append(next[:10], next[11:]...)
			next = append(next, pkgmgr.Package{Name: "tree", Version: "2.1.0-1", Arch: "amd64", Manager: "apt"})
			if err := inv.Ingest(ctx, a, sampleFacts(50, 50), pkgmgr.Inventory{Manager: "apt", Packages: next, Upgradable: up}); err != nil {
				t.Fatal(err)
			}
			got, err := inv.Packages(ctx, mgr, a)
			if err != nil || len(got) != 50 {
				t.Fatalf("packages: %d %v", len(got), err)
			}
			seen := map[string]string{}
			for _, p := range got {
				seen[p.Name] = p.Version
			}
			if seen["pkg0003"] != "1.1" || seen["tree"] == "" || seen["pkg0010"] != "" {
				t.Fatalf("replace-set wrong: %v", seen)
			}
			out, err := inv.Outdated(ctx, mgr, a)
			if err != nil || len(out) != 2 || !out[0].Security {
				t.Fatalf("outdated: %+v %v", out, err)
			}
			hw, err := inv.Hardware(ctx, mgr, a)
			if err != nil || hw.Facts.Hostname != "web1" || hw.SecurityUpdates != 1 || hw.Packages != 50 {
				t.Fatalf("hardware: %+v %v", hw, err)
			}
			// Manager scoping: beta is outside the manager's groups.
			for name, f := range map[string]func() error{
				"hardware": func() error { _, err := inv.Hardware(ctx, mgr, b); return err },
				"packages": func() error { _, err := inv.Packages(ctx, mgr, b); return err },
				"outdated": func() error { _, err := inv.Outdated(ctx, mgr, b); return err },
				"storage":  func() error { _, err := inv.StorageHistory(ctx, mgr, b, "/", 30); return err },
			} {
				if err := f(); !errors.Is(err, domain.ErrNotFound) {
					t.Errorf("%s of a server outside the manager's groups: %v, want not found", name, err)
				}
			}
			ov, total, err := inv.Overview(ctx, mgr, store.OverviewFilter{Name: "pkg0001"})
			if err != nil || total != 1 || len(ov) != 1 || len(ov[0].Versions) != 1 || ov[0].Versions[0].ServerIDs[0] != a {
				t.Fatalf("manager overview: %+v %d %v", ov, total, err)
			}
			ov, _, err = inv.Overview(ctx, admin, store.OverviewFilter{Name: "pkg0001"})
			if err != nil || len(ov[0].Versions) != 2 {
				t.Fatalf("admin overview: %+v %v", ov, err)
			}
			ov, total, err = inv.Overview(ctx, admin, store.OverviewFilter{Prefix: "pkg00", Limit: 5, Offset: 5})
			if err != nil || total != 49 || len(ov) != 5 || ov[0].Name != "pkg0005" {
				t.Fatalf("paged overview: %d %d %v", len(ov), total, err)
			}
			// Status recomputed on ingest: beta's root is 90 % full, alpha needs a reboot.
			res, err := stat.Of(ctx, admin, []string{a, b})
			if err != nil || res[a].Status != domain.ServerYellow || res[b].Status != domain.ServerYellow {
				t.Fatalf("status after ingest: %+v %v", res, err)
			}
			srv, _ := st.GetServer(ctx, store.SystemScope, b)
			if srv.Status != domain.ServerYellow {
				t.Fatalf("servers.status not mirrored: %s", srv.Status)
			}
			// CVE hook: a critical finding turns the server red.
			r, err := stat.SetFindings(ctx, a, []status.Finding{{CVE: "CVE-2024-6387", Package: "openssh-server", Severity: status.SeverityCritical}})
			if err != nil || r.Status != domain.ServerRed {
				t.Fatalf("critical finding: %+v %v", r, err)
			}
			// Reachability: two failed contacts make it unreachable; success clears.
			stat.RecordContact(ctx, b, false, "dial tcp: timeout")
			r, _ = stat.RecordContact(ctx, b, false, "dial tcp: timeout")
			if r.Status != domain.ServerUnreachable {
				t.Fatalf("after two failures: %s", r.Status)
			}
			r, _ = stat.RecordContact(ctx, b, true, "")
			if r.Status != domain.ServerYellow {
				t.Fatalf("after success: %s", r.Status)
			}
		})
	}
}

func TestStorageHistoryAndForecast(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			now := time.Date(2025, 5, 20, 10, 0, 0, 0, time.UTC)
			clock := now
			inv := inventory.New(st, inventory.Options{Log: quiet, Retention: 10 * 24 * time.Hour, Now: func() time.Time { return clock }})
			id := addServer(t, st, "disk")
			const gb = 1 << 30
			// 12 days, 2 samples a day, growing 1 GiB a day on a 100 GiB disk.
			for d := 12; d >= 0; d-- {
				for h := 0; h < 2; h++ {
					at := now.Truncate(24*time.Hour).AddDate(0, 0, -d).Add(time.Duration(6+h*6) * time.Hour)
					used := uint64(40*gb + (12-d)*gb + h*gb/2)
					if err := inv.RecordStorage(ctx, id, []facts.Filesystem{{MountPoint: "/", SizeBytes: 100 * gb, UsedBytes: used, AvailBytes: 100*gb - used}}, at); err != nil {
						t.Fatal(err)
					}
				}
			}
			h, err := inv.StorageHistory(ctx, admin, id, "/", 30)
			if err != nil || len(h.Samples) != 11 { // clamped to the 10-day retention
				t.Fatalf("history from raw samples: %d %v", len(h.Samples), err)
			}
			n, err := inv.Aggregate(ctx)
			if err != nil || n != 12 {
				t.Fatalf("aggregate: %d %v", n, err)
			}
			if n2, err := inv.Aggregate(ctx); err != nil || n2 != 12 {
				t.Fatalf("aggregate is not idempotent: %d %v", n2, err)
			}
			h, err = inv.StorageHistory(ctx, admin, id, "/", 30)
			if err != nil {
				t.Fatal(err)
			}
			// Retention 10 days: the 2 oldest aggregated days are gone.
			if len(h.Samples) != 11 || h.Samples[len(h.Samples)-1].Day != "2025-05-20" {
				t.Fatalf("history after aggregation: %+v", h.Samples)
			}
			f := h.Forecast
			if f.SlopeBytesPerDay != gb || f.DaysUntilFull == nil {
				t.Fatalf("forecast: %+v", f)
			}
			last := h.Samples[len(h.Samples)-1]
			if want := float64(last.TotalBytes-last.UsedBytes) / gb; *f.DaysUntilFull < want-0.1 || *f.DaysUntilFull > want+0.1 {
				t.Fatalf("days until full %v, want %v", *f.DaysUntilFull, want)
			}
		})
	}
}

// The hourly storage sample carries the root filesystem's share into the
// traffic light's inputs; the next recompute (the finished-job hook in
// lcm-api) colours the server without waiting for the next refresh.
func TestStorageSampleFeedsTrafficLight(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			stat := status.New(st, quiet)
			inv := inventory.New(st, inventory.Options{Log: quiet, OnIngest: stat.RecomputeMany})
			id, fresh := addServer(t, st, "disk"), addServer(t, st, "never-refreshed")
			f := sampleFacts(40, 60)
			f.Reboot = facts.Reboot{}
			if err := inv.Ingest(ctx, id, f, pkgmgr.Inventory{Manager: "apt", Packages: pkgs(3, "1.0")}); err != nil {
				t.Fatal(err)
			}
			if r, err := stat.Recompute(ctx, id); err != nil || r.Status != domain.ServerGreen {
				t.Fatalf("after the refresh: %+v %v", r, err)
			}
			root := func(used, avail uint64) []facts.Filesystem {
				return []facts.Filesystem{{Device: "/dev/vda1", Type: "ext4", MountPoint: "/", SizeBytes: used + avail, UsedBytes: used, AvailBytes: avail}}
			}
			at := time.Now().UTC()
			for _, step := range []struct {
				used, avail uint64
				want        domain.ServerStatus
				code        string
			}{
				{96, 4, domain.ServerRed, "root_fs_full"},
				{87, 13, domain.ServerYellow, "root_fs_high"},
				{30, 70, domain.ServerGreen, ""},
			} {
				at = at.Add(time.Hour)
				if err := inv.RecordStorage(ctx, id, root(step.used, step.avail), at); err != nil {
					t.Fatal(err)
				}
				r, err := stat.Recompute(ctx, id)
				if err != nil || r.Status != step.want {
					t.Fatalf("after a sample at %d %%: %+v %v", step.used, r, err)
				}
				if step.code != "" && (len(r.Insights) == 0 || r.Insights[0].Code != step.code) {
					t.Fatalf("insight at %d %%: %+v", step.used, r.Insights)
				}
			}
			if got, err := inv.StorageHistory(ctx, admin, id, "/", 30); err != nil || len(got.Samples) == 0 {
				t.Fatalf("samples: %+v %v", got, err)
			}
			// A server never refreshed keeps its samples; its colour waits for a refresh.
			if err := inv.RecordStorage(ctx, fresh, root(99, 1), at); err != nil {
				t.Fatal(err)
			}
			if r, err := stat.Recompute(ctx, fresh); err != nil || r.Status != domain.ServerUnknown {
				t.Fatalf("never refreshed: %+v %v", r, err)
			}
		})
	}
}

func TestForecastOf(t *testing.T) {
	day := func(i int, used int64) inventory.StorageDay {
		return inventory.StorageDay{Day: time.Date(2025, 1, 1+i, 0, 0, 0, 0, time.UTC).Format("2006-01-02"), UsedBytes: used, TotalBytes: 1000}
	}
	tests := []struct {
		name  string
		days  []inventory.StorageDay
		slope float64
		full  float64 // -1: nil
	}{
		{"too few", []inventory.StorageDay{day(0, 100), day(1, 200)}, 0, -1},
		{"flat", []inventory.StorageDay{day(0, 500), day(1, 500), day(2, 500)}, 0, -1},
		{"falling", []inventory.StorageDay{day(0, 500), day(1, 400), day(2, 300)}, -100, -1},
		{"rising", []inventory.StorageDay{day(0, 100), day(1, 200), day(2, 300)}, 100, 7},
		{"gap counts as days", []inventory.StorageDay{day(0, 100), day(2, 300), day(4, 500)}, 100, 5},
		{"already full", []inventory.StorageDay{day(0, 800), day(1, 900), day(2, 1000)}, 100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := inventory.ForecastOf(tt.days)
			if f.SlopeBytesPerDay != tt.slope {
				t.Fatalf("slope %v, want %v", f.SlopeBytesPerDay, tt.slope)
			}
			if (tt.full < 0) != (f.DaysUntilFull == nil) || (f.DaysUntilFull != nil && *f.DaysUntilFull != tt.full) {
				t.Fatalf("days until full %v, want %v", f.DaysUntilFull, tt.full)
			}
		})
	}
}

// TestDeleteServerCascadesPackages: server_packages and inventory_servers
// have no foreign key (see migrations inventory/004 and 005); the trigger
// on servers must remove the rows.
func TestDeleteServerCascadesPackages(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			inv := inventory.New(st, inventory.Options{Log: quiet})
			id := addServer(t, st, "cascade")
			keep := addServer(t, st, "keep")
			pk := pkgmgr.Inventory{Manager: "apt", Packages: []pkgmgr.Package{{Name: "bash", Version: "5.2", Arch: "amd64"},
				{Name: "bash", Version: "5.2", Arch: "amd64"}, {Name: "curl", Version: "7.88", Arch: "amd64"}}}
			for _, s := range []string{id, keep} {
				if err := inv.Ingest(ctx, s, sampleFacts(1, 1), pk); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.DeleteServer(ctx, id); err != nil {
				t.Fatal(err)
			}
			sq, err := st.SQL()
			if err != nil {
				t.Fatal(err)
			}
			var gone, kept, nums, rows int
			count := func(q string, n *int) {
				t.Helper()
				if err := sq.QueryRow(q).Scan(n); err != nil {
					t.Fatal(err)
				}
			}
			count("SELECT COUNT(*) FROM inventory_servers WHERE server_id = '"+id+"'", &gone)
			count("SELECT COUNT(*) FROM server_packages sp JOIN inventory_servers i ON i.num = sp.server_num WHERE i.server_id = '"+keep+"'", &kept)
			count("SELECT COUNT(*) FROM inventory_servers", &nums)
			count("SELECT COUNT(*) FROM server_packages", &rows)
			if gone != 0 || kept != 2 || nums != 1 || rows != 2 {
				t.Fatalf("after delete: %d numbers of the deleted server, %d rows of the kept one (want 0, 2: duplicates collapse); %d numbers, %d rows in all (want 1, 2)",
					gone, kept, nums, rows)
			}
			if err := inv.Ingest(ctx, id, sampleFacts(1, 1), pk); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("ingest for a deleted server: %v", err)
			}
		})
	}
}

// TestIngestJobs: the batch hook stores each finished job's refresh data
// as Ingest would, skips jobs without data, reports undecodable data and
// deleted servers per job, and recomputes the stored servers' status once.
func TestIngestJobs(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, db.URL)
			var mu sync.Mutex // IngestJobs may store two groups at once
			var recomputed [][]string
			inv := inventory.New(st, inventory.Options{Log: quiet, OnIngest: func(_ context.Context, ids []string) error {
				mu.Lock()
				defer mu.Unlock()
				recomputed = append(recomputed, ids)
				return nil
			}})
			one, two, gone, empty, broken := addServer(t, st, "one"), addServer(t, st, "two"), addServer(t, st, "gone"), addServer(t, st, "empty"), addServer(t, st, "broken")
			ref := addServer(t, st, "reference")
			if err := st.DeleteServer(ctx, gone); err != nil {
				t.Fatal(err)
			}
			up := []pkgmgr.Upgradable{{Name: "pkg0001", Current: "1.0", Candidate: "1.1", Arch: "amd64", Security: true}}
			data := func(n int) []byte {
				b, err := actions.EncodeRefresh(actions.RefreshData{Facts: sampleFacts(30, 70), Inventory: pkgmgr.Inventory{Manager: "apt", Packages: pkgs(n, "1.0"), Upgradable: up}})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			jobs := []domain.Job{{ServerID: one, Data: data(40)}, {ServerID: gone, Data: data(3)}, {ServerID: empty},
				{ServerID: broken, Data: []byte("not gzip")}, {ServerID: two, Data: data(60)}}
			errs := inv.IngestJobs(ctx, jobs)
			for i, want := range []error{nil, domain.ErrNotFound, nil, nil, nil} {
				if i == 3 {
					if errs[i] == nil {
						t.Fatal("undecodable data: no error")
					}
					continue
				}
				if !errors.Is(errs[i], want) {
					t.Fatalf("job %d: %v, want %v", i, errs[i], want)
				}
			}
			if fmt.Sprint(recomputed) != fmt.Sprint([][]string{{one, two}}) {
				t.Fatalf("recomputed %v, want [[%s %s]]", recomputed, one, two)
			}
			if err := inv.Ingest(ctx, ref, sampleFacts(30, 70), pkgmgr.Inventory{Manager: "apt", Packages: pkgs(60, "1.0"), Upgradable: up}); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{two, ref} {
				if p, err := inv.Packages(ctx, admin, id); err != nil || len(p) != 60 {
					t.Fatalf("packages of %s: %d %v", id, len(p), err)
				}
			}
			a, _ := inv.Hardware(ctx, admin, two)
			b, _ := inv.Hardware(ctx, admin, ref)
			if a.Facts.Hostname != b.Facts.Hostname || a.Packages != b.Packages || a.SecurityUpdates != b.SecurityUpdates || a.SecurityUpdates != 1 {
				t.Fatalf("hardware from the batch %+v, from Ingest %+v", a, b)
			}
			h, err := inv.StorageHistory(ctx, admin, two, "/", 30)
			if err != nil || len(h.Samples) != 1 {
				t.Fatalf("storage sample: %+v %v", h, err)
			}
			if _, err := inv.Hardware(ctx, admin, empty); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("a job without data stored something: %v", err)
			}

			// More jobs than one decode group: groups are stored in turn
			// (SQLite) or two at once (PostgreSQL), every one exactly once.
			recomputed = nil
			many := make([]domain.Job, 70)
			for i := range many {
				many[i] = domain.Job{ServerID: addServer(t, st, fmt.Sprintf("many-%02d", i)), Data: data(3 + i%5)}
			}
			for i, err := range inv.IngestJobs(ctx, many) {
				if err != nil {
					t.Fatalf("job %d of many: %v", i, err)
				}
			}
			seen := map[string]int{}
			for _, ids := range recomputed {
				for _, id := range ids {
					seen[id]++
				}
			}
			for i, j := range many {
				if p, err := inv.Packages(ctx, admin, j.ServerID); err != nil || len(p) != 3+i%5 || seen[j.ServerID] != 1 {
					t.Fatalf("job %d of many: %d packages (%v), recomputed %d times", i, len(p), err, seen[j.ServerID])
				}
			}
		})
	}
}
