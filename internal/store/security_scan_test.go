package store

import (
	"context"
	"errors"
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

// BenchmarkApplyScanRescan is the store side of a full fleet rescan:
// LCM_BENCH_SERVERS servers (default 1,000) with LCM_BENCH_FINDINGS
// findings each (default 3,100, what the 1,500-package Debian set of
// BenchmarkFleetScan1000x1500 yields against a full export) are stored
// once, then every server is rescanned with the same findings
// (s/rescan-same: the digest fast path), then with two findings changed on
// every server (s/rescan-changed: the full path). Servers are stored with
// ApplyScans in batches of LCM_BENCH_BATCH (default 100, what vulnsvc
// hands over; 1 = one ApplyScan per server).
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
	batch := 100
	if v, err := strconv.Atoi(os.Getenv("LCM_BENCH_BATCH")); err == nil && v > 0 {
		batch = v
	}
	store := func(b *testing.B, s *Store, ids []string, fs []VulnFinding, at time.Time) {
		b.Helper()
		for lo := 0; lo < len(ids); lo += batch {
			outs := make([]ScanOutcome, 0, batch)
			for _, id := range ids[lo:min(lo+batch, len(ids))] {
				outs = append(outs, ScanOutcome{ServerID: id, Engine: "osv", Findings: fs})
			}
			for _, err := range s.ApplyScans(context.Background(), outs, at) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
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
			store(b, s, ids, findings, at)
			b.Logf("first scan of %d servers × %d findings (batches of %d): %s", servers, per, batch, time.Since(start).Round(time.Millisecond))
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
				store(b, s, ids, findings, at)
				b.ReportMetric(time.Since(start).Seconds(), "s/rescan-same")
				at = at.Add(24 * time.Hour)
				start = time.Now()
				store(b, s, ids, changed, at)
				b.ReportMetric(time.Since(start).Seconds(), "s/rescan-changed")
			}
			b.ReportMetric(float64(servers*per), "findings")
		})
	}
}

