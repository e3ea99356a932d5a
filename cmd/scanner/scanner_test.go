package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestScanFixtures scans a recorded-format CycloneDX SBOM against shipped
// OSV advisory fixtures: the boundaries of OSV ranges decide (a version
// equal to "fixed" is not affected; "introduced" is inclusive).
func TestScanFixtures(t *testing.T) {
	tests := []struct {
		minSev string
		want   []string // id/package
	}{
		{"low", []string{"CVE-2025-9230/openssl", "LCM-TEST-0001/tzdata"}},
		{"high", []string{"CVE-2025-9230/openssl"}},
		{"critical", nil},
	}
	for _, tt := range tests {
		t.Run(tt.minSev, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), []string{"scan", "-sbom", "testdata/sbom.json", "-advisories", "testdata/advisories", "-min-severity", tt.minSev}, &out, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var got []finding
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, f := range got {
				ids = append(ids, f.ID+"/"+f.Package)
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("findings %v, want %v", ids, tt.want)
			}
		})
	}
}

func TestScanRejectsBadInput(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"scan"},
		{"scan", "-sbom", "testdata/sbom.json", "-advisories", "testdata/advisories", "-min-severity", "bad"},
		{"scan", "-sbom", "testdata/advisories/DSA-perl.json", "-advisories", "testdata/advisories"},
	} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%v) succeeded", args)
		}
	}
}

func FuzzParsePURL(f *testing.F) {
	f.Add("pkg:deb/debian/openssl@3.0.15-1~deb12u1?arch=amd64")
	f.Add("pkg:rpm/redhat/bash@5.1.8-9.el9")
	f.Fuzz(func(t *testing.T, s string) {
		if c, ok := parsePURL(s); ok && (c.Name == "" || c.Version == "") {
			t.Fatalf("accepted %q with empty name or version", s)
		}
	})
}
