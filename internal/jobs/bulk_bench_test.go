package jobs_test

import (
	"context"
	"fmt"
	"github.com/google/uuid"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/jobs/runner"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// BenchmarkBulkUpdateAll: "update all" (one bulk run of upgrade-security)
// on LCM_BENCH_SERVERS simulated Debian 12 servers (default 300; 400
// packages, 40 upgradable of which 12 security; the upgrade takes 1 s, every
// other command answers at once, updates stay pending), LCM_BENCH_WORKERS
// workers (default 1) with LCM_BENCH_CONCURRENCY jobs in flight each
// (default the worker's default), cmd/api's finish hooks. Wall time from
// the request until the run reports every job final (each one ingested).
// The servers were refreshed once before, as a joined fleet is.
//
//	go test -run '^$' -bench BulkUpdateAll -benchtime 1x ./internal/jobs
//	LCM_BENCH_SERVERS=10000 LCM_BENCH_WORKERS=2 go test -run '^$' -bench BulkUpdateAll -benchtime 1x -timeout 30m ./internal/jobs
func BenchmarkBulkUpdateAll(b *testing.B) {
	n, conc, workers := 300, runner.DefaultConcurrency, 1
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_CONCURRENCY")); err == nil && v > 0 {
		conc = v
	}
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_WORKERS")); err == nil && v > 0 {
		workers = v
	}
	// Each simulated server is a listener and a connection on each side.
	raiseFileLimit(b, uint64(4*n+4096))
	table := fleetsim.DebianTable(fleetsim.DebianOptions{RefreshOptions: fleetsim.RefreshOptions{Upgradable: 40, Security: 12},
		KeepPending: true, UpgradeTime: time.Second})
	f, err := fleetsim.Start(fleetsim.Config{N: n, Packages: 400, Responders: table})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := plane.Start(b, plane.Options{DatabaseURL: benchDB(b), Concurrency: conc, NoWorker: true})
	for range workers {
		p.StartWorker(b, nil, conc)
	}
	// LCM_BENCH_HISTORY finished jobs with output already in the database:
	// a run must cost the same whatever the history holds.
	if h, err := strconv.Atoi(os.Getenv("LCM_BENCH_HISTORY")); err == nil && h > 0 {
		seedHistory(b, p, h)
	}
	var ingested atomic.Int64
	inventoryHooks(p, &ingested)
	// The database's lag behind the workers: from a job's final state at
	// the worker (its FinishedAt) to its ingest (the finish hooks run as
	// the final state is recorded).
	var lagMu sync.Mutex
	var lags []time.Duration
	p.Jobs.OnFinishBatch(domain.JobUpgradeSecurity, func(_ context.Context, jobs []domain.Job) []error {
		now := time.Now()
		lagMu.Lock()
		defer lagMu.Unlock()
		for _, j := range jobs {
			if j.FinishedAt != nil {
				lags = append(lags, now.Sub(*j.FinishedAt))
			}
		}
		return make([]error, len(jobs))
	})
	for _, inst := range f.Instances {
		simServer(b, p, inst)
	}
	ctx := context.Background()
	// The servers have an inventory, as joined servers do (the join ends
	// with a refresh): a run reads each one's stored digest.
	warm, err := p.Fleet.Bulk(ctx, p.Admin, fleet.BulkRequest{Action: "refresh", All: true})
	if err != nil {
		b.Fatal(err)
	}
	waitBulk(b, p, warm)
	// LCM_BENCH_CPUPROFILE profiles the timed part only.
	if path := os.Getenv("LCM_BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		start, cpu0 := time.Now(), cpuTime()
		// LCM_BENCH_HEAPPROFILE writes a heap profile 1.5 s into the run,
		// when every job is in flight.
		if path := os.Getenv("LCM_BENCH_HEAPPROFILE"); path != "" {
			time.AfterFunc(1500*time.Millisecond, func() {
				if f, err := os.Create(path); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
				if f, err := os.Create(path + ".goroutines"); err == nil {
					_ = pprof.Lookup("goroutine").WriteTo(f, 1)
					f.Close()
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.Logf("1.5 s in: %d goroutines, heap in use %d MiB, stacks %d MiB, sys %d MiB", runtime.NumGoroutine(),
					ms.HeapInuse>>20, ms.StackInuse>>20, ms.Sys>>20)
			})
		}
		run, err := p.Fleet.UpdateAll(ctx, p.Admin)
		if err != nil {
			b.Fatal(err)
		}
		submitted := time.Since(start)
		run = waitBulk(b, p, run)
		wall := time.Since(start)
		pr := run.Progress()
		b.Logf("update all on %d servers, %d worker(s) with %d in flight: wall %.1f s (submitted in %.2f s), %d success, %d refused",
			n, workers, conc, wall.Seconds(), submitted.Seconds(), pr.Counts[domain.JobSuccess], pr.Refused)
		if pr.Counts[domain.JobSuccess] != n {
			b.Fatalf("progress %+v", pr)
		}
		cpu := cpuTime() - cpu0
		lagMu.Lock()
		if len(lags) > 0 {
			b.Logf("database lag behind the workers (worker's final state → ingested): p50 %v, p99 %v, max %v",
				percentile(lags, 0.5).Round(time.Millisecond), percentile(lags, 0.99).Round(time.Millisecond), slices.Max(lags).Round(time.Millisecond))
			b.ReportMetric(percentile(lags, 0.99).Seconds(), "lag-p99-s")
		}
		lags = lags[:0]
		lagMu.Unlock()
		b.Logf("process CPU %.2f s (%.2f ms per job, simulator included)", cpu.Seconds(), cpu.Seconds()*1000/float64(n))
		b.ReportMetric(cpu.Seconds(), "cpu-s")
		logPhases(b, p, run, start)
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(submitted.Seconds(), "submit-s")
	}
}

