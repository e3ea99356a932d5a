package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

func addTestServer(t *testing.T, s *Store, name string) string {
	t.Helper()
	srv, err := s.CreateServer(context.Background(), NewServer{Server: domain.Server{Name: name, Host: "192.0.2.1", Port: 22,
		Transport: domain.TransportSSH, Status: domain.ServerUnknown, AuthMethod: domain.AuthKey, HostKey: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	return srv.ID
}

// testInventory is a refresh of server id: n packages (every third from
// another source, so the catalog holds versions that differ only there),
// a duplicate key that must collapse to its first occurrence, two
// outdated packages, a sample of "/".
func testInventory(id string, n int, version string) InventoryIngest {
	at := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
	in := InventoryIngest{Facts: FactsRecord{ServerID: id, FactsJSON: []byte(`{"hostname":"h"}`), PackageManager: "apt",
		Packages: n, Updates: 2, SecurityUpdates: 1, RootUsedPercent: 40, CollectedAt: at},
		Outdated: []OutdatedRecord{{Name: "pkg0001", Arch: "amd64", Current: version, Candidate: "9", Security: true}, {Name: "pkg0002", Arch: "amd64", Current: version, Candidate: "9", Held: true}},
		Storage:  []StorageSample{{Mount: "/", TakenAt: at, UsedBytes: 40, TotalBytes: 100}}}
	for i := range n {
		src := fmt.Sprintf("src%04d", i)
		if i%3 == 0 {
			src = "other"
		}
		in.Packages = append(in.Packages, PackageRecord{Name: fmt.Sprintf("pkg%04d", i), Version: version, Arch: "amd64", Source: src, Manager: "apt"})
	}
	if n > 0 {
		in.Packages = append(in.Packages, PackageRecord{Name: "pkg0000", Version: version, Arch: "amd64", Source: "ignored duplicate", Manager: "apt"})
	}
	return in
}

// storedInventory is everything a server's ingest left behind.
type storedInventory struct {
	Facts    FactsRecord
	Packages []PackageRecord
	Outdated []OutdatedRecord
	Samples  int
}

func readInventory(t *testing.T, s *Store, id string) storedInventory {
	t.Helper()
	ctx := context.Background()
	var out storedInventory
	var err error
	if out.Facts, err = s.ServerFactsOf(ctx, SystemScope, id); err != nil {
		t.Fatal(err)
	}
	out.Facts.ServerID = ""
	if out.Packages, err = s.ServerPackages(ctx, SystemScope, id); err != nil {
		t.Fatal(err)
	}
	if out.Outdated, err = s.ServerOutdated(ctx, SystemScope, id); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := s.db.Model(&storageSampleRow{}).Where("server_id = ?", id).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	out.Samples = int(n)
	return out
}

// TestIngestInventories: a batch stores exactly what single ingests store;
// re-ingests write the difference; a server deleted before its result
// arrives fails alone; a server listed twice ends with its last result.
func TestIngestInventories(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			s, _ := openTest(t, db)
			ctx := context.Background()
			var single, batch []string
			for i := range 3 {
				single = append(single, addTestServer(t, s, fmt.Sprintf("single-%d", i)))
				batch = append(batch, addTestServer(t, s, fmt.Sprintf("batch-%d", i)))
			}
			gone := addTestServer(t, s, "gone")
			if err := s.DeleteServer(ctx, gone); err != nil {
				t.Fatal(err)
			}
			sizes := []int{50, 0, 120}
			for i, id := range single {
				st, err := s.IngestInventory(ctx, testInventory(id, sizes[i], "1.0"))
				if err != nil || st.Inserted != sizes[i] || st.Deleted != 0 || st.Unchanged != 0 {
					t.Fatalf("single ingest %d: %+v %v", i, st, err)
				}
			}
			ins := []InventoryIngest{testInventory(batch[0], sizes[0], "1.0"), testInventory(gone, 10, "1.0"),
				testInventory(batch[1], sizes[1], "1.0"), testInventory(batch[2], sizes[2], "1.0")}
			res := s.IngestInventories(ctx, ins)
			if !errors.Is(res[1].Err, domain.ErrNotFound) {
				t.Fatalf("deleted server: %v, want not found", res[1].Err)
			}
			for i, k := range []int{0, 2, 3} {
				if res[k].Err != nil || res[k].Stats.Inserted != sizes[i] {
					t.Fatalf("batch result %d: %+v", k, res[k])
				}
				want, got := readInventory(t, s, single[i]), readInventory(t, s, batch[i])
				if !reflect.DeepEqual(want, got) {
					t.Fatalf("server %d: batch stored\n%+v\nsingle stored\n%+v", i, got, want)
				}
				if len(got.Packages) != sizes[i] || got.Samples != 1 || len(got.Outdated) != 2 || got.Outdated[0].Held || !got.Outdated[1].Held || !got.Outdated[0].Security {
					t.Fatalf("server %d: %d packages, %d samples, outdated %+v", i, len(got.Packages), got.Samples, got.Outdated)
				}
				if sizes[i] > 0 && got.Packages[0].Source != "other" {
					t.Fatalf("server %d: a duplicate key replaced its first occurrence: %+v", i, got.Packages[0])
				}
			}

			// Re-ingest: 3 versions changed, 5 packages gone, 2 new.
			next := testInventory(batch[2], sizes[2], "1.0")
			for i := 10; i < 13; i++ {
				next.Packages[i].Version = "1.1"
			}
			next.Packages = append(next.Packages[:20], next.Packages[25:]...)
			next.Packages = append(next.Packages, PackageRecord{Name: "new-a", Version: "1", Arch: "all"}, PackageRecord{Name: "new-b", Version: "1"})
			res = s.IngestInventories(ctx, []InventoryIngest{next, testInventory(batch[0], sizes[0], "1.0")})
			if want := (IngestStats{Inserted: 5, Deleted: 8, Unchanged: sizes[2] - 8}); res[0].Err != nil || res[0].Stats != want {
				t.Fatalf("diff: %+v, want %+v", res[0], want)
			}
			if want := (IngestStats{Unchanged: sizes[0]}); res[1].Err != nil || res[1].Stats != want {
				t.Fatalf("unchanged re-ingest: %+v, want %+v", res[1], want)
			}
			got, err := s.ServerPackages(ctx, SystemScope, batch[2])
			if err != nil {
				t.Fatal(err)
			}
			want := slices.DeleteFunc(slices.Clone(next.Packages), func(p PackageRecord) bool { return p.Source == "ignored duplicate" })
			slices.SortFunc(want, func(a, b PackageRecord) int {
				return strings.Compare(a.Name+"\x00"+a.Arch+"\x00"+a.Version, b.Name+"\x00"+b.Arch+"\x00"+b.Version)
			})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("after the diff: %d packages, want %d", len(got), len(want))
			}

			// The same server twice in one call: its last result wins.
			res = s.IngestInventories(ctx, []InventoryIngest{testInventory(batch[1], 5, "2.0"), testInventory(batch[1], 7, "3.0")})
			if res[0].Err != nil || res[1].Err != nil || res[1].Stats.Inserted != 7 || res[1].Stats.Deleted != 5 {
				t.Fatalf("server listed twice: %+v", res)
			}
			if p, _ := s.ServerPackages(ctx, SystemScope, batch[1]); len(p) != 7 || p[0].Version != "3.0" {
				t.Fatalf("server listed twice: %+v", p)
			}

			// A cold catalog cache (a restarted or another replica) finds
			// the stored versions instead of adding them again.
			var versions int64
			s.db.Model(&packageVersionRow{}).Count(&versions)
			cold := *s
			cold.pkgs = newPackageCatalog()
			if r := cold.IngestInventories(ctx, []InventoryIngest{testInventory(batch[0], sizes[0], "1.0")}); r[0].Err != nil || r[0].Stats.Unchanged != sizes[0] {
				t.Fatalf("cold cache: %+v", r[0])
			}
			var after int64
			s.db.Model(&packageVersionRow{}).Count(&after)
			if after != versions {
				t.Fatalf("catalog grew from %d to %d versions on a cold cache", versions, after)
			}
		})
	}
}

