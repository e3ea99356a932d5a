package store

import (
	"context"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestVulnFindingsContainer: a finding of a container's package is stored
// apart from the host's finding of the same advisory and package, reads
// back with its container, goes fixed on its own, and forms its own group
// in the package view.
func TestVulnFindingsContainer(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			srv, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: "web-01", Host: "10.0.0.1", Port: 22, HostKey: "k"}})
			if err != nil {
				t.Fatal(err)
			}
			host := VulnFinding{Advisory: "DSA-5724-1", CVEs: []string{"CVE-2024-6387"}, Package: "openssh-server", Source: "openssh",
				Installed: "1:9.2p1-2+deb12u2", Fixed: "1:9.2p1-2+deb12u3", Severity: "high", Ecosystem: "Debian:12"}
			inWeb := host
			inWeb.Container = "docker/web"
			at := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
			if err := s.ApplyScan(ctx, ScanOutcome{ServerID: srv.ID, Engine: "osv", Findings: []VulnFinding{host, inWeb}}, at); err != nil {
				t.Fatal(err)
			}
			list, total, err := s.VulnFindings(ctx, SystemScope, VulnFilter{ServerID: srv.ID})
			if err != nil || total != 2 || len(list) != 2 {
				t.Fatalf("%d %+v %v", total, list, err)
			}
			if list[0].Container != "" || list[1].Container != "docker/web" || list[1].Package != "openssh-server" || list[1].State != VulnNew {
				t.Fatalf("%+v", list)
			}
			pkgs, err := s.VulnerablePackages(ctx, SystemScope, VulnFilter{})
			if err != nil || len(pkgs) != 2 {
				t.Fatalf("%+v %v", pkgs, err)
			}
			in := map[string]int{}
			for _, p := range pkgs {
				in[p.Container] = len(p.ServerIDs)
			}
			if in[""] != 1 || in["docker/web"] != 1 {
				t.Fatalf("groups %+v", pkgs)
			}
			// The container is updated: its finding is fixed, the host's stays.
			if err := s.ApplyScan(ctx, ScanOutcome{ServerID: srv.ID, Engine: "osv", Findings: []VulnFinding{host}}, at.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			list, _, err = s.VulnFindings(ctx, SystemScope, VulnFilter{ServerID: srv.ID})
			if err != nil || len(list) != 2 || list[0].State != VulnNew || list[1].State != VulnFixed || list[1].Container != "docker/web" {
				t.Fatalf("%+v %v", list, err)
			}
		})
	}
}

// TestVulnFindingsContainerMigration: a database from before the container
// column (unique key server, advisory, package) gets the column with ”
// for its findings and the wider key.
func TestVulnFindingsContainerMigration(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t, db)
			// Back to the schema of security/001.
			m := s.db.Migrator()
			if err := m.DropIndex(&vulnFindingRow{}, "vuln_findings_key"); err != nil {
				t.Fatal(err)
			}
			if err := m.DropColumn(&vulnFindingRow{}, "Container"); err != nil {
				t.Fatal(err)
			}
			if err := s.db.Exec("CREATE UNIQUE INDEX vuln_findings_key ON vuln_findings (server_id, advisory, package)").Error; err != nil {
				t.Fatal(err)
			}
			if err := s.db.Where("id = ?", "security/002_vuln_findings_container").Delete(&schemaMigration{}).Error; err != nil {
				t.Fatal(err)
			}
			srv, err := s.CreateServer(ctx, NewServer{Server: domain.Server{Name: "old-01", Host: "10.0.0.2", Port: 22, HostKey: "k"}})
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
			if err := s.db.Exec(`INSERT INTO vuln_findings (server_id, advisory, package, severity, state, first_seen_at, last_seen_at)
				VALUES (?, 'DSA-1', 'libssl3', 'high', 'new', ?, ?)`, srv.ID, at, at).Error; err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			f := VulnFinding{Advisory: "DSA-1", Package: "libssl3", Severity: "high"}
			g := f
			g.Container = "podman/db"
			if err := s.ApplyScan(ctx, ScanOutcome{ServerID: srv.ID, Findings: []VulnFinding{f, g}}, at.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			list, _, err := s.VulnFindings(ctx, SystemScope, VulnFilter{ServerID: srv.ID})
			if err != nil || len(list) != 2 || list[0].Container != "" || !list[0].FirstSeenAt.Equal(at) || list[1].Container != "podman/db" {
				t.Fatalf("%+v %v", list, err)
			}
		})
	}
}
