package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/vulndb"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

// TestScanFile: the CLI matches an SBOM file against an export directory
// built from the real fixture records; -min-severity filters.
func TestScanFile(t *testing.T) {
	db := vulndbtest.Build(t)
	bom := sbom.Build(sbom.Server{ID: "x", Name: "web", OSID: "debian", OSVersion: "12", Packages: []sbom.Package{
		{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Arch: "amd64", Source: "openssh", Manager: "apt"}}}, time.Now())
	b, _ := sbom.Marshal(bom)
	p := filepath.Join(t.TempDir(), "sbom.json")
	os.WriteFile(p, b, 0o644)
	for sev, want := range map[string]int{"unknown": 2, "high": 1, "critical": 0} {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"scan", "-sbom", p, "-db", db, "-min-severity", sev}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var fs []vulndb.Finding
		if err := json.Unmarshal(out.Bytes(), &fs); err != nil || len(fs) != want {
			t.Fatalf("%s: %d findings (%v), want %d: %s", sev, len(fs), err, want, out.String())
		}
	}
	for _, args := range [][]string{nil, {"scan"}, {"serve"}, {"scan", "-sbom", p, "-db", db, "-min-severity", "bad"},
		{"scan", "-sbom", filepath.Join(vulndbtest.FixtureDir(), "Debian", "DSA-5724-1.json"), "-db", db}} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%v) succeeded", args)
		}
	}
}
