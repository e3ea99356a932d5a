package store

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestApplyScanRescan: a rescan that finds the same findings keeps their
// state and acknowledgement and moves only last_seen_at; a changed field
// (installed version) is written; a finding no longer found becomes fixed
// and comes back as new; server_findings follows the open set.
func TestApplyScanRescan(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			srv, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: "web-01", Host: "10.0.0.1", Port: 22, HostKey: "k"}})
			if err != nil {
				t.Fatal(err)
			}
			a := VulnFinding{Advisory: "DSA-5724-1", CVEs: []string{"CVE-2024-6387"}, Package: "openssh-server", Source: "openssh",
				Installed: "1:9.2p1-2+deb12u2", Fixed: "1:9.2p1-2+deb12u3", Severity: "high", CVSS: 8.1, Ecosystem: "Debian:12"}
			b := VulnFinding{Advisory: "DEBIAN-CVE-2010-4756", CVEs: []string{"CVE-2010-4756"}, Package: "libc6", Source: "glibc",
				Installed: "2.36-9+deb12u14", Severity: "low", Ecosystem: "Debian:12"}
			t0 := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
			scan := func(at time.Time, fs ...VulnFinding) map[string]VulnFinding {
				t.Helper()
				if err := s.ApplyScan(ctx, ScanOutcome{ServerID: srv.ID, Engine: "osv", Findings: fs}, at); err != nil {
					t.Fatal(err)
				}
				list, _, err := s.VulnFindings(ctx, SystemScope, VulnFilter{ServerID: srv.ID})
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]VulnFinding{}
				for _, f := range list {
					out[f.Advisory] = f
				}
				return out
			}
			got := scan(t0, a, b)
			if len(got) != 2 || got[a.Advisory].State != VulnNew {
				t.Fatalf("first scan: %+v", got)
			}
			if _, err := s.AcknowledgeVuln(ctx, SystemScope, got[a.Advisory].ID, "alice", t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			// Unchanged rescan: state, acknowledgement and first_seen stay.
			t1 := t0.Add(24 * time.Hour)
			got = scan(t1, a, b)
			if f := got[a.Advisory]; f.State != VulnAcknowledged || f.AcknowledgedBy != "alice" || !f.FirstSeenAt.Equal(t0) || !f.LastSeenAt.Equal(t1) {
				t.Fatalf("unchanged rescan: %+v", f)
			}
			if f := got[b.Advisory]; !f.LastSeenAt.Equal(t1) || f.CVSS != 0 || f.Severity != "low" {
				t.Fatalf("unchanged rescan: %+v", f)
			}
			// A changed installed version and severity are written.
			b2 := b
			b2.Installed, b2.Severity = "2.36-9+deb12u15", "medium"
			got = scan(t1.Add(time.Hour), a, b2)
			if f := got[b.Advisory]; f.Installed != "2.36-9+deb12u15" || f.Severity != "medium" || f.State != VulnNew || !f.FirstSeenAt.Equal(t0) {
				t.Fatalf("changed: %+v", f)
			}
			if f := got[a.Advisory]; f.State != VulnAcknowledged {
				t.Fatalf("untouched neighbour: %+v", f)
			}
			open, err := s.ServerFindings(ctx, srv.ID)
			if err != nil || len(open) != 2 {
				t.Fatalf("server_findings %+v %v", open, err)
			}
			// a is gone: fixed; server_findings holds b only. Then a is back: new.
			t2 := t1.Add(48 * time.Hour)
			got = scan(t2, b2)
			if f := got[a.Advisory]; f.State != VulnFixed || f.FixedAt == nil || !f.FixedAt.Equal(t2) {
				t.Fatalf("gone: %+v", f)
			}
			if open, _ := s.ServerFindings(ctx, srv.ID); len(open) != 1 || open[0].Package != "libc6" || open[0].Severity != "medium" {
				t.Fatalf("server_findings after fix: %+v", open)
			}
			t3 := t2.Add(time.Hour)
			got = scan(t3, a, b2)
			if f := got[a.Advisory]; f.State != VulnNew || f.FixedAt != nil || f.AcknowledgedBy != "" || !f.FirstSeenAt.Equal(t3) {
				t.Fatalf("back: %+v", f)
			}
			if open, _ := s.ServerFindings(ctx, srv.ID); len(open) != 2 {
				t.Fatalf("server_findings after return: %+v", open)
			}
		})
	}
}

