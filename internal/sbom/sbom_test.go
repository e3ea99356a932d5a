package sbom_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/vulndb"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	for url, file := range map[string]string{
		"http://cyclonedx.org/schema/bom-1.6.schema.json":  "testdata/schema/bom-1.6.schema.json",
		"http://cyclonedx.org/schema/spdx.schema.json":     "testdata/schema/spdx.schema.json",
		"http://cyclonedx.org/schema/jsf-0.82.schema.json": "testdata/schema/jsf-0.82.schemax.json",
	} {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(url, doc); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Compile("http://cyclonedx.org/schema/bom-1.6.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var testServer = sbom.Server{ID: "9f1c", Name: "web-01", OSID: "debian", OSVersion: "12", OSPretty: "Debian GNU/Linux 12 (bookworm)",
	Packages: []sbom.Package{
		{Name: "openssh-server", Version: "1:9.2p1-2+deb12u10", Arch: "amd64", Source: "openssh", Manager: "apt"},
		{Name: "libssl3", Version: "3.0.20-1~deb12u2", Arch: "amd64", Source: "openssl", Manager: "apt"},
		{Name: "openssl", Version: "3.0.20-1~deb12u2", Arch: "amd64", Source: "openssl", Manager: "apt"},
		{Name: "tzdata", Version: "2026b-0+deb12u1", Arch: "all", Manager: "apt"},
	}}

// TestBuildValidatesAgainstSchema: the SBOM is valid CycloneDX 1.6 per the
// official JSON schema, for each package family.
func TestBuildValidatesAgainstSchema(t *testing.T) {
	schema := compileSchema(t)
	servers := []sbom.Server{testServer,
		{ID: "r", Name: "db-01", OSID: "rocky", OSVersion: "9.4", Packages: []sbom.Package{{Name: "bash", Version: "5.1.8-9.el9", Arch: "x86_64", Source: "bash", Manager: "dnf"}}},
		{ID: "a", Name: "edge", OSID: "alpine", OSVersion: "3.20.3", Packages: []sbom.Package{{Name: "musl", Version: "1.2.5-r0", Arch: "x86_64", Source: "musl", Manager: "apk"}}},
		{ID: "p", Name: "arch", OSID: "arch", Packages: []sbom.Package{{Name: "glibc", Version: "2.40+r16+gaa533d58ff-2", Arch: "x86_64", Manager: "pacman"}}},
		{ID: "e", Name: "empty", OSID: "debian", OSVersion: "12"},
	}
	for _, s := range servers {
		b, err := sbom.Marshal(sbom.Build(s, time.Unix(1700000000, 0)))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(doc); err != nil {
			t.Fatalf("%s: SBOM does not validate against bom-1.6.schema.json: %v\n%s", s.Name, err, b)
		}
	}
}

// TestBuildGroupValidates: a group's SBOM (servers as devices with their
// packages nested) is valid CycloneDX 1.6 even when servers share packages.
func TestBuildGroupValidates(t *testing.T) {
	twin := testServer
	twin.ID, twin.Name = "9f1d", "web-02"
	b, err := sbom.Marshal(sbom.BuildGroup("g1", "Production", []sbom.Server{testServer, twin}, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := compileSchema(t).Validate(doc); err != nil {
		t.Fatalf("group SBOM invalid: %v", err)
	}
	if strings.Count(string(b), `"name": "openssh-server"`) != 2 {
		t.Fatal("each server should list its own packages")
	}
}

func TestPURLsRoundTrip(t *testing.T) {
	bom := sbom.Build(testServer, time.Now())
	b, _ := sbom.Marshal(bom)
	if !strings.Contains(string(b), `"specVersion": "1.6"`) {
		t.Fatalf("not 1.6: %s", b)
	}
	back, err := sbom.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	comps := sbom.Components(back)
	if len(comps) != 4 {
		t.Fatalf("components %+v", comps)
	}
	want := "pkg:deb/debian/openssh-server@1%3A9.2p1-2%2Bdeb12u10?arch=amd64&distro=debian-12&upstream=openssh"
	if got := sbom.PURL(testServer.Packages[0], "debian", "12"); got != want {
		t.Fatalf("purl %s, want %s", got, want)
	}
	for _, c := range comps {
		if c.Name == "openssh-server" && (c.Version != "1:9.2p1-2+deb12u10" || c.Source != "openssh" || c.Distro != "debian-12") {
			t.Fatalf("round trip: %+v", c)
		}
	}
	if _, err := sbom.Decode(strings.NewReader(`{"bomFormat":"SPDX"}`)); err == nil {
		t.Fatal("accepted a non-CycloneDX document")
	}
}

func FuzzParsePURL(f *testing.F) {
	f.Add("pkg:deb/debian/openssl@3.0.15-1~deb12u1?arch=amd64&distro=debian-12")
	f.Add("pkg:rpm/redhat/bash@5.1.8-9.el9")
	f.Fuzz(func(t *testing.T, s string) {
		if c, ok := sbom.ParsePURL(s); ok && (c.Name == "" || c.Version == "") {
			t.Fatalf("accepted %q with empty name or version", s)
		}
	})
}

// TestBuildContainerPackages: packages of a CVE-relevant container are
// components of their own, on the container's distribution, named by the
// lcm:container property, also when the host has the same package; the
// SBOM stays valid CycloneDX 1.6, and the package set key sees them.
func TestBuildContainerPackages(t *testing.T) {
	s := testServer
	s.Packages = append(append([]sbom.Package(nil), s.Packages...),
		sbom.Package{Name: "libssl3", Version: "3.0.20-1~deb12u2", Arch: "amd64", Source: "openssl", Manager: "dpkg", Container: "podman/web", OSID: "debian", OSVersion: "12"},
		sbom.Package{Name: "libssl3", Version: "3.0.2-0ubuntu1.18", Arch: "amd64", Source: "openssl", Manager: "dpkg", Container: "docker/api", OSID: "ubuntu", OSVersion: "22.04"})
	bom := sbom.Build(s, time.Unix(1700000000, 0))
	b, err := sbom.Marshal(bom)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := compileSchema(t).Validate(doc); err != nil {
		t.Fatalf("SBOM with container packages does not validate: %v\n%s", err, b)
	}
	in := map[string]string{} // container → purl of its libssl3
	hostLibssl := 0
	for _, c := range *bom.Components {
		if c.Name != "libssl3" {
			continue
		}
		ctr := ""
		if c.Properties != nil {
			for _, p := range *c.Properties {
				if p.Name == sbom.ContainerProperty {
					ctr = p.Value
				}
			}
		}
		if ctr == "" {
			hostLibssl++
			continue
		}
		in[ctr] = c.PackageURL
	}
	if hostLibssl != 1 || len(in) != 2 ||
		in["podman/web"] != "pkg:deb/debian/libssl3@3.0.20-1~deb12u2?arch=amd64&distro=debian-12&upstream=openssl" ||
		!strings.Contains(in["docker/api"], "pkg:deb/ubuntu/libssl3@3.0.2-0ubuntu1.18") || !strings.Contains(in["docker/api"], "distro=ubuntu-22.04") {
		t.Fatalf("host libssl3 %d, container purls %v", hostLibssl, in)
	}
	if len(sbom.Components(bom)) != 6 {
		t.Fatalf("matcher components %d, want 6 (4 host + 2 container)", len(sbom.Components(bom)))
	}
	if sbom.PackageSetKey(s) == sbom.PackageSetKey(testServer) {
		t.Fatal("the package set key ignores container packages")
	}
}

// TestComponentsContainer: Components carries the lcm:container property
// into the matcher's component, and matching an SBOM with the same
// package on the host and in a container gives two findings, one of them
// the container's.
func TestComponentsContainer(t *testing.T) {
	s := sbom.Server{ID: "9f1c", Name: "web-01", OSID: "debian", OSVersion: "12", Packages: []sbom.Package{
		{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Arch: "amd64", Source: "openssh", Manager: "apt"},
		{Name: "openssh-server", Version: "1:9.2p1-2+deb12u2", Arch: "amd64", Source: "openssh", Manager: "dpkg",
			Container: "docker/web", OSID: "debian", OSVersion: "12"},
	}}
	comps := sbom.Components(sbom.Build(s, time.Unix(1700000000, 0)))
	if len(comps) != 2 || comps[0].Container != "" || comps[1].Container != "docker/web" || comps[1].Distro != "debian-12" {
		t.Fatalf("%+v", comps)
	}
	b, err := os.ReadFile(filepath.Join(vulndbtest.FixtureDir(), "Debian/DSA-5724-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := vulndb.ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	fs := vulndb.FromRecords([]*vulndb.Record{r}).Match(comps)
	if len(fs) != 2 || fs[0].Container != "" || fs[1].Container != "docker/web" || fs[0].Package != fs[1].Package {
		t.Fatalf("%+v", fs)
	}
}
