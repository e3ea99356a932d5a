package inventory_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// BenchmarkIngest1000x1500 ingests the package inventories of 1,000
// servers × 1,500 packages (first ingest: 1.5 M rows) per op, 100 servers
// per IngestMany call as the jobs ingest hands them over (its finishChunk);
// LCM_BENCH_BATCH=1 calls Ingest per server instead. Budget ≤ 20 s on
// SQLite and PostgreSQL. With -benchtime 2x the second op is a re-ingest
// in which 5 packages changed per server (the diff path). Run:
//
//	go test ./internal/inventory -run '^$' -bench Ingest1000x1500 -benchtime 1x
func BenchmarkIngest1000x1500(b *testing.B) {
	servers, packages, batch := 1000, 1500, 100
	if testing.Short() {
		servers = 50
	}
	if n, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && n > 0 {
		servers = n // profiling runs: a shorter fleet
	}
	if n, err := strconv.Atoi(os.Getenv("LCM_BENCH_BATCH")); err == nil && n > 0 {
		batch = n
	}
	for _, db := range testutil.Databases(b) {
		b.Run(db.Name, func(b *testing.B) {
			ctx := context.Background()
			b.StopTimer()
			url := db.URL
			if url != "" {
				url = testutil.PostgresURL(b) // the testing package may call this function again
			}
			st := storetest.Open(b, url)
			inv := inventory.New(st, inventory.Options{Log: quiet})
			ids := make([]string, servers)
			for j := range ids {
				ids[j] = addServer(b, st, fmt.Sprintf("bench-%04d", j))
			}
			list := make([]pkgmgr.Package, packages)
			for j := range list {
				list[j] = pkgmgr.Package{Name: fmt.Sprintf("package-name-%04d", j), Version: fmt.Sprintf("1.%d.%d-1+deb12u1", j%7, j%13),
					Arch: "amd64", Source: fmt.Sprintf("package-src-%04d", j), Manager: "apt"}
			}
			f := sampleFacts(40<<30, 60<<30)
			for i := 0; i < b.N; i++ {
				if i > 0 {
					// Steady state: a second refresh where 5 packages changed.
					list = slices.Clone(list)
					for j := 1; j <= 5; j++ {
						list[j].Version = fmt.Sprintf("9.%d", i)
					}
				}
				start := time.Now()
				b.StartTimer()
				for lo := 0; lo < len(ids); lo += batch {
					rs := make([]inventory.Refresh, 0, batch)
					for _, id := range ids[lo:min(lo+batch, len(ids))] {
						rs = append(rs, inventory.Refresh{ServerID: id, Facts: f, Inventory: pkgmgr.Inventory{Manager: "apt", Packages: list}})
					}
					for _, err := range inv.IngestMany(ctx, rs) {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				b.Logf("ingest %d (%s): %.1f s, %.1f ms per server", i+1, map[bool]string{true: "first", false: "5 changed"}[i == 0],
					time.Since(start).Seconds(), float64(time.Since(start).Microseconds())/1000/float64(servers))
			}
		})
	}
}
