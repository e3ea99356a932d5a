package sshexec_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/fleetsim"
	"github.com/lcmproject/lcm/internal/remote"
	"github.com/lcmproject/lcm/internal/sshexec"
)

// BenchmarkDispatchLatency measures the time from Run's call to the exec
// request arriving at a simulated server over a warm pooled connection.
func BenchmarkDispatchLatency(b *testing.B) {
	arrived := make(chan time.Time, 1)
	f, err := fleetsim.Start(fleetsim.Config{N: 1, OnExec: func(*fleetsim.Instance, string) { arrived <- time.Now() }})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := sshexec.NewPool(sshexec.PoolConfig{})
	defer p.Close()
	ex := p.Executor("sim-0", simTarget(f.Instances[0]))
	if _, err := ex.Run(context.Background(), remote.Command{Cmd: "true"}); err != nil { // warm up: dial
		b.Fatal(err)
	}
	<-arrived
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := ex.Run(context.Background(), remote.Command{Cmd: "true"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-arrived).Sub(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkFanOut1000 runs `sleep 1` on 1,000 simulated servers at once
// from one pool (cold: dial + handshake + run; then warm: run on the pooled
// connections) and reports wall time and this process's memory per
// concurrent session. The simulator runs as a separate process
// (cmd/fleetsim) so the figures are the client's alone.
func BenchmarkFanOut1000(b *testing.B) {
	const n = 1000
	raiseNoFile(b, 4*n)
	insts := startFleetProcess(b, n)
	for i := 0; i < b.N; i++ {
		p := sshexec.NewPool(sshexec.PoolConfig{})
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		rssBefore := rssKiB()
		cold := fanOut(b, p, insts, "sleep 1", &before)
		warmStart := time.Now()
		fanOut(b, p, insts, "sleep 1", nil)
		warm := time.Since(warmStart)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(cold.wall.Seconds(), "cold-wall-s")
		b.ReportMetric(warm.Seconds(), "warm-wall-s")
		b.ReportMetric(float64(cold.peakHeap-before.HeapInuse)/n/1024, "heap-KiB/session")
		b.ReportMetric(float64(rssKiB()-rssBefore)/n, "rss-KiB/session")
		p.Close()
	}
}

type fanOutResult struct {
	wall     time.Duration
	peakHeap uint64
}

func fanOut(b *testing.B, p *sshexec.Pool, insts []sshexec.Target, cmd string, sample *runtime.MemStats) fanOutResult {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(insts))
	for i, tg := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := p.Executor("sim-"+strconv.Itoa(i), tg).Run(context.Background(), remote.Command{Cmd: cmd, Timeout: 30 * time.Second})
			if err == nil && res.ExitCode != 0 {
				err = &exec.ExitError{}
			}
			errs <- err
		}()
	}
	var peak uint64
	if sample != nil { // sample the heap while the sessions are open
		time.Sleep(700 * time.Millisecond)
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = m.HeapInuse
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			if failed == 1 {
				b.Log(err)
			}
		}
	}
	if failed > 0 {
		b.Fatalf("%d of %d runs failed", failed, len(insts))
	}
	return fanOutResult{wall: wall, peakHeap: peak}
}

func startFleetProcess(b *testing.B, n int) []sshexec.Target {
	bin := filepath.Join(b.TempDir(), "fleetsim")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lcmproject/lcm/cmd/fleetsim").CombinedOutput(); err != nil {
		b.Fatalf("build fleetsim: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-n", strconv.Itoa(n), "-latency", "0")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	var out []sshexec.Target
	for len(out) < n && sc.Scan() {
		var l struct{ Addr, HostKey string }
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			b.Fatal(err)
		}
		l.Addr, l.HostKey = raw["addr"].(string), raw["host_key"].(string)
		out = append(out, sshexec.Target{Addr: l.Addr, User: "lcm", Password: "x", HostKey: l.HostKey})
	}
	if len(out) < n {
		b.Fatalf("fleetsim listed %d hosts", len(out))
	}
	return out
}

func raiseNoFile(tb testing.TB, want uint64) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		tb.Fatal(err)
	}
	if r.Cur < want {
		r.Cur = min(want, r.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
			tb.Fatal(err)
		}
	}
}

func rssKiB() uint64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.ParseUint(f[1], 10, 64)
			return v
		}
	}
	return 0
}
