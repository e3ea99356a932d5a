package aptrepo

import (
	"bytes"
	"compress/gzip"
	"crypto"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Suite is one suite of a Repo: where it lives on the server, the
// fields of its Release file and its packages.
type Suite struct {
	// Root is the archive's path on the server, as Debian's mirrors have
	// "debian" and "debian-security".
	Root string
	// Suite, Codename, Origin, Label and Version are the Release file's
	// fields. apt's simulation names a candidate's origin
	// Label:Version/Suite ("Debian-Security:12/bookworm-security"); the
	// sources name the suite by Codename.
	Suite    string
	Codename string
	Origin   string
	Label    string
	Version  string
	Packages []Package
}

// Repo is a signed apt repository built in memory and served over HTTP
// on 127.0.0.1 until the test ends. The test hosts share the machine's
// network namespace (docs/testing.md), so their apt reaches it at URL;
// Sources is what makes a host use it.
type Repo struct {
	URL    string
	Suites []Suite
	// KeyASC is the armored public key InRelease and Release.gpg are
	// signed with (a fresh Ed25519 key per repository).
	KeyASC string
	files  map[string][]byte // by server path, without the leading slash
	mtime  time.Time
}

// architectures are the architectures each suite's Release lists
// and has a Packages index for (every package is Architecture all and
// listed in each, as Debian's archive lists its arch-all packages): the
// ones LCM ships for and its test hosts run.
var architectures = []string{"amd64", "arm64"}

// Start builds a repository of the suites and serves it until the
// test ends.
func Start(t testing.TB, suites ...Suite) *Repo {
	t.Helper()
	r, err := Build(time.Now(), suites...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Build builds the repository's files dated now: per suite the
// pool, the Packages indexes (plain and gzip), Release, its detached
// signature Release.gpg and the clear-signed InRelease that apt asks for
// first. Serve it with ServeHTTP; Start does both.
func Build(now time.Time, suites ...Suite) (*Repo, error) {
	// Whole seconds: Last-Modified, the Release Date and the key's
	// creation time must not lie in the future of the host's clock.
	now = now.UTC().Truncate(time.Second)
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, DefaultHash: crypto.SHA256, Time: func() time.Time { return now }}
	key, err := openpgp.NewEntity("LCM test repository", "", "lcm@lcmproject.invalid", cfg)
	if err != nil {
		return nil, fmt.Errorf("apt repo key: %w", err)
	}
	var asc bytes.Buffer
	aw, err := armor.Encode(&asc, openpgp.PublicKeyType, nil)
	if err == nil {
		err = key.Serialize(aw)
	}
	if err == nil {
		err = aw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("apt repo key: %w", err)
	}
	r := &Repo{Suites: suites, KeyASC: asc.String(), files: map[string][]byte{}, mtime: now}
	for _, s := range suites {
		if err := r.addSuite(s, key, cfg); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// addSuite writes one suite's pool, indexes and signed Release files.
func (r *Repo) addSuite(s Suite, key *openpgp.Entity, cfg *packet.Config) error {
	if s.Root == "" || s.Codename == "" || s.Suite == "" {
		return fmt.Errorf("apt repo: suite %+v needs a Root, a Suite and a Codename", s)
	}
	var entries bytes.Buffer
	for _, p := range s.Packages {
		deb, err := BuildDeb(p, r.mtime)
		if err != nil {
			return err
		}
		control, err := Control(deb)
		if err != nil {
			return err
		}
		if !strings.HasSuffix(control, "\n") {
			control += "\n"
		}
		pool := fmt.Sprintf("pool/main/%c/%s/%s", p.Name[0], p.Name, p.FileName())
		r.files[path.Join(s.Root, pool)] = deb
		sha, md := sha256.Sum256(deb), md5.Sum(deb)
		fmt.Fprintf(&entries, "%sFilename: %s\nSize: %d\nMD5sum: %s\nSHA256: %s\n\n",
			control, pool, len(deb), hex.EncodeToString(md[:]), hex.EncodeToString(sha[:]))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.ModTime = r.mtime
	if _, err := zw.Write(entries.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	dists := path.Join(s.Root, "dists", s.Codename)
	var rel bytes.Buffer
	fmt.Fprintf(&rel, "Origin: %s\nLabel: %s\nSuite: %s\nCodename: %s\nVersion: %s\nDate: %s\n"+
		"Architectures: %s\nComponents: main\nDescription: LCM test suite %s\nSHA256:\n",
		s.Origin, s.Label, s.Suite, s.Codename, s.Version, r.mtime.Format(time.RFC1123),
		strings.Join(architectures, " "), s.Codename)
	for _, arch := range architectures {
		for _, f := range []struct {
			name string
			data []byte
		}{{"Packages", entries.Bytes()}, {"Packages.gz", gz.Bytes()}} {
			index := "main/binary-" + arch + "/" + f.name
			r.files[path.Join(dists, index)] = f.data
			sum := sha256.Sum256(f.data)
			fmt.Fprintf(&rel, " %s %d %s\n", hex.EncodeToString(sum[:]), len(f.data), index)
		}
	}
	var inRelease, detached bytes.Buffer
	w, err := clearsign.Encode(&inRelease, key.PrivateKey, cfg)
	if err == nil {
		_, err = w.Write(rel.Bytes())
	}
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = openpgp.ArmoredDetachSign(&detached, key, bytes.NewReader(rel.Bytes()), cfg)
	}
	if err != nil {
		return fmt.Errorf("apt repo: signing %s: %w", dists, err)
	}
	r.files[path.Join(dists, "Release")] = rel.Bytes()
	r.files[path.Join(dists, "Release.gpg")] = detached.Bytes()
	r.files[path.Join(dists, "InRelease")] = inRelease.Bytes()
	return nil
}

// ServeHTTP serves the repository's files (GET and HEAD, answering
// If-Modified-Since as a mirror does); anything else is 404.
func (r *Repo) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, ok := r.files[strings.TrimPrefix(path.Clean(req.URL.Path), "/")]
	if !ok {
		http.NotFound(w, req)
		return
	}
	http.ServeContent(w, req, path.Base(req.URL.Path), r.mtime, bytes.NewReader(b))
}

// File returns one of the repository's files by its path on the server
// ("debian/dists/bookworm/InRelease").
func (r *Repo) File(p string) ([]byte, bool) {
	b, ok := r.files[p]
	return b, ok
}

// Paths lists the repository's files by their paths on the server, sorted.
func (r *Repo) Paths() []string {
	ps := make([]string, 0, len(r.files))
	for p := range r.files {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// Sources is a deb822 sources file (/etc/apt/sources.list.d/*.sources)
// with one stanza per suite, main only, the key inline in Signed-By (apt
// >= 2.3.10), so a host needs no keyring file for it.
func (r *Repo) Sources() string {
	var key strings.Builder
	for _, l := range strings.Split(strings.TrimRight(r.KeyASC, "\n"), "\n") {
		if l == "" {
			l = "." // deb822's blank line inside a field
		}
		key.WriteString("\n " + l)
	}
	var b strings.Builder
	for i, s := range r.Suites {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "Types: deb\nURIs: %s/%s\nSuites: %s\nComponents: main\nSigned-By:%s\n", r.URL, s.Root, s.Codename, key.String())
	}
	return b.String()
}

// OnlySourceScript is a root shell script for a test host that makes r
// its only apt source and installs the named packages ("name=version"
// pins a version): /etc/apt/sources.list and sources.list.d are moved
// aside to /etc/apt/lcm-test-aside, the lists of every other source are
// dropped, then apt-get update and install run against r alone — no
// network beyond the machine's loopback. ResetTestHost puts the host's
// own sources and lists back (it clears the whole overlay).
func (r *Repo) OnlySourceScript(install ...string) string {
	s := `set -e
mkdir -p /etc/apt/lcm-test-aside
[ ! -e /etc/apt/sources.list ] || mv /etc/apt/sources.list /etc/apt/lcm-test-aside/
[ ! -d /etc/apt/sources.list.d ] || mv /etc/apt/sources.list.d /etc/apt/lcm-test-aside/
mkdir /etc/apt/sources.list.d
cat >/etc/apt/sources.list.d/lcm-test-repo.sources <<'LCM_TEST_REPO_EOF'
` + r.Sources() + `LCM_TEST_REPO_EOF
find /var/lib/apt/lists -maxdepth 1 -type f ! -name lock -delete
rm -f /var/cache/apt/pkgcache.bin /var/cache/apt/srcpkgcache.bin
apt-get -q update
`
	if len(install) > 0 {
		s += "DEBIAN_FRONTEND=noninteractive apt-get -qy install " + strings.Join(install, " ") + "\n"
	}
	return s
}

// The stale-package-lists tests' package (issue 24): StaleProbeRelease in
// the release suite, StaleProbeSecurity in the security suite.
const (
	StaleProbe         = "lcm-stale-probe"
	StaleProbeRelease  = "1.0"
	StaleProbeSecurity = "1.1"
)

// StartStaleProbe serves a repository shaped like Debian 12's archive
// for the stale-lists tests: "debian" with suite bookworm (Origin and
// Label Debian) holding StaleProbe StaleProbeRelease, and
// "debian-security" with suite bookworm-security (Origin Debian, Label
// Debian-Security) holding StaleProbeSecurity. apt then names the
// update's origin "Debian-Security:12/bookworm-security" in its
// simulation and prints "… bookworm-security InRelease" when it updates,
// as with Debian's own mirrors, and there is always exactly one pending
// security update, whatever Debian has published that day.
func StartStaleProbe(t testing.TB) *Repo {
	t.Helper()
	return Start(t,
		Suite{Root: "debian", Suite: "bookworm", Codename: "bookworm", Origin: "Debian", Label: "Debian", Version: "12",
			Packages: []Package{{Name: StaleProbe, Version: StaleProbeRelease}}},
		Suite{Root: "debian-security", Suite: "bookworm-security", Codename: "bookworm-security", Origin: "Debian",
			Label: "Debian-Security", Version: "12", Packages: []Package{{Name: StaleProbe, Version: StaleProbeSecurity}}})
}
