// Package debpkg builds LCM's Debian packages — lcm (lcm-api), lcm-worker
// and lcm-agent — from the binaries `make build` produces and the files in
// deploy/ and docs/, with nfpm as a library (no packaging tool needs to be
// installed on the build machine). See docs/packages-deb.md.
//
// The package version is the semantic version in Debian form: X.Y.Z-beta.N
// is written X.Y.Z~beta.N, so a pre-release sorts before its release
// (spec part 1, Versioning).
package debpkg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"

	"github.com/lcmproject/lcm/internal/release"
)

// Names of the packages Build writes, in that order.
var Names = []string{"lcm", "lcm-worker", "lcm-agent"}

// DefaultMaintainer is the Maintainer field unless Options says otherwise.
const DefaultMaintainer = "LCM maintainers <lcm@lcmproject.invalid>"

// Options say what to package and where.
type Options struct {
	Repo       string    // the repository's working tree (deploy/, docs/)
	Bin        string    // the binaries (default Repo/bin)
	Out        string    // where the .deb files go (default Repo/dist)
	Version    string    // X.Y.Z or X.Y.Z-beta.N (a leading v is allowed)
	Arch       string    // Debian architecture: amd64 (default) or arm64
	Maintainer string    // default DefaultMaintainer
	MTime      time.Time // file times in the packages (default: now)
}

// Package is one written .deb.
type Package struct {
	Name    string
	Version string // Debian form
	Path    string
}

// DebianVersion maps a semantic version to its Debian form.
func DebianVersion(semver string) (string, error) {
	v, err := release.ParseVersion(semver)
	if err != nil {
		return "", err
	}
	return v.Debian(), nil
}

// file is one file of a package; optional files are left out when their
// source does not exist (lcm-scanner, the agent binaries lcm-api serves).
type file struct {
	src, dst string
	mode     fs.FileMode
	optional bool
}

type spec struct {
	name, description string
	recommends        []string
	files             []file
}

func specs(o Options) []spec {
	bin := func(n string) string { return filepath.Join(o.Bin, n) }
	unit := func(n string) string { return filepath.Join(o.Repo, "deploy", "systemd", n) }
	doc := func(n string) string { return filepath.Join(o.Repo, "docs", n) }
	agent := bin("lcm-agent-linux-" + o.Arch)
	if _, err := os.Stat(agent); err != nil && o.Arch == runtime.GOARCH {
		agent = bin("lcm-agent")
	}
	return []spec{
		{
			name: "lcm",
			description: "LCM control plane (lcm-api: REST API, web UI, scheduler)\n" +
				"Manages a fleet of Linux servers over SSH or an agent. Runs as the service\n" +
				"account lcm-api with its data in /var/lib/lcm and configuration in /etc/lcm.",
			recommends: []string{"openssh-client", "sudo"},
			files: []file{
				{src: bin("lcm-api"), dst: "/usr/lib/lcm/lcm-api", mode: 0o755},
				{src: bin("lcm-scanner"), dst: "/usr/lib/lcm/lcm-scanner", mode: 0o755, optional: true},
				// The helper the in-process worker installs on servers
				// in restricted sudo mode, for both architectures.
				{src: bin("lcm-helper-linux-amd64"), dst: "/usr/lib/lcm/lcm-helper-linux-amd64", mode: 0o755},
				{src: bin("lcm-helper-linux-arm64"), dst: "/usr/lib/lcm/lcm-helper-linux-arm64", mode: 0o755},
				{src: bin("lcm-agent-linux-amd64"), dst: "/usr/lib/lcm/lcm-agent-linux-amd64", mode: 0o755, optional: true},
				{src: bin("lcm-agent-linux-arm64"), dst: "/usr/lib/lcm/lcm-agent-linux-arm64", mode: 0o755, optional: true},
				{src: unit("lcm-api.service"), dst: "/lib/systemd/system/lcm-api.service", mode: 0o644},
				{src: doc("install.md"), dst: "/usr/share/doc/lcm/install.md", mode: 0o644},
				{src: doc("packages-deb.md"), dst: "/usr/share/doc/lcm/packages-deb.md", mode: 0o644},
				{src: doc("updates.md"), dst: "/usr/share/doc/lcm/updates.md", mode: 0o644, optional: true},
			},
		},
		{
			name:        "lcm-worker",
			description: "LCM worker (runs jobs on servers over SSH)\nConnects to the LCM control plane's NATS; configured in /etc/lcm-worker/worker.env.",
			files: []file{
				{src: bin("lcm-worker"), dst: "/usr/lib/lcm/lcm-worker", mode: 0o755},
				// A worker on its own host installs the helper too; its
				// own directory, as the lcm package ships the same names
				// (actions.HelperBinary looks in both).
				{src: bin("lcm-helper-linux-amd64"), dst: "/usr/lib/lcm-worker/lcm-helper-linux-amd64", mode: 0o755},
				{src: bin("lcm-helper-linux-arm64"), dst: "/usr/lib/lcm-worker/lcm-helper-linux-arm64", mode: 0o755},
				{src: unit("lcm-worker.service"), dst: "/lib/systemd/system/lcm-worker.service", mode: 0o644},
			},
		},
		{
			name:        "lcm-agent",
			description: "LCM agent (outbound connection to the LCM agent gateway)\nFor servers LCM cannot reach over SSH; enroll with: lcm-agent enroll '<token>'.",
			files: []file{
				{src: agent, dst: "/usr/bin/lcm-agent", mode: 0o755},
				{src: unit("lcm-agent.service"), dst: "/lib/systemd/system/lcm-agent.service", mode: 0o644},
			},
		},
	}
}