// BenchmarkApplyScanRescan is the store side of a full fleet rescan: 1,000
// servers with LCM_BENCH_FINDINGS findings each (default 3,100, what the
// 1,500-package Debian set of BenchmarkFleetScan1000x1500 yields against
// a full export) are stored once, then every server is rescanned with the
// same findings (s/rescan-same: the digest fast path), then with two
// findings changed on every server (s/rescan-changed: the full path).
//
//	go test ./internal/store -run '^$' -bench ApplyScanRescan -benchtime 1x
func BenchmarkApplyScanRescan(b *testing.B) {
	servers, per := 1000, 3100
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_SERVERS")); err == nil && v > 0 {
		servers = v
	}
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_FINDINGS")); err == nil && v > 0 {
		per = v
	}
	for _, db := range testutil.Databases(b) {
		b.Run(db.Name, func(b *testing.B) {
			ctx := context.Background()
			s, _ := openTest(b, db)
			findings := make([]VulnFinding, per)
			for i := range findings {
				findings[i] = VulnFinding{Advisory: fmt.Sprintf("DEBIAN-CVE-2024-%05d", i), CVEs: []string{fmt.Sprintf("CVE-2024-%05d", i)},
					Package: fmt.Sprintf("pkg%04d", i%1500), Source: fmt.Sprintf("src%04d", i%900), Installed: "1.2.3-4+deb12u1",
					Fixed: "1.2.3-4+deb12u2", Severity: []string{"low", "medium", "high", "critical", "unknown"}[i%5],
					CVSS: float64(i%100) / 10, Summary: "a summary line of typical length for an advisory", Ecosystem: "Debian:12"}
			}
			ids := make([]string, servers)
			for i := range ids {
				srv, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: fmt.Sprintf("srv-%04d", i), Host: fmt.Sprintf("10.1.%d.%d", i/250, i%250), Port: 22, HostKey: "k"}})
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = srv.ID
			}
			at := time.Date(2026, 11, 1, 2, 30, 0, 0, time.UTC)
			start := time.Now()
			for _, id := range ids {
				if err := s.ApplyScan(ctx, ScanOutcome{ServerID: id, Engine: "osv", Findings: findings}, at); err != nil {
					b.Fatal(err)
				}
			}
			b.Logf("first scan of %d servers × %d findings: %s", servers, per, time.Since(start).Round(time.Millisecond))
			// The next day's scan after a database update: every server has
			// one new finding and one whose installed version changed, so
			// every server takes the full path (read, compare, upsert).
			changed := append([]VulnFinding(nil), findings...)
			changed[7].Installed = "1.2.3-4+deb12u2"
			changed = append(changed, VulnFinding{Advisory: "DEBIAN-CVE-2026-99999", CVEs: []string{"CVE-2026-99999"}, Package: "pkg0001",
				Installed: "1.2.3-4+deb12u1", Severity: "high", Ecosystem: "Debian:12"})
			for b.Loop() {
				at = at.Add(24 * time.Hour)
				start := time.Now()
				for _, id := range ids {
					if err := s.ApplyScan(ctx, ScanOutcome{ServerID: id, Engine: "osv", Findings: findings}, at); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/rescan-same")
				at = at.Add(24 * time.Hour)
				start = time.Now()
				for _, id := range ids {
					if err := s.ApplyScan(ctx, ScanOutcome{ServerID: id, Engine: "osv", Findings: changed}, at); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/rescan-changed")
			}
			b.ReportMetric(float64(servers*per), "findings")
		})
	}
}