// TestApplyScans: a batch stores each server as ApplyScan would, alone
// or beside others; a server that is gone fails with not found and one
// whose findings cannot be stored fails alone, leaving its last scan as
// it was; server_findings follows the open set (duplicate tuples
// included) and is rewritten when another writer changed it; the
// servers whose server_findings changed are recorded as fleet changes.
func TestApplyScans(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			var ids []string
			for i := range 4 {
				srv, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: fmt.Sprintf("b-%d", i), Host: fmt.Sprintf("10.0.0.%d", i+1), Port: 22, HostKey: "k"}})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, srv.ID)
			}
			gone, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: "gone", Host: "10.0.1.1", Port: 22, HostKey: "k"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteServer(ctx, gone.ID); err != nil {
				t.Fatal(err)
			}
			// A finding with this advisory cannot be stored (a trigger
			// stands in for any database error).
			trigger := map[Dialect][]string{
				SQLite: {`CREATE TRIGGER vuln_bad BEFORE INSERT ON vuln_findings WHEN NEW.advisory = 'BAD' BEGIN SELECT RAISE(ABORT, 'bad finding'); END`},
				Postgres: {`CREATE FUNCTION vuln_bad() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.advisory = 'BAD' THEN RAISE EXCEPTION 'bad finding'; END IF; RETURN NEW; END $$`,
					`CREATE TRIGGER vuln_bad BEFORE INSERT ON vuln_findings FOR EACH ROW EXECUTE FUNCTION vuln_bad()`},
			}
			for _, q := range trigger[s.Dialect()] {
				if err := s.db.Exec(q).Error; err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() {
				s.db.Exec("DROP TRIGGER IF EXISTS vuln_bad ON vuln_findings")
				s.db.Exec("DROP FUNCTION IF EXISTS vuln_bad()")
			})
			// a and a2 are two advisories with the same server_findings tuple.
			a := VulnFinding{Advisory: "DSA-1", CVEs: []string{"CVE-2026-1"}, Package: "openssl", Installed: "3.0.1", Fixed: "3.0.2", Severity: "high"}
			a2 := VulnFinding{Advisory: "DEBIAN-CVE-2026-1", CVEs: []string{"CVE-2026-1"}, Package: "openssl", Installed: "3.0.1", Fixed: "3.0.2", Severity: "high"}
			c := VulnFinding{Advisory: "DSA-3", Package: "curl", Installed: "8.0", Severity: "medium"}
			bad := VulnFinding{Advisory: "BAD", Package: "x", Severity: "low"}
			t0 := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
			type want struct {
				states map[string]string // advisory → state
				open   int               // server_findings rows
			}
			check := func(step, id string, w want) {
				t.Helper()
				list, _, err := s.VulnFindings(ctx, SystemScope, VulnFilter{ServerID: id})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]string{}
				for _, f := range list {
					got[f.Advisory] = f.State
				}
				if fmt.Sprint(got) != fmt.Sprint(w.states) {
					t.Fatalf("%s: %s: states %v, want %v", step, id, got, w.states)
				}
				open, err := s.ServerFindings(ctx, id)
				if err != nil || len(open) != w.open {
					t.Fatalf("%s: %s: server_findings %+v (%v), want %d rows", step, id, open, err, w.open)
				}
			}
			shared := []VulnFinding{a, a2, c}
			steps := []struct {
				name string
				outs []ScanOutcome
				errs []string // "" ok, "not_found", "failed"
				want map[string]want
			}{
				{name: "first scan, one gone, one bad",
					outs: []ScanOutcome{{ServerID: ids[0], Findings: shared}, {ServerID: gone.ID, Findings: shared},
						{ServerID: ids[1], Findings: shared}, {ServerID: ids[2], Findings: []VulnFinding{a, bad}}, {ServerID: ids[3]}},
					errs: []string{"", "not_found", "", "failed", ""},
					want: map[string]want{
						ids[0]: {map[string]string{"DSA-1": VulnNew, "DEBIAN-CVE-2026-1": VulnNew, "DSA-3": VulnNew}, 3},
						ids[1]: {map[string]string{"DSA-1": VulnNew, "DEBIAN-CVE-2026-1": VulnNew, "DSA-3": VulnNew}, 3},
						ids[2]: {map[string]string{}, 0},
						ids[3]: {map[string]string{}, 0},
					}},
				{name: "rescan: same, one of the twin tuples gone, bad again, server listed twice",
					outs: []ScanOutcome{{ServerID: ids[0], Findings: shared}, {ServerID: ids[1], Findings: []VulnFinding{a, c}},
						{ServerID: ids[2], Findings: []VulnFinding{bad}}, {ServerID: ids[3], Findings: []VulnFinding{c}}, {ServerID: ids[3], Findings: []VulnFinding{a}}},
					errs: []string{"", "", "failed", "", ""},
					want: map[string]want{
						ids[0]: {map[string]string{"DSA-1": VulnNew, "DEBIAN-CVE-2026-1": VulnNew, "DSA-3": VulnNew}, 3},
						ids[1]: {map[string]string{"DSA-1": VulnNew, "DEBIAN-CVE-2026-1": VulnFixed, "DSA-3": VulnNew}, 2},
						ids[2]: {map[string]string{}, 0},
						ids[3]: {map[string]string{"DSA-1": VulnNew, "DSA-3": VulnFixed}, 1},
					}},
				{name: "rescan: the twin is back, the other goes; bad is gone",
					outs: []ScanOutcome{{ServerID: ids[1], Findings: []VulnFinding{a2, c}}, {ServerID: ids[2], Findings: []VulnFinding{c}}},
					errs: []string{"", ""},
					want: map[string]want{
						ids[1]: {map[string]string{"DSA-1": VulnFixed, "DEBIAN-CVE-2026-1": VulnNew, "DSA-3": VulnNew}, 2},
						ids[2]: {map[string]string{"DSA-3": VulnNew}, 1},
					}},
			}
			at := t0
			for _, st := range steps {
				at = at.Add(time.Hour)
				before := s.FleetVersion()
				errs := s.ApplyScans(ctx, st.outs, at)
				for i, err := range errs {
					var got string
					switch {
					case err == nil:
					case errors.Is(err, domain.ErrNotFound):
						got = "not_found"
					default:
						got = "failed"
					}
					if got != st.errs[i] {
						t.Fatalf("%s: outcome %d: %v, want %q", st.name, i, err, st.errs[i])
					}
				}
				for id, w := range st.want {
					check(st.name, id, w)
				}
				// Servers whose open set changed are fleet changes.
				_, changed, ok := s.FleetChangesSince(before)
				if !ok {
					t.Fatalf("%s: a scan counted as a change of every server", st.name)
				}
				for _, id := range changed {
					if id == gone.ID {
						t.Fatalf("%s: the deleted server changed", st.name)
					}
				}
			}
			// Another writer replaced server_findings: a changed rescan
			// makes it the open set again.
			if err := s.SetFindings(ctx, ids[0], []Finding{{CVE: "CVE-2000-1", Package: "p", Severity: "critical"}}); err != nil {
				t.Fatal(err)
			}
			if err := s.ApplyScan(ctx, ScanOutcome{ServerID: ids[0], Findings: []VulnFinding{a, c}}, at.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			check("after SetFindings", ids[0], want{map[string]string{"DSA-1": VulnNew, "DEBIAN-CVE-2026-1": VulnFixed, "DSA-3": VulnNew}, 2})
			open, _ := s.ServerFindings(ctx, ids[0])
			for _, f := range open {
				if f.CVE == "CVE-2000-1" {
					t.Fatalf("server_findings kept another writer's row: %+v", open)
				}
			}
			// The digest of what is stored is the one the last scan left.
			if sc, err := s.VulnScanOf(ctx, ids[3]); err != nil || sc == nil || sc.Findings != 1 {
				t.Fatalf("scan of the server listed twice: %+v %v", sc, err)
			}
		})
	}
}