// Build writes the three packages into o.Out and returns them.
func Build(o Options) ([]Package, error) {
	if o.Repo == "" {
		o.Repo = "."
	}
	if o.Bin == "" {
		o.Bin = filepath.Join(o.Repo, "bin")
	}
	if o.Out == "" {
		o.Out = filepath.Join(o.Repo, "dist")
	}
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	if o.Arch != "amd64" && o.Arch != "arm64" {
		return nil, fmt.Errorf("debpkg: architecture %q: amd64 or arm64", o.Arch)
	}
	if o.Maintainer == "" {
		o.Maintainer = DefaultMaintainer
	}
	if o.MTime.IsZero() {
		o.MTime = time.Now()
	}
	dv, err := DebianVersion(o.Version)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	var out []Package
	for _, s := range specs(o) {
		p, err := build(o, s, dv)
		if err != nil {
			return out, fmt.Errorf("debpkg: %s: %w", s.name, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func build(o Options, s spec, version string) (Package, error) {
	var contents files.Contents
	for _, f := range s.files {
		if _, err := os.Stat(f.src); err != nil {
			if f.optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return Package{}, fmt.Errorf("%s (build the binaries first: make build): %w", f.src, err)
		}
		contents = append(contents, &files.Content{
			Source: f.src, Destination: f.dst, Type: files.TypeFile,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: f.mode, MTime: o.MTime},
		})
	}
	script := func(kind string) string { return filepath.Join(o.Repo, "deploy", "debian", s.name+"."+kind) }
	info := &nfpm.Info{
		Name:          s.name,
		Arch:          o.Arch,
		Platform:      "linux",
		Version:       version,
		VersionSchema: "none",
		Section:       "admin",
		Priority:      "optional",
		Maintainer:    o.Maintainer,
		Description:   s.description,
		Vendor:        "LCM",
		Homepage:      "https://github.com/lcmproject/lcm",
		MTime:         o.MTime,
		Overridables: nfpm.Overridables{
			Umask:      0o022,
			Recommends: s.recommends,
			Contents:   contents,
			Scripts: nfpm.Scripts{
				PostInstall: script("postinst"),
				PreRemove:   script("prerm"),
				PostRemove:  script("postrm"),
			},
		},
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return Package{}, err
	}
	path := filepath.Join(o.Out, deb.Default.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return Package{}, err
	}
	if err := deb.Default.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return Package{}, err
	}
	if err := f.Close(); err != nil {
		return Package{}, err
	}
	return Package{Name: s.name, Version: version, Path: path}, nil
}