// logPhases logs when the run's jobs were created, claimed (started) and
// finished (the worker's final state), relative to the request: where a
// bulk run's seconds go.
func logPhases(b *testing.B, p *plane.Plane, run domain.BulkRun, start time.Time) {
	var ids []string
	for _, it := range run.Items {
		if it.JobID != "" {
			ids = append(ids, it.JobID)
		}
	}
	jobs, err := p.Store.JobStates(context.Background(), ids)
	if err != nil {
		b.Fatal(err)
	}
	var created, started, finished []float64
	for _, j := range jobs {
		created = append(created, j.CreatedAt.Sub(start).Seconds())
		if j.StartedAt != nil {
			started = append(started, j.StartedAt.Sub(start).Seconds())
		}
		if j.FinishedAt != nil {
			finished = append(finished, j.FinishedAt.Sub(start).Seconds())
		}
	}
	q := func(xs []float64) string {
		if len(xs) == 0 {
			return "-"
		}
		slices.Sort(xs)
		at := func(f float64) float64 { return xs[min(len(xs)-1, int(f*float64(len(xs))))] }
		return fmt.Sprintf("first %.2f p50 %.2f p90 %.2f last %.2f", xs[0], at(0.5), at(0.9), xs[len(xs)-1])
	}
	b.Logf("phases (s after the request): created %s; started %s; finished %s", q(created), q(started), q(finished))
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitBulk polls a bulk run every 250 ms (as scripts/fanout_compare.py
// does) until every job is final.
func waitBulk(b *testing.B, p *plane.Plane, run domain.BulkRun) domain.BulkRun {
	b.Helper()
	var err error
	for !run.Progress().Done {
		time.Sleep(250 * time.Millisecond)
		if run, err = p.Fleet.GetBulk(context.Background(), p.Admin, run.ID); err != nil {
			b.Fatal(err)
		}
	}
	return run
}

// raiseFileLimit raises the open-file limit to at least n (as root up to
// the kernel's maximum): a large simulated fleet holds a listener and two
// connection ends per server in this process.
func raiseFileLimit(b *testing.B, n uint64) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur >= n {
		return
	}
	l.Cur = n
	if l.Max < n {
		l.Max = n
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		b.Fatalf("%d servers need %d open files: %v (raise ulimit -n)", n/4, n, err)
	}
}

// BenchmarkDispatchDuringBulk: the dispatch latency of single jobs (submit
// → the job's first command arrives on its server, over a pooled
// connection) while a bulk security upgrade of LCM_BENCH_SERVERS (default
// 1,000) simulated servers runs. Budget p99 ≤ 20 ms. Each bulk run takes
// a few seconds; single jobs are dispatched one after the other on a
// separate server for as long as the bulk run has jobs in flight, and bulk
// runs repeat until b.N dispatches are measured.
//
//	go test -run '^$' -bench DispatchDuringBulk -benchtime 200x -timeout 20m ./internal/jobs
func BenchmarkDispatchDuringBulk(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > 0 {
		n = v
	}
	raiseFileLimit(b, uint64(4*n+4096))
	table := fleetsim.DebianTable(fleetsim.DebianOptions{RefreshOptions: fleetsim.RefreshOptions{Upgradable: 40, Security: 12},
		KeepPending: true, UpgradeTime: time.Second})
	var probeIdx atomic.Int64
	probeIdx.Store(-1)
	arrived := make(chan time.Time, 1)
	f, err := fleetsim.Start(fleetsim.Config{N: n + 1, Packages: 400, Responders: table, OnExec: func(inst *fleetsim.Instance, cmd string) {
		if int64(inst.Index) == probeIdx.Load() && strings.HasPrefix(cmd, "date +%s") { // the job's first section
			select {
			case arrived <- time.Now():
			default:
			}
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := plane.Start(b, plane.Options{DatabaseURL: benchDB(b)})
	var ids []string
	var probe domain.Server
	for i, inst := range f.Instances {
		srv := simServer(b, p, inst)
		if i == n {
			probe = srv
			probeIdx.Store(int64(i))
		} else {
			ids = append(ids, srv.ID)
		}
	}
	ctx := context.Background()
	warm, err := p.Fleet.Bulk(ctx, p.Admin, fleet.BulkRequest{Action: "refresh", All: true})
	if err != nil {
		b.Fatal(err)
	}
	waitBulk(b, p, warm)
	dispatch := func() time.Duration {
		for len(arrived) > 0 {
			<-arrived
		}
		start := time.Now()
		j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, probe.ID)
		if err != nil {
			b.Fatal(err)
		}
		submitted := time.Since(start)
		at := <-arrived
		done := p.WaitJob(b, j.ID, 60*time.Second)
		if os.Getenv("LCM_BENCH_VERBOSE") != "" && done.StartedAt != nil {
			b.Logf("dispatch %v: submitted %v, claimed %v, first command %v", at.Sub(start).Round(time.Millisecond),
				submitted.Round(time.Millisecond), done.StartedAt.Sub(start).Round(time.Millisecond), at.Sub(start).Round(time.Millisecond))
		}
		return at.Sub(start)
	}
	dispatch() // opens the pooled connection
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for len(lat) < b.N {
		run, err := p.Fleet.Bulk(ctx, p.Admin, fleet.BulkRequest{Action: "upgrade-security", ServerIDs: ids})
		if err != nil {
			b.Fatal(err)
		}
		for len(lat) < b.N {
			cur, err := p.Fleet.GetBulk(ctx, p.Admin, run.ID)
			if err != nil {
				b.Fatal(err)
			}
			if pr := cur.Progress(); pr.Done || pr.Counts[domain.JobPending]+pr.Counts[domain.JobStarted]+pr.Counts[domain.JobRunning] < n/10 {
				break // the bulk run is ending: measure during the next one
			}
			lat = append(lat, dispatch())
		}
		waitBulk(b, p, run)
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.Logf("%d dispatches during bulk runs of %d servers: p50 %v, p99 %v, max %v", len(lat), n,
		percentile(lat, 0.5), percentile(lat, 0.99), slices.Max(lat))
}

// seedHistory stores n finished jobs, each with three output chunks, on
// one placeholder server.
func seedHistory(b *testing.B, p *plane.Plane, n int) {
	ctx := context.Background()
	srv := p.AddServer(b, "history", "192.0.2.1:22", "ssh-ed25519 AAAA", "")
	start := time.Now()
	var chunks []store.ChunkIn
	for i := range n {
		at := time.Now().Add(-time.Duration(n-i) * time.Minute)
		j := domain.Job{ID: uuid.NewString(), Kind: domain.JobRefresh, ServerID: srv.ID, Segment: domain.DefaultSegment,
			Status: domain.JobSuccess, CreatedAt: at}
		if err := p.Store.CreateJob(ctx, j); err != nil {
			b.Fatal(err)
		}
		for k := range 3 {
			chunks = append(chunks, store.ChunkIn{JobID: j.ID, OutputChunk: domain.OutputChunk{Seq: int64(k), Offset: int64(40 * k),
				Data: []byte("lcm: 400 packages installed (apt), 40 up\n")}})
		}
		if len(chunks) >= 3000 || i == n-1 {
			if err := p.Store.AppendOutput(ctx, chunks); err != nil {
				b.Fatal(err)
			}
			chunks = chunks[:0]
		}
	}
	b.Logf("seeded %d finished jobs with %d output chunks in %.1f s", n, 3*n, time.Since(start).Seconds())
}
