package scanner_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/scanner"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

func openBus(t testing.TB) *bus.Bus {
	t.Helper()
	dir, err := os.MkdirTemp("", "lcm-scanner-bus-")
	if err != nil {
		t.Fatal(err)
	}
	b, err := bus.Open(context.Background(), bus.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); os.RemoveAll(dir) })
	// lcm-api creates the object store of uploaded exports at start.
	if _, err := scanner.VulnDBStore(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return b
}

func serve(t *testing.T, b *bus.Bus, dir string, inline ...int64) *scanner.Scanner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := scanner.New(dir, "test", nil)
	if len(inline) > 0 {
		s.InlineLimit = inline[0]
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx, b, 2) }()
	t.Cleanup(func() { cancel(); <-done })
	// Serve subscribes asynchronously: wait for the status subject.
	c := &scanner.Client{Bus: b}
	for i := 0; i < 100; i++ {
		if _, ok := c.Status(ctx); ok {
			return s
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("scanner did not come up")
	return nil
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var oldBookworm = sbom.Server{ID: "s1", Name: "web-01", OSID: "debian", OSVersion: "12", Packages: []sbom.Package{
	{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Arch: "amd64", Source: "openssh", Manager: "apt"},
	{Name: "libc6", Version: "2.36-9+deb12u14", Arch: "amd64", Source: "glibc", Manager: "apt"},
}}

// TestScanOverBus: an SBOM goes over the bus (gzipped CycloneDX) to a
// scanner in the queue group, which answers with the real advisories.
func TestScanOverBus(t *testing.T) {
	b := openBus(t)
	serve(t, b, vulndbtest.Build(t))
	c := &scanner.Client{Bus: b}
	fs, engine, err := c.Scan(context.Background(), "k", sbom.Build(oldBookworm, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.Advisory+"/"+f.Package+"/"+f.Severity)
	}
	want := "DSA-5724-1/openssh-server/high DEBIAN-CVE-2010-4756/libc6/unknown DEBIAN-CVE-2023-51767/openssh-server/unknown"
	if engine != scanner.Engine || strings.Join(got, " ") != want {
		t.Fatalf("engine %q findings %v, want %s", engine, got, want)
	}
}

// TestDisabledUntilUpload: without a database the scanner answers
// "disabled" with the reason; an upload through the object store enables
// it without a restart.
func TestDisabledUntilUpload(t *testing.T) {
	b := openBus(t)
	serve(t, b, t.TempDir())
	c := &scanner.Client{Bus: b}
	ctx := context.Background()
	st, _ := c.Status(ctx)
	if st.Enabled || !strings.Contains(st.Reason, "no vulnerability database") {
		t.Fatalf("status %+v", st)
	}
	_, _, err := c.Scan(ctx, "k", sbom.Build(oldBookworm, time.Now()))
	var dis *scanner.ErrDisabled
	if !errors.As(err, &dis) {
		t.Fatalf("scan without DB: %v", err)
	}
	zipPath := filepath.Join(vulndbtest.Build(t), "Debian", "all.zip")
	f, err := os.Open(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	n, err := c.Upload(ctx, "Debian", f, fi.Size())
	if err != nil || n != 5 {
		t.Fatalf("upload: %d records, %v", n, err)
	}
	for i := 0; i < 200; i++ {
		if st, _ = c.Status(ctx); st.Enabled {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !st.Enabled || st.Records != 5 || len(st.Ecosystems) != 1 || st.Ecosystems[0].Name != "Debian" {
		t.Fatalf("after upload: %+v", st)
	}
	if _, err := c.Upload(ctx, "Debian", strings.NewReader("junk"), 4); err == nil {
		t.Fatal("junk upload accepted")
	}
}

// TestLargeResultThroughObjectStore: a result above the inline limit is
// handed over through the object store and deleted after reading.
func TestLargeResultThroughObjectStore(t *testing.T) {
	b := openBus(t)
	serve(t, b, vulndbtest.Build(t), 64)
	c := &scanner.Client{Bus: b}
	ctx := context.Background()
	fs, _, err := c.Scan(ctx, "k", sbom.Build(oldBookworm, time.Now()))
	if err != nil || len(fs) != 3 {
		t.Fatalf("findings %d, %v", len(fs), err)
	}
	obs, err := scanner.VulnDBStore(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if list, _ := obs.List(ctx); len(list) != 0 {
		t.Fatalf("result objects left behind: %d", len(list))
	}
}

// TestAggregate: several scanners report as the weakest — disabled when
// any is (the reason names it), else the oldest database — with the cache
// counters summed.
func TestAggregate(t *testing.T) {
	old, fresh := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	a := bus.ScannerStatus{Scanner: "a/1", Engine: "osv", Enabled: true, Records: 10, Newest: &fresh, Cache: &bus.CacheCounters{Hits: 3, Misses: 1}}
	b := bus.ScannerStatus{Scanner: "b/2", Engine: "osv", Enabled: true, Records: 8, Newest: &old, Cache: &bus.CacheCounters{Hits: 2, Misses: 2}}
	c := bus.ScannerStatus{Scanner: "c/3", Reason: "no OSV export found"}
	tests := []struct {
		name    string
		in      []bus.ScannerStatus
		ok      bool
		enabled bool
		records int
		reason  string
	}{
		{"none", nil, false, false, 0, ""},
		{"one", []bus.ScannerStatus{a}, true, true, 10, ""},
		{"oldest database wins", []bus.ScannerStatus{a, b}, true, true, 8, ""},
		{"a disabled one wins", []bus.ScannerStatus{a, c, b}, true, false, 0, "no OSV export found (scanner c/3, 1 of 3)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, ok := scanner.Aggregate(append([]bus.ScannerStatus(nil), tc.in...))
			if ok != tc.ok || st.Enabled != tc.enabled || st.Records != tc.records || st.Reason != tc.reason {
				t.Fatalf("%+v %v", st, ok)
			}
			if len(tc.in) > 1 && (!strings.Contains(st.Scanner, "a/1") || st.Cache == nil || st.Cache.Hits != 5) {
				t.Fatalf("names or cache: %+v", st)
			}
		})
	}
}
