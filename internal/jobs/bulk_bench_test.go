package jobs_test

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// BenchmarkBulkUpdateAll: "update all" (one bulk run of upgrade-security)
// on LCM_BENCH_SERVERS simulated Debian 12 servers (default 300; 400
// packages, 40 upgradable of which 12 security; the upgrade takes 1 s, every
// other command answers at once, updates stay pending), one worker with
// LCM_BENCH_CONCURRENCY jobs in flight (default 64, lcm-api's default),
// cmd/api's finish hooks. Wall time from the request until the run reports
// every job final (each one ingested). Profile the control plane with
// -cpuprofile (the simulator runs in the same process).
//
//	go test -run '^$' -bench BulkUpdateAll -benchtime 1x ./internal/jobs
func BenchmarkBulkUpdateAll(b *testing.B) {
	n, conc := 300, 64
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_CONCURRENCY")); err == nil && v > 0 {
		conc = v
	}
	table := fleetsim.DebianTable(fleetsim.DebianOptions{RefreshOptions: fleetsim.RefreshOptions{Upgradable: 40, Security: 12},
		KeepPending: true, UpgradeTime: time.Second})
	f, err := fleetsim.Start(fleetsim.Config{N: n, Packages: 400, Responders: table})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := plane.Start(b, plane.Options{DatabaseURL: benchDB(b), Concurrency: conc})
	var ingested atomic.Int64
	inventoryHooks(p, &ingested)
	for _, inst := range f.Instances {
		simServer(b, p, inst)
	}
	ctx := context.Background()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		start := time.Now()
		run, err := p.Fleet.UpdateAll(ctx, p.Admin)
		if err != nil {
			b.Fatal(err)
		}
		submitted := time.Since(start)
		for !run.Progress().Done {
			time.Sleep(100 * time.Millisecond)
			if run, err = p.Fleet.GetBulk(ctx, p.Admin, run.ID); err != nil {
				b.Fatal(err)
			}
		}
		wall := time.Since(start)
		pr := run.Progress()
		b.Logf("update all on %d servers, %d in flight: wall %.1f s (submitted in %.2f s), %d success, %d refused",
			n, conc, wall.Seconds(), submitted.Seconds(), pr.Counts[domain.JobSuccess], pr.Refused)
		if pr.Counts[domain.JobSuccess] != n {
			b.Fatalf("progress %+v", pr)
		}
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(submitted.Seconds(), "submit-s")
	}
}
