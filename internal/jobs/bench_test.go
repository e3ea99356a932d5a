package jobs_test

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/plane"
)

// benchDB is SQLite, or a fresh PostgreSQL database with LCM_BENCH_DB=postgres.
func benchDB(b *testing.B) string {
	if os.Getenv("LCM_BENCH_DB") == "postgres" {
		return testutil.PostgresURL(b)
	}
	return ""
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

// BenchmarkDispatchLatency: POST upgrade-security (the service call the
// handler makes) → first command byte on a simulated server over a pooled
// connection. Budget p50 ≤ 5 ms, p99 ≤ 20 ms.
//
//	go test -run '^$' -bench DispatchLatency -benchtime 200x ./internal/jobs
func BenchmarkDispatchLatency(b *testing.B) {
	var (
		mu      sync.Mutex
		arrived = make(chan time.Time, 1)
	)
	table := fleetsim.DefaultTable()
	// The security upgrade itself (not the list refresh before it, not the
	// listings after it).
	table.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "install --only-upgrade") }, func(ctx context.Context, r *fleetsim.Request) int {
		_, _ = io.WriteString(r.Stdout, "ok\n")
		return 0
	})
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: table, OnExec: func(_ *fleetsim.Instance, cmd string) {
		if strings.Contains(cmd, "apt-get") {
			mu.Lock()
			defer mu.Unlock()
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
	p := plane.Start(b, plane.Options{})
	srv := simServer(b, p, f.Instances[0])
	ctx := context.Background()
	var sub []time.Duration
	run := func() time.Duration {
		start := time.Now()
		j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
		if err != nil {
			b.Fatal(err)
		}
		sub = append(sub, time.Since(start))
		at := <-arrived
		p.WaitJob(b, j.ID, 10*time.Second)
		return at.Sub(start)
	}
	run() // opens the pooled connection
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lat = append(lat, run())
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(percentile(sub, 0.5).Microseconds())/1000, "submit-p50-ms")
	b.ReportMetric(float64(percentile(sub, 0.99).Microseconds())/1000, "submit-p99-ms")
}

// BenchmarkUpgradeSecurity1000: upgrade-security on 1,000 simulated
// servers whose command takes 1 s, one worker; wall time from the first
// submit to the last final state. Budget ≤ 10 s.
//
//	go test -run '^$' -bench UpgradeSecurity1000 -benchtime 1x -timeout 10m ./internal/jobs
func BenchmarkUpgradeSecurity1000(b *testing.B) {
	const n = 1000
	f := startSim(b, n, time.Second, "Setting up openssl (3.0.17-1~deb12u2) ...\n")
	p := plane.Start(b, plane.Options{Concurrency: n})
	ctx := context.Background()
	servers := make([]domain.Server, n)
	for i, inst := range f.Instances {
		servers[i] = simServer(b, p, inst)
	}
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		start := time.Now()
		ids := make([]string, n)
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1) - 1; i < n; i = next.Add(1) - 1 {
					j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, servers[i].ID)
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
			if j := p.WaitJob(b, id, 5*time.Minute); j.Status != domain.JobSuccess {
				failed++
			}
		}
		wall := time.Since(start)
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(submitted.Seconds(), "submit-s")
		b.ReportMetric(float64(failed), "failed")
	}
}

// BenchmarkOutput50MiB: one job prints 50 MiB; measured from submit until
// all of it was read back through ssh-output (ingested, encrypted, stored,
// decrypted). Budget ≥ 50 MiB/s.
//
//	go test -run '^$' -bench Output50MiB -benchtime 3x ./internal/jobs
func BenchmarkOutput50MiB(b *testing.B) {
	const size = 50 << 20
	block := strings.Repeat("Unpacking libsim (1.0) over (0.9) ...\n", 1<<10)
	table := fleetsim.DefaultTable()
	// The security upgrade itself (not the list refresh before it, not the
	// listings after it).
	table.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "install --only-upgrade") }, func(ctx context.Context, r *fleetsim.Request) int {
		for written := 0; written < size; written += len(block) {
			_, _ = io.WriteString(r.Stdout, block[:min(len(block), size-written)])
		}
		return 0
	})
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: table})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := plane.Start(b, plane.Options{DatabaseURL: benchDB(b)})
	srv := simServer(b, p, f.Instances[0])
	ctx := context.Background()
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
		if err != nil {
			b.Fatal(err)
		}
		var got int64
		var off int64
		for {
			o, err := p.Jobs.Output(ctx, p.Admin, j.ID, off)
			if err != nil {
				b.Fatal(err)
			}
			got += int64(len(o.Output))
			off = o.Offset
			if o.Complete {
				break
			}
			if len(o.Output) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		if got < size {
			b.Fatalf("read %d bytes, want ≥ %d", got, size)
		}
		b.StopTimer()
		// The read path alone: everything stored, read it again.
		rs := time.Now()
		for off, n := int64(0), 0; ; n++ {
			o, err := p.Jobs.Output(ctx, p.Admin, j.ID, off)
			if err != nil {
				b.Fatal(err)
			}
			off = o.Offset
			if o.Complete {
				break
			}
		}
		b.ReportMetric(float64(size)/(1<<20)/time.Since(rs).Seconds(), "read-MiB/s")
		b.StartTimer()
	}
}

// BenchmarkStreamFirstChunk: a live-stream client (Follow, which the SSE
// handler writes out unchanged) is attached to a running job; time from the
// command printing its first byte to the client receiving it. Budget ≤ 100 ms.
//
//	go test -run '^$' -bench StreamFirstChunk -benchtime 50x ./internal/jobs
func BenchmarkStreamFirstChunk(b *testing.B) {
	var gate = make(chan chan time.Time, 1)
	table := fleetsim.DefaultTable()
	// The security upgrade itself (not the list refresh before it, not the
	// listings after it).
	table.HandleFunc(func(cmd string) bool { return strings.Contains(cmd, "install --only-upgrade") }, func(ctx context.Context, r *fleetsim.Request) int {
		reply := <-gate
		reply <- time.Now()
		_, _ = io.WriteString(r.Stdout, "FIRST\n")
		return 0
	})
	f, err := fleetsim.Start(fleetsim.Config{N: 1, Responders: table})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := plane.Start(b, plane.Options{})
	srv := simServer(b, p, f.Instances[0])
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j, err := p.Fleet.UpgradeSecurity(ctx, p.Admin, srv.ID)
		if err != nil {
			b.Fatal(err)
		}
		fctx, cancel := context.WithCancel(ctx)
		ch, err := p.Jobs.Follow(fctx, p.Admin, j.ID)
		if err != nil {
			b.Fatal(err)
		}
		// Drain the replay of the (lcm:) banner line, then release the command.
		reply := make(chan time.Time, 1)
		gate <- reply
		var printed time.Time
		for ev := range ch {
			if ev.Output != nil && strings.Contains(string(ev.Output.Data), "FIRST") {
				printed = <-reply
				lat = append(lat, time.Since(printed))
				break
			}
		}
		cancel()
		for range ch {
		}
		p.WaitJob(b, j.ID, 10*time.Second)
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
}
