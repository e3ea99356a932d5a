package scanner_test

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/vulndb"
)

// synthDB writes a synthetic OSV export of n records per ecosystem over
// nPkgs source packages (labelled SYNTH-…: generated for the budget, not
// advisories). Records look like Debian's: one affected package per
// release with an ECOSYSTEM range, most of them fixed.
func synthDB(b *testing.B, dir string, eco, release string, n, nPkgs int) {
	b.Helper()
	os.MkdirAll(filepath.Join(dir, eco), 0o755)
	f, err := os.Create(filepath.Join(dir, eco, "all.zip"))
	if err != nil {
		b.Fatal(err)
	}
	zw := zip.NewWriter(f)
	r := rand.New(rand.NewSource(int64(n)))
	for i := 0; i < n; i++ {
		pkg := fmt.Sprintf("src%04d", r.Intn(nPkgs))
		// 95 % are fixed below what the fleet runs (as on a maintained
		// server), 4 % fixed above it, 1 % without a fix.
		events := []map[string]string{{"introduced": "0"}}
		switch k := r.Intn(100); {
		case k < 95:
			events = append(events, map[string]string{"fixed": fmt.Sprintf("0.%d-%d", r.Intn(9), r.Intn(9))})
		case k < 99:
			events = append(events, map[string]string{"fixed": fmt.Sprintf("2.%d-%d", r.Intn(9), r.Intn(9))})
		}
		rec := map[string]any{"id": fmt.Sprintf("SYNTH-%s-%d", eco, i), "modified": "2026-11-24T00:00:00Z",
			"upstream": []string{fmt.Sprintf("CVE-2026-%05d", i)},
			"severity": []map[string]string{{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:H/I:H/A:H"}},
			"affected": []map[string]any{{"package": map[string]string{"ecosystem": eco + ":" + release, "name": pkg},
				"ranges": []map[string]any{{"type": "ECOSYSTEM", "events": events}}}}}
		w, _ := zw.Create(fmt.Sprintf("SYNTH-%d.json", i))
		json.NewEncoder(w).Encode(rec)
	}
	zw.Close()
	f.Close()
}

// fleet returns n servers of 1,500 packages in `distinct` package sets
// (servers built from one image share their set).
func fleet(n, distinct int) []sbom.Server {
	out := make([]sbom.Server, n)
	sets := map[int][]sbom.Package{} // servers of one set share its packages (10,000 × 1,501 would not fit)
	for i := range out {
		v := i % distinct
		if pk, ok := sets[v]; ok {
			out[i] = sbom.Server{ID: fmt.Sprint(i), Name: fmt.Sprintf("srv-%04d", i), OSID: "debian", OSVersion: "12", Packages: pk}
			continue
		}
		pk := make([]sbom.Package, 1500)
		for j := range pk {
			pk[j] = sbom.Package{Name: fmt.Sprintf("bin%04d", j), Version: fmt.Sprintf("1.%d-%d", (j+v)%3, (j*7+v)%9), Arch: "amd64",
				Source: fmt.Sprintf("src%04d", j), Manager: "apt"}
		}
		// Each set differs from the others in one package version and one
		// extra package, as servers built from one image drift apart.
		pk[v%len(pk)].Version = fmt.Sprintf("1.5-%d", v)
		pk = append(pk, sbom.Package{Name: fmt.Sprintf("extra%04d", v), Version: "1.0-1", Arch: "amd64", Source: fmt.Sprintf("src%04d", v%1500), Manager: "apt"})
		sets[v] = pk
		out[i] = sbom.Server{ID: fmt.Sprint(i), Name: fmt.Sprintf("srv-%04d", i), OSID: "debian", OSVersion: "12", Packages: pk}
	}
	return out
}

// BenchmarkFleetScan1000x1500 is issue 16's budget: a full scan of 1,000
// servers × 1,500 packages on one scanner process ≤ 30 s, over the bus,
// against a 60,000-record database. The control plane's grouping is
// reproduced (package-set key, one SBOM per distinct set) so identical
// package sets are matched once. Sub-benchmarks: 20 distinct sets (a
// fleet from a few images) and every server distinct (worst case).
func BenchmarkFleetScan1000x1500(b *testing.B) {
	dir := b.TempDir()
	synthDB(b, dir, "Debian", "12", 60000, 1500)
	bs := openBus(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc := scanner.New(dir, "bench", quiet)
	go sc.Serve(ctx, bs, 2)
	cl := &scanner.Client{Bus: bs}
	for i := 0; i < 100; i++ {
		if st, ok := cl.Status(ctx); ok && st.Enabled {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The 10,000-server case is the second budget (≤ 2 min,
	// identical package sets matched once): a fleet of 10,000 built from
	// 1,000 distinct package sets.
	for _, c := range []struct{ servers, distinct int }{{1000, 20}, {1000, 1000}, {10000, 1000}} {
		servers := fleet(c.servers, c.distinct)
		b.Run(fmt.Sprintf("servers=%d/distinct=%d", c.servers, c.distinct), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				groups := map[string]sbom.Server{}
				for _, s := range servers {
					k := sbom.PackageSetKey(s)
					if _, ok := groups[k]; !ok {
						groups[k] = s
					}
				}
				// As vulnsvc does: 4 sets in flight at once.
				var findings atomic.Int64
				var wg sync.WaitGroup
				sem := make(chan struct{}, 4)
				for k, s := range groups {
					sem <- struct{}{}
					wg.Add(1)
					go func() {
						defer func() { <-sem; wg.Done() }()
						fs, _, err := cl.Scan(ctx, k, sbom.Build(s, time.Now()))
						if err != nil {
							b.Error(err)
							return
						}
						findings.Add(int64(len(fs)))
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(len(groups)), "sets")
				b.ReportMetric(float64(findings.Load()), "findings")
			}
		})
	}
}

// BenchmarkLoadDebianUbuntuAlpine loads synthetic exports the size of the
// real ones (Debian ~60k, Ubuntu ~60k, Alpine ~15k records) and reports
// the heap the loaded database holds (budget: scanner ≤ 1 GiB).
func BenchmarkLoadDebianUbuntuAlpine(b *testing.B) {
	dir := b.TempDir()
	synthDB(b, dir, "Debian", "12", 60000, 3000)
	synthDB(b, dir, "Ubuntu", "22.04:LTS", 60000, 3000)
	synthDB(b, dir, "Alpine", "v3.20", 15000, 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		db, err := vulndb.Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heapMiB")
		runtime.KeepAlive(db)
	}
}

// BenchmarkScanOneSet is one request of the fleet benchmark: a 1,501
// package SBOM, warm component cache.
func BenchmarkScanOneSet(b *testing.B) {
	dir := b.TempDir()
	synthDB(b, dir, "Debian", "12", 60000, 1500)
	bs := openBus(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sc := scanner.New(dir, "bench", quiet)
	go sc.Serve(ctx, bs, 2)
	cl := &scanner.Client{Bus: bs}
	for i := 0; i < 100; i++ {
		if st, ok := cl.Status(ctx); ok && st.Enabled {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	servers := fleet(50, 50)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := servers[i%len(servers)]
		if _, _, err := cl.Scan(ctx, "k", sbom.Build(s, time.Now())); err != nil {
			b.Fatal(err)
		}
	}
}
