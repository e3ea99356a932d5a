package recordsvc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/dnsserver"
	"github.com/lcmproject/lcm/internal/records"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// benchZones creates n zones in the fixture's project with one bulk
// transaction and returns their ids.
func benchZones(b *testing.B, f *fixture, n int) []string {
	b.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	now := time.Now().UTC()
	require.NoError(b, f.st.InTx(ctx, func(tx *store.Store) error {
		for i := range ids {
			ids[i] = newID()
			z := store.DNSZone{ID: ids[i], ProjectID: f.project.ID, Name: fmt.Sprintf("z%05d.bench.example.", i),
				DefaultTTL: 3600, MName: "ns1.lcm-dns.example.net.", RName: "hostmaster.bench.example.",
				Refresh: 86400, Retry: 7200, Expire: 3600000, Minimum: 3600, Serial: 1, CreatedAt: now, UpdatedAt: now}
			if err := tx.CreateZone(ctx, z); err != nil {
				return err
			}
		}
		return nil
	}))
	return ids
}

// withDNS attaches an embedded listener's syncer to the change hook, as
// cmd/api does with dns.listen set.
func withDNS(b *testing.B, f *fixture) {
	srv := dnsserver.New(dnsserver.Config{Addr: "127.0.0.1:0"})
	d := NewDNS(f.st, srv, nil)
	require.NoError(b, d.Load(context.Background()))
	f.svc.OnChange(func(ctx context.Context, ids []string) { require.NoError(b, d.Refresh(ctx, ids)) })
}

// BenchmarkUpdateSets1000x20 is the budget case: update-sets on a group with
// 1,000 member zones × 20 sets (≤ 2 s). Iterations alternate between two
// set lists, so every call rewrites all 20,000 sets and bumps 1,000 serials.
func BenchmarkUpdateSets1000x20(b *testing.B) {
	for _, db := range testutil.Databases(b) {
		for _, dns := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/dns=%v", db.Name, dns), func(b *testing.B) {
				ctx := context.Background()
				f := newFixture(b, testutil.DB{Name: db.Name, URL: freshURL(b, db)})
				zones := benchZones(b, f, 1000)
				g, err := f.svc.CreateSyncGroup(ctx, f.owner, SyncGroupInput{Name: "bench", Priority: 1})
				require.NoError(b, err)
				require.NoError(b, f.st.AddSyncGroupMembers(ctx, g.ID, zones, time.Now()))
				if dns {
					withDNS(b, f)
				}
				lists := [2][]records.RecordSet{}
				for v := range lists {
					for i := range 20 {
						lists[v] = append(lists[v], rs(fmt.Sprintf("h%02d", i), "A", fmt.Sprintf("192.0.2.%d", v*100+i)))
					}
				}
				_, err = f.svc.UpdateSyncGroupSets(ctx, f.owner, g.ID, lists[1])
				require.NoError(b, err)
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					reps, err := f.svc.UpdateSyncGroupSets(ctx, f.owner, g.ID, lists[i%2])
					if err != nil || len(reps) != 1000 || len(reps[0].Applied) != 20 {
						b.Fatalf("%v %d", err, len(reps))
					}
				}
			})
		}
	}
}

// BenchmarkSourceUpdate10000 is the budget case: a source update that
// propagates to 10,000 bound sets, one in each of 10,000 zones (≤ 2 s).
func BenchmarkSourceUpdate10000(b *testing.B) {
	for _, db := range testutil.Databases(b) {
		b.Run(db.Name, func(b *testing.B) {
			ctx := context.Background()
			f := newFixture(b, testutil.DB{Name: db.Name, URL: freshURL(b, db)})
			zones := benchZones(b, f, 10000)
			src, err := f.svc.CreateSourceHost(ctx, f.owner, f.project.ID, SourceInput{Name: "lb", IPv4: []string{"198.51.100.1"}})
			require.NoError(b, err)
			sets := make([]store.ZoneRecordSet, len(zones))
			for i, z := range zones {
				sets[i] = store.ZoneRecordSet{ZoneID: z, Name: "lb", Type: "A", Records: []string{"198.51.100.1"},
					OriginKind: "source", OriginID: src.ID, UpdatedAt: time.Now()}
			}
			require.NoError(b, f.st.InTx(ctx, func(tx *store.Store) error { return tx.PutRecordSets(ctx, sets) }))
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				addr := fmt.Sprintf("198.51.100.%d", 2+i%200)
				if _, err := f.svc.UpdateSourceHost(ctx, f.owner, src.ID, SourceInput{Name: "lb", IPv4: []string{addr}}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			got, err := f.st.RecordSetsByOrigin(ctx, "source", src.ID)
			require.NoError(b, err)
			require.Len(b, got, 10000)
		})
	}
}

// freshURL gives each sub-benchmark its own PostgreSQL database.
func freshURL(b *testing.B, db testutil.DB) string {
	if db.URL == "" {
		return ""
	}
	return testutil.PostgresURL(b)
}