// TestIngestInventoriesIsolatesFailures: a result the database refuses
// fails alone; the others of its transaction are stored.
func TestIngestInventoriesIsolatesFailures(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			s, _ := openTest(t, db)
			ctx := context.Background()
			a, bad, b := addTestServer(t, s, "a"), addTestServer(t, s, "bad"), addTestServer(t, s, "b")
			broken := testInventory(bad, 3, "1.0")
			// PostgreSQL refuses a name longer than the column; SQLite
			// does not check lengths, so there the result is stored.
			broken.Packages[1].Name = strings.Repeat("x", 300)
			res := s.IngestInventories(ctx, []InventoryIngest{testInventory(a, 4, "1.0"), broken, testInventory(b, 5, "1.0")})
			if res[0].Err != nil || res[2].Err != nil {
				t.Fatalf("good results: %v, %v", res[0].Err, res[2].Err)
			}
			if db.Name == "postgres" && res[1].Err == nil {
				t.Fatal("the over-long name was stored on PostgreSQL")
			}
			for id, n := range map[string]int{a: 4, b: 5} {
				if p, err := s.ServerPackages(ctx, SystemScope, id); err != nil || len(p) != n {
					t.Fatalf("server %s: %d packages, %v", id, len(p), err)
				}
			}
		})
	}
}

