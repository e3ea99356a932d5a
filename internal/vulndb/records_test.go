package vulndb_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/vulndb"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

func TestParseModifiedIDs(t *testing.T) {
	// The two shapes of osv.dev's export: an ecosystem's own file
	// (<modified>,<id>) and the bucket's root file (<modified>,<eco>/<id>).
	in := "2024-07-09T20:07:51Z,UBUNTU-CVE-2024-6387\r\n\n2024-07-01T10:41:29Z,Debian/DSA-5724-1\n2023-10-03T17:33:09.123456Z,DSA-5514-1\n"
	got, err := vulndb.ParseModifiedIDs([]byte(in))
	if err != nil || len(got) != 3 {
		t.Fatalf("%+v %v", got, err)
	}
	if got[1].Ecosystem != "Debian" || got[1].ID != "DSA-5724-1" || !got[1].Modified.Equal(time.Date(2024, 7, 1, 10, 41, 29, 0, time.UTC)) {
		t.Fatalf("%+v", got[1])
	}
	for _, bad := range []string{"no comma", "yesterday,DSA-1", "2024-07-01T10:41:29Z,", "2024-07-01T10:41:29Z,../../etc/passwd", "2024-07-01T10:41:29Z,a b"} {
		if _, err := vulndb.ParseModifiedIDs([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FromRecords matches like the loaded export does, and BorrowSeverities
// rates a Debian record through the Ubuntu one sharing its CVE.
func TestFromRecords(t *testing.T) {
	read := func(p string) *vulndb.Record {
		b, err := os.ReadFile(filepath.Join(vulndbtest.FixtureDir(), p))
		if err != nil {
			t.Fatal(err)
		}
		r, err := vulndb.ParseRecord(b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	db := vulndb.FromRecords([]*vulndb.Record{read("Debian/DSA-5724-1.json")})
	c := vulndb.Component{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Source: "openssh", Distro: "debian-12"}
	fs := db.Match([]vulndb.Component{c, c})
	if len(fs) != 2 || fs[0].Severity != vulndb.SevUnknown || fs[0].Fixed != "1:9.2p1-2+deb12u3" {
		t.Fatalf("%+v", fs)
	}
	if cs := db.CacheStats(); cs.Hits != 1 || cs.Misses != 1 {
		t.Fatalf("cache %+v", cs)
	}
	db = vulndb.FromRecords([]*vulndb.Record{read("Debian/DSA-5724-1.json")})
	db.BorrowSeverities(vulndb.FromRecords([]*vulndb.Record{read("Ubuntu/UBUNTU-CVE-2024-6387.json")}))
	if fs := db.Match([]vulndb.Component{c}); len(fs) != 1 || fs[0].Severity != vulndb.SevHigh {
		t.Fatalf("%+v", fs)
	}
	if vulndb.EcosystemOf("debian") != "Debian" || vulndb.EcosystemOf("gentoo") != "" {
		t.Fatal("EcosystemOf")
	}
}

func FuzzParseModifiedIDs(f *testing.F) {
	f.Add([]byte("2024-07-09T20:07:51Z,UBUNTU-CVE-2024-6387\n2024-07-01T10:41:29Z,Debian/DSA-5724-1\n"))
	f.Add([]byte("2023-10-03T17:33:09.123Z,DSA-5514-1\r\n"))
	f.Add([]byte(",\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := vulndb.ParseModifiedIDs(b)
		if err != nil {
			return
		}
		for _, e := range got {
			if !vulndb.ValidID(e.ID) || strings.ContainsAny(e.ID, "/\\") || e.Modified.IsZero() && !strings.Contains(string(b), "0001-01-01") {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}

// FuzzFromRecords: any record the parser accepts can be indexed and
// matched without a panic, and findings name the record.
func FuzzFromRecords(f *testing.F) {
	for _, p := range []string{"Debian/DSA-5724-1.json", "Ubuntu/UBUNTU-CVE-2024-6387.json", "Debian/DEBIAN-CVE-2010-4756.json"} {
		b, _ := os.ReadFile(filepath.Join(vulndbtest.FixtureDir(), p))
		f.Add(b, "1:9.2p1-2+deb12u2")
	}
	f.Fuzz(func(t *testing.T, b []byte, version string) {
		r, err := vulndb.ParseRecord(b)
		if err != nil {
			return
		}
		db := vulndb.FromRecords([]*vulndb.Record{r})
		for _, d := range []string{"debian-12", "ubuntu-22.04", "alpine-3.19", "rocky-9.3"} {
			for _, fi := range db.Match([]vulndb.Component{{Name: "openssh-server", Source: "openssh", Version: version, Distro: d}}) {
				if fi.Advisory != r.ID {
					t.Fatalf("finding %+v from record %q", fi, r.ID)
				}
			}
		}
	})
}

// TestMatchContainer: the same package on the host and in a container
// gives two findings, the container's naming it; both caches are keyed
// without the container, so the version is matched once, and a cached
// host finding never picks up a container.
func TestMatchContainer(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(vulndbtest.FixtureDir(), "Debian/DSA-5724-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := vulndb.ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	host := vulndb.Component{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Source: "openssh", Distro: "debian-12"}
	web := host
	web.Container = "docker/web"
	db := vulndb.FromRecords([]*vulndb.Record{r})
	m := db.NewMatcher()
	for name, match := range map[string]func([]vulndb.Component) []vulndb.Finding{"DB.Match": db.Match, "Matcher.Match": m.Match} {
		t.Run(name, func(t *testing.T) {
			fs := match([]vulndb.Component{web, host})
			if len(fs) != 2 || fs[0].Container != "" || fs[1].Container != "docker/web" ||
				fs[0].Advisory != "DSA-5724-1" || fs[1].Advisory != "DSA-5724-1" || fs[1].Fixed != "1:9.2p1-2+deb12u3" {
				t.Fatalf("%+v", fs)
			}
			if again := match([]vulndb.Component{host}); len(again) != 1 || again[0].Container != "" {
				t.Fatalf("the cached host finding changed: %+v", again)
			}
		})
	}
	if cs := db.CacheStats(); cs.Misses != 1 || cs.Hits != 2 || cs.Entries != 1 {
		t.Fatalf("cache %+v, want one entry matched once", cs)
	}
}
