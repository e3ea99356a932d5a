package aptrepo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blakesmith/ar"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
)

// Package is a tiny Debian binary package built for a test:
// Architecture all, one file (/usr/share/<Name>/version, holding
// Version), no dependencies and no maintainer scripts, so installing or
// upgrading it changes nothing else on a host.
type Package struct {
	Name    string
	Version string
}

const (
	debMaintainer = "LCM tests <lcm@lcmproject.invalid>"
	debSynopsis   = "LCM test package"
	debLongDesc   = "Built by internal/testutil for tests that install and upgrade a package on a test host."
)

// FileName is the package's file name as Debian's pool has it
// ("lcm-stale-probe_1.1_all.deb").
func (p Package) FileName() string { return p.Name + "_" + p.Version + "_all.deb" }

// BuildDeb builds p with nfpm (as internal/debpkg builds LCM's own
// packages), every file dated mtime. No packaging tool is needed on the
// machine.
func BuildDeb(p Package, mtime time.Time) ([]byte, error) {
	if p.Name == "" || p.Version == "" {
		return nil, fmt.Errorf("deb: package %+v needs a Name and a Version", p)
	}
	dir, err := os.MkdirTemp("", "lcm-deb-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "version")
	if err := os.WriteFile(src, []byte(p.Version+"\n"), 0o644); err != nil {
		return nil, err
	}
	info := nfpm.WithDefaults(&nfpm.Info{
		Name:          p.Name,
		Arch:          "all",
		Platform:      "linux",
		Version:       p.Version,
		VersionSchema: "none",
		Section:       "misc",
		Priority:      "optional",
		Maintainer:    debMaintainer,
		Description:   debSynopsis + "\n" + debLongDesc,
		MTime:         mtime,
		Overridables: nfpm.Overridables{
			Umask: 0o022,
			Contents: files.Contents{{
				Source: src, Destination: "/usr/share/" + p.Name + "/version", Type: files.TypeFile,
				FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: 0o644, MTime: mtime},
			}},
		},
	})
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return nil, fmt.Errorf("deb: %s: %w", p.FileName(), err)
	}
	var b bytes.Buffer
	if err := deb.Default.Package(info, &b); err != nil {
		return nil, fmt.Errorf("deb: %s: %w", p.FileName(), err)
	}
	return b.Bytes(), nil
}

// Control is the control file of a built .deb: what dpkg-scanpackages
// writes as the package's stanza in a Packages index. The index must
// carry the package's own fields: apt tells two builds of one version
// apart by fields such as Installed-Size, and would offer the repository's
// "1.1" as an upgrade over an installed 1.1 whose fields differ.
func Control(deb []byte) (string, error) {
	r := ar.NewReader(bytes.NewReader(deb))
	for {
		h, err := r.Next()
		if err != nil {
			return "", fmt.Errorf("deb: no control.tar.gz: %w", err)
		}
		if strings.TrimSuffix(h.Name, "/") != "control.tar.gz" {
			continue
		}
		zr, err := gzip.NewReader(r)
		if err != nil {
			return "", fmt.Errorf("deb: control.tar.gz: %w", err)
		}
		tr := tar.NewReader(zr)
		for {
			th, err := tr.Next()
			if err != nil {
				return "", fmt.Errorf("deb: control.tar.gz has no control file: %w", err)
			}
			if strings.TrimPrefix(th.Name, "./") == "control" {
				b, err := io.ReadAll(tr)
				return string(b), err
			}
		}
	}
}
