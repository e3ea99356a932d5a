package vulndb_test

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/vulndb"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

// baseImage reads the recorded excerpt of the test hosts' dpkg status
// (testdata/base-bookworm-dpkg-status, copied from
// /var/cache/lcm-testhosts/base-bookworm/var/lib/dpkg/status).
func baseImage(t *testing.T) []vulndb.Component {
	t.Helper()
	f, err := os.Open("testdata/base-bookworm-dpkg-status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vulndb.Component
	var c vulndb.Component
	flush := func() {
		if c.Name != "" {
			if c.Source == "" {
				c.Source = c.Name
			}
			c.Distro = "debian-12"
			out = append(out, c)
		}
		c = vulndb.Component{}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		switch k {
		case "Package":
			c.Name = v
		case "Version":
			c.Version = v
		case "Source":
			c.Source, _, _ = strings.Cut(v, " ")
		case "":
			flush()
		}
	}
	flush()
	return out
}

func ids(fs []vulndb.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Advisory+"/"+f.Package+"/"+f.Severity+"/"+f.Fixed)
	}
	sort.Strings(out)
	return out
}

// TestRealAdvisoriesAgainstTestHost: the real DSAs are fixed in the
// versions the test hosts run; the unfixed DEBIAN-CVE records match them.
func TestRealAdvisoriesAgainstTestHost(t *testing.T) {
	db, err := vulndb.Load(vulndbtest.Build(t))
	if err != nil {
		t.Fatal(err)
	}
	if db.Records() != 6 {
		t.Fatalf("records %d, want 6", db.Records())
	}
	got := ids(db.Match(baseImage(t)))
	want := []string{
		"DEBIAN-CVE-2010-4756/libc-bin/unknown/", "DEBIAN-CVE-2010-4756/libc6/unknown/",
		"DEBIAN-CVE-2023-51767/openssh-client/unknown/", "DEBIAN-CVE-2023-51767/openssh-server/unknown/",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("findings on the test host image:\n got %v\nwant %v", got, want)
	}
}

