package scanner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/scanner"
)

// TestParseTrivy reads a report in Trivy's documented JSON format
// (testdata/trivy-sbom-report.json, written after the format of
// `trivy sbom --format json`, SchemaVersion 2; not recorded from a run on
// this machine, where Trivy cannot be installed): OS package results
// only, severity and NVD score, fixed version or none.
func TestParseTrivy(t *testing.T) {
	b, err := os.ReadFile("testdata/trivy-sbom-report.json")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := scanner.ParseTrivy(b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, strings.Join([]string{f.Advisory, f.Package, f.Severity, f.Fixed, f.Ecosystem}, "|"))
	}
	want := []string{
		"CVE-2023-51767|openssh-server|high||Debian:12",
		"CVE-2024-6387|openssh-server|high|1:9.2p1-2+deb12u3|Debian:12",
		"CVE-2010-4756|libc6|low||Debian:12",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if fs[1].CVSS != 8.1 || fs[1].CVEs[0] != "CVE-2024-6387" {
		t.Fatalf("%+v", fs[1])
	}
	for _, bad := range []string{"", "{", `{"SchemaVersion":1}`} {
		if _, err := scanner.ParseTrivy([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseTrivy(f *testing.F) {
	b, _ := os.ReadFile("testdata/trivy-sbom-report.json")
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := scanner.ParseTrivy(b)
		if err == nil {
			for _, x := range fs {
				if x.Advisory == "" || x.Package == "" {
					t.Fatalf("empty finding accepted: %+v", x)
				}
			}
		}
	})
}

// TestTrivyEngineOverBus: with the Trivy engine the scanner runs the
// binary on the SBOM and returns its findings; the binary here is a
// stand-in script that checks the arguments and prints the documented
// report (Trivy itself is not installable on this machine).
func TestTrivyEngineOverBus(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "trivy")
	report, _ := filepath.Abs("testdata/trivy-sbom-report.json")
	script := "#!/bin/sh\n" +
		"[ \"$1\" = sbom ] && [ \"$2\" = --offline-scan ] && [ \"$3\" = --skip-db-update ] || { echo bad args \"$@\" >&2; exit 2; }\n" +
		"for a; do last=$a; done\ngrep -q '\"bomFormat\": *\"CycloneDX\"' \"$last\" || { echo not an SBOM >&2; exit 3; }\n" +
		"cat " + report + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := openBus(t)
	ctx, cancel := context.WithCancel(context.Background())
	s := scanner.New(t.TempDir(), "trivy-test", quiet)
	cache := filepath.Join(dir, "cache")
	s.Trivy = &scanner.Trivy{Bin: bin, CacheDir: cache}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx, b, 1) }()
	t.Cleanup(func() { cancel(); <-done })
	c := &scanner.Client{Bus: b}
	var st bus.ScannerStatus
	for i := 0; i < 100; i++ {
		var ok bool
		if st, ok = c.Status(ctx); ok {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// No database in Trivy's cache: disabled, saying how to fill it; a scan
	// is refused the same way.
	if st.Enabled || st.Engine != scanner.EngineTrivy || !strings.Contains(st.Reason, "--download-db-only") {
		t.Fatalf("status without database %+v", st)
	}
	var disabled *scanner.ErrDisabled
	if _, _, err := c.Scan(ctx, "k", sbom.Build(oldBookworm, time.Now())); !errors.As(err, &disabled) {
		t.Fatalf("scan without database: %v", err)
	}
	// Trivy's db/metadata.json (the shape trivy-db writes): the status
	// carries the database's build time as its age.
	built := time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC)
	if err := os.MkdirAll(filepath.Join(cache, "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"Version":2,"NextUpdate":"2026-11-21T06:00:00Z","UpdatedAt":"2026-11-20T06:00:00Z","DownloadedAt":"2026-11-20T07:12:00Z"}`
	if err := os.WriteFile(filepath.Join(cache, "db", "metadata.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ = c.Status(ctx)
	if !st.Enabled || st.Engine != scanner.EngineTrivy || st.Newest == nil || !st.Newest.Equal(built) {
		t.Fatalf("status %+v", st)
	}
	fs, engine, err := c.Scan(ctx, "k", sbom.Build(oldBookworm, time.Now()))
	if err != nil || engine != scanner.EngineTrivy || len(fs) != 3 {
		t.Fatalf("%s %d findings, %v", engine, len(fs), err)
	}
}