// TestMigratePackageCatalog: migration inventory/005 keeps every stored
// package, and the cascade still removes a deleted server's packages.
func TestMigratePackageCatalog(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s, err := Open(ctx, Options{URL: db.URL, DataDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			all := allMigrations()
			at := slices.IndexFunc(all, func(m Migration) bool { return m.ID == "inventory/005_package_catalog" })
			if err := s.migrate(ctx, all[:at]); err != nil {
				t.Fatal(err)
			}
			kr, _, err := s.ResolveMasterKey(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			s.SetKeyring(kr)
			a, b := addTestServer(t, s, "a"), addTestServer(t, s, "b")
			old := map[string][]PackageRecord{
				a: {{Name: "bash", Version: "5.2", Arch: "amd64", Source: "bash", Manager: "apt"}, {Name: "curl", Version: "7.88", Arch: "amd64", Source: "curl", Manager: "apt"}},
				b: {{Name: "bash", Version: "5.2", Arch: "amd64", Source: "bash", Manager: "apt"}, {Name: "bash", Version: "5.2", Arch: "i386", Source: "bash", Manager: "apt"},
					{Name: "zlib1g", Version: "1.2", Arch: "amd64", Source: "zlib", Manager: "apt"}},
			}
			for id, ps := range old {
				for _, p := range ps {
					if err := s.db.Exec("INSERT INTO server_packages (server_id, name, arch, version, source, manager) VALUES (?, ?, ?, ?, ?, ?)",
						id, p.Name, p.Arch, p.Version, p.Source, p.Manager).Error; err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			for id, want := range old {
				got, err := s.ServerPackages(ctx, SystemScope, id)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("after the migration: %+v %v, want %+v", got, err, want)
				}
			}
			var versions int64
			s.db.Model(&packageVersionRow{}).Count(&versions)
			if versions != 4 {
				t.Fatalf("%d catalog versions, want 4", versions)
			}
			ov, total, err := s.PackageOverview(ctx, SystemScope, OverviewFilter{Name: "bash", Limit: 10})
			if err != nil || total != 1 || len(ov) != 1 || len(ov[0].Versions) != 1 || len(ov[0].Versions[0].ServerIDs) != 2 {
				t.Fatalf("overview after the migration: %+v %d %v", ov, total, err)
			}
			// New ingests use the migrated catalog and numbering.
			if st, err := s.IngestInventory(ctx, InventoryIngest{Facts: FactsRecord{ServerID: a, FactsJSON: []byte("{}"), CollectedAt: time.Now()},
				Packages: old[a][:1]}); err != nil || st != (IngestStats{Deleted: 1, Unchanged: 1}) {
				t.Fatalf("ingest after the migration: %+v %v", st, err)
			}
			if err := s.DeleteServer(ctx, b); err != nil {
				t.Fatal(err)
			}
			var rows, nums int64
			s.db.Table("server_packages").Count(&rows)
			s.db.Table("inventory_servers").Count(&nums)
			if rows != 1 || nums != 1 {
				t.Fatalf("after deleting a server: %d package rows, %d numbered servers; want 1, 1", rows, nums)
			}
		})
	}
}

// TestStatusBatchesNameTheirServers: the batch status writes report the
// servers they changed to the listing cache (changes.go) instead of
// invalidating the whole fleet; an inventory ingest changes the servers
// whose update counters moved, and a repeated one nothing.
func TestStatusBatchesNameTheirServers(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			s, _ := openTest(t, db)
			ctx := context.Background()
			a, b, c := addTestServer(t, s, "a"), addTestServer(t, s, "b"), addTestServer(t, s, "c")
			want := []string{a, b}
			slices.Sort(want)
			ingest := func() []string {
				t.Helper()
				v := s.FleetVersion()
				if r := s.IngestInventories(ctx, []InventoryIngest{testInventory(a, 5, "1"), testInventory(b, 5, "1")}); r[0].Err != nil || r[1].Err != nil {
					t.Fatal(r)
				}
				_, ids, ok := s.FleetChangesSince(v)
				if !ok {
					t.Fatal("inventory ingest changed every server")
				}
				slices.Sort(ids)
				return ids
			}
			if ids := ingest(); !slices.Equal(ids, want) {
				t.Fatalf("first inventory ingest: changed %v, want %v (their counters)", ids, want)
			}
			if ids := ingest(); len(ids) != 0 {
				t.Fatalf("repeated inventory ingest: changed %v, want nothing", ids)
			}
			v := s.FleetVersion()
			now := time.Now().UTC()
			if err := s.RecordContacts(ctx, []Contact{{ServerID: b, OK: true}, {ServerID: a, Reason: "timeout"}}, now); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveStatuses(ctx, []StatusRecord{{ServerID: a, Status: "red", InsightsJSON: []byte("[]"), ComputedAt: now},
				{ServerID: b, Status: "green", InsightsJSON: []byte("[]"), ComputedAt: now}}); err != nil {
				t.Fatal(err)
			}
			_, ids, ok := s.FleetChangesSince(v)
			slices.Sort(ids)
			if !ok || !slices.Equal(ids, want) {
				t.Fatalf("status batches: changed %v (ok %v), want %v and not %s", ids, ok, want, c)
			}
		})
	}
}

