package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// TestServerCountersFollowIngest: every ingest leaves the server row's
// counters equal to its stored outdated rows (all, security) and the
// refresh's reboot flag — whatever the facts record claimed — and the
// server list's change tracking names just that server.
func TestServerCountersFollowIngest(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			id := addTestServer(t, s, "counted")
			other := addTestServer(t, s, "other")
			check := func(step string, updates, security int, reboot bool) {
				t.Helper()
				srv, err := s.GetServer(ctx, SystemScope, id)
				if err != nil {
					t.Fatal(err)
				}
				od, err := s.ServerOutdated(ctx, SystemScope, id)
				if err != nil {
					t.Fatal(err)
				}
				sec := 0
				for _, u := range od {
					if u.Security {
						sec++
					}
				}
				f, err := s.ServerFactsOf(ctx, SystemScope, id)
				if err != nil {
					t.Fatal(err)
				}
				if srv.UpdatesAvail != updates || srv.SecurityAvail != security || srv.RebootRequired != reboot ||
					len(od) != updates || sec != security || f.Updates != updates || f.SecurityUpdates != security || f.RebootRequired != reboot {
					t.Fatalf("%s: server %d/%d/%v, outdated rows %d/%d, facts %d/%d/%v; want %d/%d/%v", step,
						srv.UpdatesAvail, srv.SecurityAvail, srv.RebootRequired, len(od), sec, f.Updates, f.SecurityUpdates, f.RebootRequired,
						updates, security, reboot)
				}
			}
			ingest := func(in InventoryIngest) []string {
				t.Helper()
				v := s.FleetVersion()
				if _, err := s.IngestInventory(ctx, in); err != nil {
					t.Fatal(err)
				}
				cur, ids, ok := s.FleetChangesSince(v)
				if !ok || cur.Gen != v.Gen {
					t.Fatalf("ingest counted as a change of every server (%v → %v)", v, cur)
				}
				slices.Sort(ids)
				return slices.Compact(ids)
			}

			in := testInventory(id, 5, "1.0") // two outdated rows, one of them security
			in.Facts.Updates, in.Facts.SecurityUpdates, in.Facts.RebootRequired = 99, 42, true
			if changed := ingest(in); !slices.Equal(changed, []string{id}) {
				t.Fatalf("first ingest changed %v, want just %s", changed, id)
			}
			check("first ingest", 2, 1, true)
			if changed := ingest(in); len(changed) != 0 {
				t.Fatalf("unchanged refresh changed %v", changed)
			}
			in.Outdated = append(in.Outdated, OutdatedRecord{Name: "pkg0003", Arch: "amd64", Current: "1.0", Candidate: "2", Security: true})
			ingest(in)
			check("one more security update", 3, 2, true)
			in.Outdated, in.Facts.RebootRequired = nil, false
			ingest(in)
			check("all upgraded, rebooted", 0, 0, false)
			if srv, err := s.GetServer(ctx, SystemScope, other); err != nil || srv.UpdatesAvail != 0 || srv.RebootRequired {
				t.Fatalf("other server: %+v %v", srv, err)
			}
		})
	}
}

// TestMigrateServerCounters: migration inventory/007 fills the counters
// of servers refreshed before ingests wrote them.
func TestMigrateServerCounters(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			id := addTestServer(t, s, "old")
			never := addTestServer(t, s, "never-refreshed")
			in := testInventory(id, 5, "1.0")
			in.Facts.RebootRequired = true
			if _, err := s.IngestInventory(ctx, in); err != nil {
				t.Fatal(err)
			}
			// Back to the state before 007: counters never written.
			if err := s.db.Exec("UPDATE servers SET updates_avail = 0, security_avail = 0, reboot_required = ?", false).Error; err != nil {
				t.Fatal(err)
			}
			if err := s.db.Exec("DELETE FROM schema_migrations WHERE id = ?", "inventory/007_server_counters").Error; err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			srv, err := s.GetServer(ctx, SystemScope, id)
			if err != nil || srv.UpdatesAvail != 2 || srv.SecurityAvail != 1 || !srv.RebootRequired {
				t.Fatalf("after 007: %+v %v", srv, err)
			}
			if srv, err = s.GetServer(ctx, SystemScope, never); err != nil || srv.UpdatesAvail != 0 || srv.SecurityAvail != 0 || srv.RebootRequired {
				t.Fatalf("never refreshed, after 007: %+v %v", srv, err)
			}
		})
	}
}

// TestUnchangedInventoryKeepsPackages: a refresh that found the packages
// equal to the stored ones (named by their digest) updates the facts and
// keeps the packages, outdated rows and counters; one naming another
// digest keeps them too but clears the digest, so the next refresh sends
// everything.
func TestUnchangedInventoryKeepsPackages(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			id := addTestServer(t, s, "steady")
			full := testInventory(id, 20, "1.0")
			full.Facts.InventoryDigest = "digest-1"
			if _, err := s.IngestInventory(ctx, full); err != nil {
				t.Fatal(err)
			}
			before := readInventory(t, s, id)
			if before.Facts.InventoryDigest != "digest-1" {
				t.Fatalf("digest stored: %q", before.Facts.InventoryDigest)
			}
			if d, err := s.InventoryDigests(ctx, []string{id, "unknown"}); err != nil || len(d) != 1 || d[id] != "digest-1" {
				t.Fatalf("digests: %v %v", d, err)
			}
			unchanged := InventoryIngest{Unchanged: true, Facts: FactsRecord{ServerID: id, FactsJSON: []byte(`{"hostname":"h2"}`),
				PackageManager: "apt", RebootRequired: true, RootUsedPercent: 50, CollectedAt: full.Facts.CollectedAt.Add(time.Hour),
				InventoryDigest: "digest-1"}}
			st, err := s.IngestInventory(ctx, unchanged)
			if err != nil {
				t.Fatal(err)
			}
			after := readInventory(t, s, id)
			if st.Inserted != 0 || st.Deleted != 0 || st.Unchanged != len(before.Packages) {
				t.Errorf("stats %+v", st)
			}
			if !slices.Equal(after.Packages, before.Packages) || !slices.Equal(after.Outdated, before.Outdated) {
				t.Fatal("an unchanged refresh changed the packages")
			}
			if after.Facts.Packages != before.Facts.Packages || after.Facts.Updates != 2 || after.Facts.SecurityUpdates != 1 ||
				!after.Facts.RebootRequired || string(after.Facts.FactsJSON) != `{"hostname":"h2"}` || after.Facts.InventoryDigest != "digest-1" {
				t.Fatalf("facts after an unchanged refresh: %+v", after.Facts)
			}
			if srv, _ := s.GetServer(ctx, SystemScope, id); srv.UpdatesAvail != 2 || srv.SecurityAvail != 1 || !srv.RebootRequired {
				t.Fatalf("counters: %d/%d/%v", srv.UpdatesAvail, srv.SecurityAvail, srv.RebootRequired)
			}
			unchanged.Facts.InventoryDigest = "digest-other"
			if _, err := s.IngestInventory(ctx, unchanged); err != nil {
				t.Fatal(err)
			}
			again := readInventory(t, s, id)
			if again.Facts.InventoryDigest != "" || !slices.Equal(again.Packages, before.Packages) {
				t.Fatalf("a mismatching digest: %q, packages kept %v", again.Facts.InventoryDigest, slices.Equal(again.Packages, before.Packages))
			}
		})
	}
}