// BenchmarkPrepareScan is the CPU a scan costs before the database: its
// findings deduplicated, truncated, hashed and digested (once per
// findings list: servers with the same package set share it).
func BenchmarkPrepareScan(b *testing.B) {
	findings := make([]VulnFinding, 3100)
	for i := range findings {
		findings[i] = VulnFinding{Advisory: fmt.Sprintf("DEBIAN-CVE-2024-%05d", i), CVEs: []string{fmt.Sprintf("CVE-2024-%05d", i)},
			Package: fmt.Sprintf("pkg%04d", i%1500), Source: fmt.Sprintf("src%04d", i%900), Installed: "1.2.3-4+deb12u1",
			Fixed: "1.2.3-4+deb12u2", Severity: "high", CVSS: float64(i%100) / 10, Summary: "a summary line of typical length for an advisory", Ecosystem: "Debian:12"}
	}
	for b.Loop() {
		prepareScan(findings)
	}
}

// TestApplyScansRowsBeforeRowHash: findings stored before row_hash (0)
// count as changed once: a rescan rewrites their content and keeps their
// state, acknowledgement and first sighting, and server_findings keeps
// the open set.
func TestApplyScansRowsBeforeRowHash(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			srv, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: "old-01", Host: "10.0.0.1", Port: 22, HostKey: "k"}})
			if err != nil {
				t.Fatal(err)
			}
			fs := []VulnFinding{
				{Advisory: "DSA-1", CVEs: []string{"CVE-2026-1"}, Package: "openssl", Installed: "3.0.1", Fixed: "3.0.2", Severity: "high"},
				{Advisory: "DSA-2", Package: "curl", Installed: "8.0", Severity: "medium"},
			}
			t0 := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
			if err := s.ApplyScan(ctx, ScanOutcome{ServerID: srv.ID, Findings: fs}, t0); err != nil {
				t.Fatal(err)
			}
			list, _, _ := s.VulnFindings(ctx, SystemScope, VulnFilter{ServerID: srv.ID})
			for _, f := range list {
				if f.Advisory == "DSA-1" {
					if _, err := s.AcknowledgeVuln(ctx, SystemScope, f.ID, "alice", t0.Add(time.Minute)); err != nil {
						t.Fatal(err)
					}
				}
			}
			// As a database migrated to row_hash has them; the digest of
			// the last scan differs (the scan changed).
			if err := s.db.Exec("UPDATE vuln_findings SET row_hash = 0").Error; err != nil {
				t.Fatal(err)
			}
			fs[1].Summary = "now with a summary"
			t1 := t0.Add(24 * time.Hour)
			if err := s.ApplyScan(ctx, ScanOutcome{ServerID: srv.ID, Findings: fs}, t1); err != nil {
				t.Fatal(err)
			}
			list, _, _ = s.VulnFindings(ctx, SystemScope, VulnFilter{ServerID: srv.ID})
			if len(list) != 2 {
				t.Fatalf("findings %+v", list)
			}
			for _, f := range list {
				if !f.FirstSeenAt.Equal(t0) || !f.LastSeenAt.Equal(t1) {
					t.Fatalf("dates: %+v", f)
				}
				switch f.Advisory {
				case "DSA-1":
					if f.State != VulnAcknowledged || f.AcknowledgedBy != "alice" {
						t.Fatalf("acknowledged: %+v", f)
					}
				case "DSA-2":
					if f.State != VulnNew || f.Summary != "now with a summary" {
						t.Fatalf("changed: %+v", f)
					}
				}
			}
			var zero int64
			if err := s.db.Raw("SELECT COUNT(*) FROM vuln_findings WHERE row_hash = 0").Scan(&zero).Error; err != nil || zero != 0 {
				t.Fatalf("rows left without a hash: %d %v", zero, err)
			}
			if open, err := s.ServerFindings(ctx, srv.ID); err != nil || len(open) != 2 {
				t.Fatalf("server_findings %+v %v", open, err)
			}
		})
	}
}
