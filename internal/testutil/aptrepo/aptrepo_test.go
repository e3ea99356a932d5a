package aptrepo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"github.com/blakesmith/ar"
)

// TestBuildDeb reads a built .deb back the way dpkg does: the ar members
// in order, the control stanza, the one data file.
func TestBuildDeb(t *testing.T) {
	mtime := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	deb, err := BuildDeb(Package{Name: "lcm-probe", Version: "1.1"}, mtime)
	if err != nil {
		t.Fatal(err)
	}
	members := readAr(t, deb)
	if got := strings.Join(members.names, " "); got != "debian-binary control.tar.gz data.tar.gz" {
		t.Fatalf("ar members %q", got)
	}
	if string(members.data["debian-binary"]) != "2.0\n" {
		t.Fatalf("debian-binary %q", members.data["debian-binary"])
	}
	control := readTarGz(t, members.data["control.tar.gz"])
	c := control["./control"]
	for _, field := range []string{"Package: lcm-probe\n", "Version: 1.1\n", "Architecture: all\n", "Maintainer: " + debMaintainer + "\n"} {
		if !strings.Contains(c, field) {
			t.Fatalf("control lacks %q: %q", field, c)
		}
	}
	if !strings.HasPrefix(c, "Package: ") || !strings.HasSuffix(c, "\n") {
		t.Fatalf("control %q", c)
	}
	if got, err := Control(deb); err != nil || got != c {
		t.Fatalf("Control = %q, %v; the package holds %q", got, err, c)
	}
	data := readTarGz(t, members.data["data.tar.gz"])
	if v, ok := data["./usr/share/lcm-probe/version"]; !ok || v != "1.1\n" {
		t.Fatalf("data files %v", data)
	}
	for _, dir := range []string{"./usr/", "./usr/share/", "./usr/share/lcm-probe/"} {
		if _, ok := data[dir]; !ok {
			t.Fatalf("data.tar.gz lacks directory %s: %v", dir, data)
		}
	}
	if _, err := BuildDeb(Package{Name: "x"}, mtime); err == nil {
		t.Fatal("a package without a version was built")
	}
}

// TestStaleProbeRepo fetches the repository as apt does: each InRelease
// verifies with the repository's key and names its suite as Debian's do,
// every index it lists has its hash, every pool file the index's.
func TestStaleProbeRepo(t *testing.T) {
	r := StartStaleProbe(t)
	keys, err := openpgp.ReadArmoredKeyRing(strings.NewReader(r.KeyASC))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ root, label, version string }{
		"bookworm":          {"debian", "Debian", StaleProbeRelease},
		"bookworm-security": {"debian-security", "Debian-Security", StaleProbeSecurity},
	}
	for codename, w := range want {
		dists := r.URL + "/" + w.root + "/dists/" + codename + "/"
		block, _ := clearsign.Decode(get(t, dists+"InRelease"))
		if block == nil {
			t.Fatalf("%sInRelease is not clear-signed", dists)
		}
		if _, err := block.VerifySignature(keys, nil); err != nil {
			t.Fatalf("%sInRelease: %v", dists, err)
		}
		release := string(block.Plaintext)
		if !bytes.Equal(block.Plaintext, get(t, dists+"Release")) {
			t.Fatalf("InRelease and Release of %s differ", codename)
		}
		if _, err := openpgp.CheckArmoredDetachedSignature(keys, strings.NewReader(release), bytes.NewReader(get(t, dists+"Release.gpg")), nil); err != nil {
			t.Fatalf("%sRelease.gpg: %v", dists, err)
		}
		for _, field := range []string{"Origin: Debian\n", "Label: " + w.label + "\n", "Suite: " + codename + "\n",
			"Codename: " + codename + "\n", "Version: 12\n", "Components: main\n"} {
			if !strings.Contains(release, field) {
				t.Fatalf("%s Release lacks %q:\n%s", codename, field, release)
			}
		}
		_, sums, _ := strings.Cut(release, "SHA256:\n")
		indexes := 0
		for _, l := range strings.Split(strings.TrimSpace(sums), "\n") {
			f := strings.Fields(l)
			if len(f) != 3 {
				t.Fatalf("Release line %q", l)
			}
			checkFile(t, get(t, dists+f[2]), f[0], f[1])
			indexes++
		}
		if indexes != 2*len(architectures) {
			t.Fatalf("%s lists %d indexes", codename, indexes)
		}
		packages := string(get(t, dists+"main/binary-amd64/Packages"))
		field := func(name string) string {
			_, v, _ := strings.Cut(packages, "\n"+name+": ")
			v, _, _ = strings.Cut(v, "\n")
			return v
		}
		if !strings.HasPrefix(packages, "Package: "+StaleProbe+"\nVersion: "+w.version+"\n") {
			t.Fatalf("%s Packages:\n%s", codename, packages)
		}
		checkFile(t, get(t, r.URL+"/"+w.root+"/"+field("Filename")), field("SHA256"), field("Size"))
		if !strings.Contains(r.Sources(), "URIs: "+r.URL+"/"+w.root+"\nSuites: "+codename+"\n") {
			t.Fatalf("sources lack %s:\n%s", codename, r.Sources())
		}
	}

	// A mirror's answers to what apt also sends: a conditional GET of an
	// unchanged file, a file that is not there.
	req, _ := http.NewRequest("GET", r.URL+"/debian/dists/bookworm/InRelease", nil)
	req.Header.Set("If-Modified-Since", time.Now().UTC().Add(time.Minute).Format(http.TimeFormat))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: %v %v", resp, err)
	}
	if resp, err := http.Get(r.URL + "/debian/dists/bookworm/main/i18n/Translation-en"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("missing file: %v %v", resp, err)
	}
	script := r.OnlySourceScript(StaleProbe + "=" + StaleProbeRelease)
	for _, want := range []string{"mv /etc/apt/sources.list.d /etc/apt/lcm-test-aside/", "URIs: " + r.URL + "/debian-security\n",
		"apt-get -q update\n", "apt-get -qy install " + StaleProbe + "=" + StaleProbeRelease + "\n"} {
		if !strings.Contains(script, want) {
			t.Fatalf("OnlySourceScript lacks %q:\n%s", want, script)
		}
	}
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return b
}

// checkFile compares b with a SHA256 and size as an index lists them.
func checkFile(t *testing.T, b []byte, sha, size string) {
	t.Helper()
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != sha || strconv.Itoa(len(b)) != size {
		t.Fatalf("file of %d bytes, sha256 %x: the index says %s bytes, %s", len(b), sum, size, sha)
	}
}

type arMembers struct {
	names []string
	data  map[string][]byte
}

// readAr splits a .deb's ar archive into its members, in order, with
// the ar reader Control uses.
func readAr(t *testing.T, b []byte) arMembers {
	t.Helper()
	m := arMembers{data: map[string][]byte{}}
	r := ar.NewReader(bytes.NewReader(b))
	for {
		h, err := r.Next()
		if err == io.EOF {
			return m
		}
		if err != nil {
			t.Fatalf("ar: %v", err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("ar member %s: %v", h.Name, err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		m.names = append(m.names, name)
		m.data[name] = data
	}
}

// readTarGz maps each entry of a gzip'd tar to its content.
func readTarGz(t *testing.T, b []byte) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Fatalf("%s not owned by root", h.Name)
		}
		c, _ := io.ReadAll(tr)
		out[h.Name] = string(c)
	}
}
