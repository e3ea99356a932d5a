package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/testutil"
)

// BenchmarkFirstStart measures a first start (creating config, key, DB and
// certificate) to a healthy /health. Budget: ≤ 1.5 s with SQLite.
//
//	go test ./cmd/api -run '^$' -bench 'Start' -benchtime 5x
func BenchmarkFirstStart(b *testing.B) {
	for b.Loop() {
		start := time.Now()
		a := testutil.StartAPI(b, testutil.APIOptions{Dev: true})
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/start")
		a.Stop()
	}
}

// BenchmarkRestart measures a restart of an existing installation to a
// healthy /health. Budget: ≤ 0.5 s.
func BenchmarkRestart(b *testing.B) {
	dir := b.TempDir()
	a := testutil.StartAPI(b, testutil.APIOptions{Dir: dir, Dev: true})
	a.Stop()
	for b.Loop() {
		start := time.Now()
		a := testutil.StartAPI(b, testutil.APIOptions{Dir: dir, Dev: true})
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/start")
		a.Stop()
	}
}

// TestIdleRSS reports the idle RSS of the all-in-one process (budget ≤ 80
// MiB) and the size of the binary under test (budget ≤ 60 MB stripped). It
// logs figures; the budget lives in docs/benchmarks.md, not in an assert.
func TestIdleRSS(t *testing.T) {
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true})
	time.Sleep(2 * time.Second) // let start-up garbage be collected
	pid := a.PID()
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
			t.Log(strings.Join(strings.Fields(l), " "))
		}
	}
	if st, err := os.Stat(testutil.APIBinary(t)); err == nil {
		t.Logf("binary %s: %.1f MB", testutil.APIBinary(t), float64(st.Size())/1e6)
	}
}