// TestMigrateOutdatedHeld: a database from before inventory/006 gains the
// held column, keeps its outdated rows (held false) and stores held ones.
func TestMigrateOutdatedHeld(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			id := addTestServer(t, s, "held")
			// Back to the shape before 006: no held column, 006 not recorded.
			if err := s.db.Migrator().DropColumn(&serverOutdatedRow{}, "Held"); err != nil {
				t.Fatal(err)
			}
			if err := s.db.Exec("DELETE FROM schema_migrations WHERE id = ?", "inventory/006_outdated_held").Error; err != nil {
				t.Fatal(err)
			}
			if err := s.db.Exec("INSERT INTO server_outdated (server_id, name, arch, current, candidate, security) VALUES (?, 'old', 'amd64', '1', '2', false)", id).Error; err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := s.ServerOutdated(ctx, SystemScope, id)
			if err != nil || len(got) != 1 || got[0].Held || got[0].Candidate != "2" {
				t.Fatalf("after 006: %+v %v", got, err)
			}
			if _, err := s.IngestInventory(ctx, testInventory(id, 5, "1.0")); err != nil {
				t.Fatal(err)
			}
			if got, err = s.ServerOutdated(ctx, SystemScope, id); err != nil || len(got) != 2 || !got[1].Held {
				t.Fatalf("held after ingest: %+v %v", got, err)
			}
		})
	}
}
