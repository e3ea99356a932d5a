package rollout_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/approvals"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/rollout"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// BenchmarkRolloutVsBulk: the budget of issue 20. A security-update
// rollout over LCM_BENCH_SERVERS simulated Debian 12 servers (default
// 1,000) in 10 batches with no pause, against the same update submitted as
// one bulk run, in the same process on the same servers (the upgrade takes
// 1 s on every host and leaves the updates pending, so both do the same
// work; one worker with 64 jobs in flight, lcm-api's default). Wall time
// from the request until every job is final (bulk) or the rollout is
// completed. Budget: rollout ≤ 1.5 × bulk. LCM_BENCH_DB=postgres uses
// PostgreSQL.
//
//	go test -run '^$' -bench RolloutVsBulk -benchtime 1x -timeout 20m ./internal/rollout
func BenchmarkRolloutVsBulk(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > 0 {
		n = v
	}
	table := fleetsim.DebianTable(fleetsim.DebianOptions{RefreshOptions: fleetsim.RefreshOptions{Upgradable: 40, Security: 12},
		KeepPending: true, UpgradeTime: time.Second})
	f, err := fleetsim.Start(fleetsim.Config{N: n, Packages: 400, Responders: table})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	db := ""
	if os.Getenv("LCM_BENCH_DB") == "postgres" {
		db = testutil.PostgresURL(b)
	}
	p := plane.Start(b, plane.Options{DatabaseURL: db, Concurrency: 64})
	for _, inst := range f.Instances {
		key, err := actions.NewManagementKey("bench")
		if err != nil {
			b.Fatal(err)
		}
		p.AddServer(b, inst.Hostname, inst.Addr, inst.AuthorizedHostKey(), key)
	}
	ro := rollout.New(p.Store, p.Jobs, rollout.Options{Log: quiet, Approvals: approvals.New(p.Store, quiet)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ro.Run(ctx) }()
	defer func() { cancel(); <-done }()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		start := time.Now()
		run, err := p.Fleet.Bulk(ctx, p.Admin, fleet.BulkRequest{Action: "upgrade-security", All: true})
		if err != nil {
			b.Fatal(err)
		}
		for !run.Progress().Done {
			time.Sleep(100 * time.Millisecond)
			if run, err = p.Fleet.GetBulk(ctx, p.Admin, run.ID); err != nil {
				b.Fatal(err)
			}
		}
		bulk := time.Since(start)
		if pr := run.Progress(); pr.Counts[domain.JobSuccess] != n {
			b.Fatalf("bulk progress %+v", pr)
		}

		start = time.Now()
		r, err := ro.Create(ctx, p.Admin, rollout.Request{Action: rollout.ActionSecurityUpdates, All: true, BatchPercent: 10})
		if err != nil {
			b.Fatal(err)
		}
		for r.Status == domain.RolloutRunning {
			time.Sleep(100 * time.Millisecond)
			if r, err = p.Store.GetRollout(ctx, store.SystemScope, r.ID); err != nil {
				b.Fatal(err)
			}
		}
		staged := time.Since(start)
		if c := r.Counts(); r.Status != domain.RolloutCompleted || c[domain.ItemSuccess] != n || r.Batches != 10 {
			b.Fatalf("rollout %s, %d batches, counts %v (%s)", r.Status, r.Batches, c, r.Reason)
		}
		ratio := staged.Seconds() / bulk.Seconds()
		b.Logf("%d servers: one bulk run %.1f s, rollout in %d batches %.1f s, ratio %.2f (budget 1.5)", n, bulk.Seconds(), r.Batches, staged.Seconds(), ratio)
		b.ReportMetric(bulk.Seconds(), "bulk-s")
		b.ReportMetric(staged.Seconds(), "rollout-s")
		b.ReportMetric(ratio, "ratio")
		if ratio > 1.5 {
			b.Errorf("rollout took %.2f× the bulk run; budget 1.5×", ratio)
		}
	}
}
