package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/containersvc"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/status"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// inventoryHooks mirrors cmd/api's registerInventoryHooks for the refresh
// kinds: the refresh data of the jobs one ingest batch finished is
// ingested into the inventory at once (which recomputes the status), the
// container inventories the refreshes read go to the containers service
// (as cmd/api's wireContainers connects them), then the status batch hook
// runs. ingested counts the refresh results stored.
func inventoryHooks(p *plane.Plane, ingested *atomic.Int64) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := status.New(p.Store, quiet)
	inv := inventory.New(p.Store, inventory.Options{Log: quiet, OnIngest: st.RecomputeMany})
	inv.OnContainers(containersvc.New(p.Store, p.Jobs, quiet).IngestRefreshes)
	ingest := func(ctx context.Context, jobs []domain.Job) []error {
		errs := inv.IngestJobs(ctx, jobs)
		for i, err := range errs {
			if err == nil && len(jobs[i].Data) > 0 {
				ingested.Add(1)
			}
		}
		return errs
	}
	for _, k := range []domain.JobKind{domain.JobRefresh, domain.JobPackageAction, domain.JobUpgradeSecurity} {
		p.Jobs.OnFinishBatch(k, ingest)
	}
	for _, k := range domain.JobKinds {
		p.Jobs.OnFinishBatch(k, func(ctx context.Context, jobs []domain.Job) []error { return st.JobsFinished(ctx, jobs) })
	}
}

// BenchmarkRefresh1000: a refresh job on each of 1,000 simulated Debian 12
// servers (recorded facts, 1,500 packages, 40 upgradable of which 12
// security), one worker; wall time from the first submit until every job is
// final and its refresh data ingested into the inventory (the finish hooks
// cmd/api registers). Budget ≤ 30 s. The first iteration is a first
// ingest (bulk insert); with -benchtime 2x the second refreshes servers
// whose inventory is already stored (the steady state: diff, no rows
// written); each iteration is logged, the metrics are the last one's.
//
//	go test -run '^$' -bench Refresh1000 -benchtime 1x -timeout 20m ./internal/jobs
//	LCM_BENCH_DB=postgres go test -run '^$' -bench Refresh1000 -benchtime 1x -timeout 20m ./internal/jobs
func BenchmarkRefresh1000(b *testing.B) {
	const n = 1000
	table := fleetsim.DefaultTable()
	fleetsim.HandleRefresh(table, fleetsim.RefreshOptions{Upgradable: 40, Security: 12})
	// lastList is when the last package listing (the refresh's final
	// command) reached a simulated server: the SSH side is done then, the
	// rest of the wall time is the final states' ingest and finish hooks.
	var lists atomic.Int64
	var lastList atomic.Int64
	f, err := fleetsim.Start(fleetsim.Config{N: n, Packages: 1500, Responders: table, OnExec: func(_ *fleetsim.Instance, cmd string) {
		if strings.HasPrefix(cmd, "apt-get -s") {
			lists.Add(1)
			lastList.Store(time.Now().UnixNano())
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	o := plane.Options{DatabaseURL: benchDB(b), Concurrency: n}
	// Diagnostic only: a longer reaper bound shows the throughput when the
	// ingest backlog delays heartbeats past the 30 s default.
	if d, err := time.ParseDuration(os.Getenv("LCM_BENCH_HEARTBEAT_TIMEOUT")); err == nil {
		o.HeartbeatTimeout = d
	}
	p := plane.Start(b, o)
	var ingested atomic.Int64
	inventoryHooks(p, &ingested)
	ctx := context.Background()
	servers := make([]domain.Server, n)
	for i, inst := range f.Instances {
		servers[i] = simServer(b, p, inst)
	}
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		ingested.Store(0)
		lists.Store(0)
		start := time.Now()
		ids := make([]string, n)
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1) - 1; i < n; i = next.Add(1) - 1 {
					j, err := p.Fleet.Refresh(ctx, p.Admin, servers[i].ID)
					if err != nil {
						b.Error(err)
						return
					}
					ids[i] = j.ID
				}
			}()
		}
		wg.Wait()
		submitted := time.Since(start)
		failed := 0
		for _, id := range ids {
			if j := p.WaitJob(b, id, 10*time.Minute); j.Status != domain.JobSuccess {
				failed++
				if failed == 1 {
					b.Logf("job %s: %s (%s)", id, j.Status, j.Error)
				}
			}
		}
		final := time.Since(start)
		for deadline := time.Now().Add(5 * time.Minute); ingested.Load() < int64(n-failed) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		wall := time.Since(start)
		commands := time.Unix(0, lastList.Load()).Sub(start)
		b.Logf("refresh %d: wall %.1f s (all final %.1f s, submitted %.1f s, last listing command at %.1f s), %d failed, %d ingested",
			it+1, wall.Seconds(), final.Seconds(), submitted.Seconds(), commands.Seconds(), failed, ingested.Load())
		b.ReportMetric(commands.Seconds(), "commands-s")
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(final.Seconds(), "final-s")
		b.ReportMetric(submitted.Seconds(), "submit-s")
		b.ReportMetric(float64(failed), "failed")
		b.ReportMetric(float64(ingested.Load()), "ingested")
	}
	b.StopTimer()
	// Sanity: the inventory holds the packages.
	if pkgs, err := p.Store.ServerPackages(ctx, store.SystemScope, servers[n-1].ID); err != nil || len(pkgs) != 1500 {
		b.Fatalf("last server's inventory: %d packages, %v", len(pkgs), err)
	}
}
