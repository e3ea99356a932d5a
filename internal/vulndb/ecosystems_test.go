package vulndb_test

import (
	"testing"

	"github.com/lcmproject/lcm/internal/vulndb"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

type matchCase struct {
	name      string
	comp      vulndb.Component
	advisory  string // "" = no finding
	fixed     string
	severity  string
	cvss      float64
	ecosystem string
}

func runMatchCases(t *testing.T, db *vulndb.DB, cases []matchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := db.Match([]vulndb.Component{tc.comp})
			if tc.advisory == "" {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want 1 finding (%s), got %+v", tc.advisory, fs)
			}
			f := fs[0]
			if f.Advisory != tc.advisory || f.Fixed != tc.fixed || f.Severity != tc.severity || f.CVSS != tc.cvss || f.Ecosystem != tc.ecosystem {
				t.Fatalf("got %s fixed %q severity %s cvss %v ecosystem %q; want %s fixed %q severity %s cvss %v ecosystem %q",
					f.Advisory, f.Fixed, f.Severity, f.CVSS, f.Ecosystem, tc.advisory, tc.fixed, tc.severity, tc.cvss, tc.ecosystem)
			}
		})
	}
}

// TestPublishedRecords matches the records copied verbatim from published
// exports (testdata/osv-published, sources in testdata/README.md): each
// affects a version its distribution really shipped before the fix and
// not the fixed one. The versions come from the records themselves (their
// "versions" lists and "fixed" events).
func TestPublishedRecords(t *testing.T) {
	db, err := vulndb.Load(vulndbtest.BuildFrom(t, vulndbtest.PublishedDir()))
	if err != nil {
		t.Fatal(err)
	}
	if db.Records() != 3 || len(db.Ecosystems()) != 3 {
		t.Fatalf("loaded %d records in %+v", db.Records(), db.Ecosystems())
	}
	runMatchCases(t, db, []matchCase{
		// Debian: DLA-3008-1 (openssl, Debian 9) names the source package; the
		// binary libssl1.1 matches through it. The record carries no rating.
		{"debian affected", vulndb.Component{Name: "libssl1.1", Source: "openssl", Version: "1.1.0l-1~deb9u5", Distro: "debian-9"},
			"DLA-3008-1", "1.1.0l-1~deb9u6", "unknown", 0, "Debian:9"},
		{"debian fixed", vulndb.Component{Name: "libssl1.1", Source: "openssl", Version: "1.1.0l-1~deb9u6", Distro: "debian-9"}, "", "", "", 0, ""},
		{"debian other release", vulndb.Component{Name: "libssl3", Source: "openssl", Version: "3.0.2-0", Distro: "debian-12"}, "", "", "", 0, ""},
		// Ubuntu: USN-8611-1 (glibc) rates its CVEs in database_specific.cves_map;
		// the highest is CVE-2026-5450's CVSS 3.1 vector, 9.8.
		{"ubuntu 22.04 affected", vulndb.Component{Name: "libc6", Source: "glibc", Version: "2.35-0ubuntu3.13", Distro: "ubuntu-22.04"},
			"USN-8611-1", "2.35-0ubuntu3.14", "critical", 9.8, "Ubuntu:22.04:LTS"},
		{"ubuntu 22.04 fixed", vulndb.Component{Name: "libc6", Source: "glibc", Version: "2.35-0ubuntu3.14", Distro: "ubuntu-22.04"}, "", "", "", 0, ""},
		{"ubuntu 24.04 affected", vulndb.Component{Name: "libc-bin", Source: "glibc", Version: "2.39-0ubuntu8.7", Distro: "ubuntu-24.04"},
			"USN-8611-1", "2.39-0ubuntu8.8", "critical", 9.8, "Ubuntu:24.04:LTS"},
		{"ubuntu 20.04 not named", vulndb.Component{Name: "libc6", Source: "glibc", Version: "2.31-0ubuntu9", Distro: "ubuntu-20.04"}, "", "", "", 0, ""},
		// Alpine: ALPINE-CVE-2025-26519 (musl), introduced 0.9.13; apk ordering
		// of _git suffixes and -rN releases decides.
		{"alpine 3.19 affected", vulndb.Component{Name: "musl", Version: "1.2.4_git20230717-r4", Distro: "alpine-3.19.1"},
			"ALPINE-CVE-2025-26519", "1.2.4_git20230717-r5", "high", 7, "Alpine:v3.19"},
		{"alpine 3.19 fixed", vulndb.Component{Name: "musl", Version: "1.2.4_git20230717-r5", Distro: "alpine-3.19.1"}, "", "", "", 0, ""},
		{"alpine 3.20 affected", vulndb.Component{Name: "musl-utils", Source: "musl", Version: "1.2.5-r0", Distro: "alpine-3.20.3"},
			"ALPINE-CVE-2025-26519", "1.2.5-r1", "high", 7, "Alpine:v3.20"},
		{"alpine 3.20 fixed", vulndb.Component{Name: "musl", Version: "1.2.5-r1", Distro: "alpine-3.20.3"}, "", "", "", 0, ""},
		{"alpine before introduced", vulndb.Component{Name: "musl", Version: "0.9.12-r0", Distro: "alpine-3.16.0"}, "", "", "", 0, ""},
	})
}

