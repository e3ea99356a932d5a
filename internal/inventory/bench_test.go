package inventory_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/testutil"
)

// BenchmarkIngest1000x1500 ingests the package inventories of 1,000
// servers × 1,500 packages (first ingest: 1.5 M rows) per op. Budget ≤ 20 s
// on SQLite and PostgreSQL. Run:
//
//	go test ./internal/inventory -run '^$' -bench Ingest1000x1500 -benchtime 1x
func BenchmarkIngest1000x1500(b *testing.B) {
	servers, packages := 1000, 1500
	if testing.Short() {
		servers = 50
	}
	if n, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && n > 0 {
		servers = n // profiling runs: a shorter fleet
	}
	for _, db := range testutil.Databases(b) {
		b.Run(db.Name, func(b *testing.B) {
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				st := openStore(b, db.URL)
				inv := inventory.New(st, inventory.Options{Log: quiet})
				ids := make([]string, servers)
				for j := range ids {
					ids[j] = addServer(b, st, fmt.Sprintf("bench-%d-%04d", i, j))
				}
				list := make([]pkgmgr.Package, packages)
				for j := range list {
					list[j] = pkgmgr.Package{Name: fmt.Sprintf("package-name-%04d", j), Version: fmt.Sprintf("1.%d.%d-1+deb12u1", j%7, j%13),
						Arch: "amd64", Source: fmt.Sprintf("package-src-%04d", j), Manager: "apt"}
				}
				f := sampleFacts(40<<30, 60<<30)
				b.StartTimer()
				for _, id := range ids {
					if err := inv.Ingest(ctx, id, f, pkgmgr.Inventory{Manager: "apt", Packages: list}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				// Steady state: a second refresh where 5 packages changed.
				list[1].Version, list[2].Version, list[3].Version, list[4].Version, list[5].Version = "9", "9", "9", "9", "9"
				b.StartTimer()
			}
		})
	}
}