// TestRealAdvisoriesAgainstOlderBookworm: the versions bookworm shipped
// before each DSA are affected, with the DSA's fixed version, and the
// severity comes from the Ubuntu record that shares the CVE id.
func TestRealAdvisoriesAgainstOlderBookworm(t *testing.T) {
	db, err := vulndb.Load(vulndbtest.Build(t))
	if err != nil {
		t.Fatal(err)
	}
	comps := []vulndb.Component{
		{Name: "openssh-server", Source: "openssh", Version: "1:9.2p1-2+deb12u2", Distro: "debian-12"},
		{Name: "libc6", Source: "glibc", Version: "2.36-9+deb12u2", Distro: "debian-12"},
		{Name: "libssl3", Source: "openssl", Version: "3.0.14-1~deb12u1", Distro: "debian-12"},
		// The fixed versions themselves are not affected by the DSAs.
		{Name: "openssl", Version: "3.0.14-1~deb12u2", Distro: "debian-12"},
		// Another release: Debian 11 records do not apply to Debian 12 and back.
		{Name: "libc6", Source: "glibc", Version: "2.31-13+deb11u7", Distro: "debian-11"},
	}
	got := ids(db.Match(comps))
	want := []string{
		"DEBIAN-CVE-2010-4756/libc6/unknown/", "DEBIAN-CVE-2010-4756/libc6/unknown/",
		"DEBIAN-CVE-2023-51767/openssh-server/unknown/",
		"DSA-5514-1/libc6/unknown/2.36-9+deb12u3",
		"DSA-5724-1/openssh-server/high/1:9.2p1-2+deb12u3",
		"DSA-5764-1/libssl3/unknown/3.0.14-1~deb12u2",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("findings:\n got %v\nwant %v", got, want)
	}
	for _, f := range db.Match(comps[:1]) {
		if f.Advisory == "DSA-5724-1" && (f.CVSS != 8.1 || strings.Join(f.CVEs, ",") != "CVE-2024-6387") {
			t.Fatalf("DSA-5724-1: cvss %v cves %v, want 8.1 CVE-2024-6387", f.CVSS, f.CVEs)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := vulndb.Load(t.TempDir()); err != vulndb.ErrEmpty {
		t.Fatalf("empty dir: %v", err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "Debian"), 0o755)
	os.WriteFile(filepath.Join(dir, "Debian", "all.zip"), []byte("not a zip"), 0o644)
	if _, err := vulndb.Load(dir); err == nil {
		t.Fatal("garbage zip loaded")
	}
}

func TestEventSemantics(t *testing.T) {
	rec := func(events string) []byte {
		return []byte(`{"id":"X-1","affected":[{"package":{"ecosystem":"Debian:12","name":"p"},"ranges":[{"type":"ECOSYSTEM","events":` + events + `}]}]}`)
	}
	tests := []struct {
		events, version string
		hit             bool
		fixed           string
	}{
		{`[{"introduced":"0"},{"fixed":"2"}]`, "1", true, "2"},
		{`[{"introduced":"0"},{"fixed":"2"}]`, "2", false, ""},
		{`[{"introduced":"1.5"},{"fixed":"2"}]`, "1", false, ""},
		{`[{"introduced":"1.5"},{"fixed":"2"}]`, "1.5", true, "2"},
		{`[{"introduced":"3"},{"fixed":"4"},{"introduced":"0"},{"fixed":"2"}]`, "2.5", false, ""},
		{`[{"introduced":"3"},{"fixed":"4"},{"introduced":"0"},{"fixed":"2"}]`, "3.1", true, "4"},
		{`[{"introduced":"0"},{"last_affected":"2"}]`, "2", true, ""},
		{`[{"introduced":"0"},{"last_affected":"2"}]`, "2.1", false, ""},
		{`[{"introduced":"0"}]`, "1:99", true, ""},
	}
	for _, tt := range tests {
		r, err := vulndb.ParseRecord(rec(tt.events))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		writeZip(t, dir, "Debian", map[string]string{"X-1.json": string(rec(tt.events))})
		_ = r
		db, err := vulndb.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		fs := db.Match([]vulndb.Component{{Name: "p", Version: tt.version, Distro: "debian-12"}})
		if (len(fs) == 1) != tt.hit || (tt.hit && fs[0].Fixed != tt.fixed) {
			t.Errorf("%s @ %s: %+v, want hit=%v fixed=%q", tt.events, tt.version, fs, tt.hit, tt.fixed)
		}
	}
}

func TestCVSS3(t *testing.T) {
	for vec, want := range map[string]float64{
		"CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:H/I:H/A:H": 8.1,
		"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H": 9.8,
		"CVSS:3.1/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:H/A:H": 7.8,
		"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H": 10,
		"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:H": 7.5,
		"CVSS:3.0/AV:N/AC:L/PR:L/UI:R/S:C/C:L/I:L/A:N": 5.4,
		"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:N": 0,
	} {
		got, ok := vulndb.CVSS3Score(vec)
		if !ok || got != want {
			t.Errorf("%s = %v, %v; want %v", vec, got, ok, want)
		}
	}
	for _, bad := range []string{"", "CVSS:2.0/AV:N", "CVSS:3.1/AV:X/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:H"} {
		if _, ok := vulndb.CVSS3Score(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzCVSS3(f *testing.F) {
	f.Add("CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:H/I:H/A:H")
	f.Fuzz(func(t *testing.T, s string) {
		if sc, ok := vulndb.CVSS3Score(s); ok && (sc < 0 || sc > 10) {
			t.Fatalf("%q scored %v", s, sc)
		}
	})
}

func FuzzParseRecord(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join(vulndbtest.FixtureDir(), "Debian", "DSA-5724-1.json"))
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := vulndb.ParseRecord(b)
		if err == nil && r.ID == "" {
			t.Fatal("record without id accepted")
		}
	})
}