// TestShapedRecords covers the ecosystems no published record could be
// copied for on this machine (testdata/osv-shaped; see the README): the
// release keys of Rocky Linux, AlmaLinux, Red Hat, SUSE and openSUSE, rpm
// ordering with epochs, and binary-package names (these advisories do not
// name source packages). All five name CVE-2023-5678; only the RHSA shape
// carries a CVSS vector, and the others borrow its score (7.8) while
// keeping their own rating.
func TestShapedRecords(t *testing.T) {
	db, err := vulndb.Load(vulndbtest.BuildFrom(t, vulndbtest.ShapedDir()))
	if err != nil {
		t.Fatal(err)
	}
	if db.Records() != 5 || len(db.Ecosystems()) != 5 {
		t.Fatalf("loaded %d records in %+v", db.Records(), db.Ecosystems())
	}
	runMatchCases(t, db, []matchCase{
		{"rocky affected", vulndb.Component{Name: "openssl-libs", Source: "openssl", Version: "1:3.0.7-25.el9_3", Distro: "rocky-9.3"},
			"LCM-SHAPE-RLSA-1", "1:3.0.7-27.el9", "medium", 7.8, "Rocky Linux:9"},
		{"rocky fixed", vulndb.Component{Name: "openssl-libs", Version: "1:3.0.7-27.el9", Distro: "rocky-9.4"}, "", "", "", 0, ""},
		{"rocky no epoch is older", vulndb.Component{Name: "openssl-libs", Version: "3.0.9-1.el9", Distro: "rocky-9.4"},
			"LCM-SHAPE-RLSA-1", "1:3.0.7-27.el9", "medium", 7.8, "Rocky Linux:9"},
		{"rocky source name does not match", vulndb.Component{Name: "openssl", Version: "1:3.0.7-25.el9_3", Distro: "rocky-9.3"}, "", "", "", 0, ""},
		{"rocky 8 not named", vulndb.Component{Name: "openssl-libs", Version: "1:1.1.1k-9.el8", Distro: "rocky-8.9"}, "", "", "", 0, ""},
		{"alma affected", vulndb.Component{Name: "openssl-libs", Version: "1:3.0.7-24.el9", Distro: "almalinux-9.3"},
			"LCM-SHAPE-ALSA-1", "1:3.0.7-27.el9", "medium", 7.8, "AlmaLinux:9"},
		{"rhel affected", vulndb.Component{Name: "kernel", Version: "5.14.0-427.13.1.el9_4", Distro: "rhel-9.4"},
			"LCM-SHAPE-RHSA-1", "0:5.14.0-427.16.1.el9_4", "high", 7.8, "Red Hat:enterprise_linux:9::baseos"},
		{"rhel fixed", vulndb.Component{Name: "kernel", Version: "5.14.0-427.16.1.el9_4", Distro: "rhel-9.4"}, "", "", "", 0, ""},
		{"sles affected", vulndb.Component{Name: "libopenssl3", Version: "3.0.8-150500.5.3.1", Distro: "sles-15.5"},
			"LCM-SHAPE-SUSE-SU-1", "3.0.8-150500.5.8.1", "high", 7.8, "SUSE:Linux Enterprise Server 15 SP5"},
		{"sles fixed", vulndb.Component{Name: "libopenssl3", Version: "3.0.8-150500.5.8.1", Distro: "sles-15.5"}, "", "", "", 0, ""},
		{"sles other service pack", vulndb.Component{Name: "libopenssl3", Version: "3.0.8-150500.5.3.1", Distro: "sles-15.4"}, "", "", "", 0, ""},
		{"leap affected", vulndb.Component{Name: "libopenssl3", Version: "3.0.8-150500.5.3.1", Distro: "opensuse-leap-15.5"},
			"LCM-SHAPE-openSUSE-SU-1", "3.0.8-150500.5.8.1", "high", 7.8, "openSUSE:Leap 15.5"},
	})
}

// TestDebianUrgency: the Debian security tracker's urgency that
// DEBIAN-CVE records carry (ecosystem_specific.urgency) rates a finding
// when the record has no other rating, so a Debian-only database turns a
// server yellow; a rating elsewhere in the database for the same CVE is
// used only when the urgency says nothing.
func TestDebianUrgency(t *testing.T) {
	rec := func(id, urgency string) *vulndb.Record {
		r, err := vulndb.ParseRecord([]byte(`{"id": "` + id + `", "upstream": ["` + id[7:] + `"],
		  "affected": [{"package": {"name": "openssh", "ecosystem": "Debian:12", "purl": "pkg:deb/debian/openssh?arch=source"},
		    "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}]}],
		    "versions": ["1:9.2p1-2", "1:9.2p1-2+deb12u10"],
		    "ecosystem_specific": {"urgency": "` + urgency + `"}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ubuntuHigh, err := vulndb.ParseRecord([]byte(`{"id": "UBUNTU-CVE-2099-0006", "upstream": ["CVE-2099-0006"],
	  "severity": [{"type": "Ubuntu", "score": "high"}],
	  "affected": [{"package": {"name": "openssh", "ecosystem": "Ubuntu:22.04:LTS"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		urgency, want string
	}{
		{"high", "high"},
		{"medium", "medium"},
		{"medium**", "medium"},
		{"low", "low"},
		{"unimportant", "low"},
		{"not yet assigned", "unknown"},
		{"end-of-life", "unknown"},
		{"", "unknown"},
	}
	comp := vulndb.Component{Name: "openssh-server", Source: "openssh", Version: "1:9.2p1-2+deb12u10", Distro: "debian-12"}
	for i, tc := range tests {
		t.Run(tc.urgency, func(t *testing.T) {
			id := "DEBIAN-CVE-2099-000" + string(rune('0'+i))
			fs := vulndb.FromRecords([]*vulndb.Record{rec(id, tc.urgency)}).Match([]vulndb.Component{comp})
			if len(fs) != 1 || fs[0].Severity != tc.want {
				t.Fatalf("urgency %q: %+v, want severity %s", tc.urgency, fs, tc.want)
			}
		})
	}
	// "not yet assigned" says nothing: the Ubuntu rating of the same CVE is
	// borrowed. A stated urgency wins over another distribution's rating.
	db := vulndb.FromRecords([]*vulndb.Record{rec("DEBIAN-CVE-2099-0006", "not yet assigned"), ubuntuHigh})
	if fs := db.Match([]vulndb.Component{comp}); len(fs) != 1 || fs[0].Severity != "high" {
		t.Fatalf("borrowed: %+v", fs)
	}
	db = vulndb.FromRecords([]*vulndb.Record{rec("DEBIAN-CVE-2099-0006", "low"), ubuntuHigh})
	if fs := db.Match([]vulndb.Component{comp}); len(fs) != 1 || fs[0].Severity != "low" {
		t.Fatalf("own urgency: %+v", fs)
	}
}
