package testutil

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// DebPackage is a tiny Debian binary package built for a test:
// Architecture all, one file (/usr/share/<Name>/version, holding
// Version), no dependencies and no maintainer scripts, so installing or
// upgrading it changes nothing else on a host.
type DebPackage struct {
	Name    string
	Version string
}

// FileName is the package's file name as Debian's pool has it
// ("lcm-stale-probe_1.1_all.deb").
func (p DebPackage) FileName() string { return p.Name + "_" + p.Version + "_all.deb" }

// control is the package's control stanza, each line ending in "\n".
func (p DebPackage) control() string {
	return fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: LCM tests <lcm@lcmproject.invalid>\n"+
		"Installed-Size: 1\nSection: misc\nPriority: optional\nDescription: LCM test package\n"+
		" Built by internal/testutil for tests that install and upgrade a package on a test host.\n", p.Name, p.Version)
}

// BuildDeb writes p as a .deb the way dpkg-deb --build does: an ar
// archive of debian-binary, control.tar.gz and data.tar.gz, every file
// dated mtime. No packaging tool is needed on the machine.
func BuildDeb(p DebPackage, mtime time.Time) ([]byte, error) {
	if p.Name == "" || p.Version == "" {
		return nil, fmt.Errorf("deb: package %+v needs a Name and a Version", p)
	}
	control, err := tarGz(mtime, map[string]string{"./control": p.control()})
	if err != nil {
		return nil, err
	}
	data, err := tarGz(mtime, map[string]string{"./usr/share/" + p.Name + "/version": p.Version + "\n"})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("!<arch>\n")
	for _, m := range []struct {
		name string
		data []byte
	}{{"debian-binary", []byte("2.0\n")}, {"control.tar.gz", control}, {"data.tar.gz", data}} {
		// An ar member header: name, mtime, uid, gid, octal mode, size,
		// magic; the member is padded to an even length.
		fmt.Fprintf(&b, "%-16s%-12d%-6d%-6d%-8s%-10d`\n", m.name, mtime.Unix(), 0, 0, "100644", len(m.data))
		b.Write(m.data)
		if len(m.data)%2 == 1 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

// tarGz is a gzip'd tar of files (path "./…" → content) owned by root,
// each directory before what it holds.
func tarGz(mtime time.Time, files map[string]string) ([]byte, error) {
	names := []string{"./"}
	seen := map[string]bool{"./": true}
	for name := range files {
		names = append(names, name)
		for d := path.Dir(strings.TrimPrefix(name, "./")); d != "."; d = path.Dir(d) {
			if dir := "./" + d + "/"; !seen[dir] {
				seen[dir] = true
				names = append(names, dir)
			}
		}
	}
	slices.Sort(names) // "./a/" sorts before "./a/b"
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, name := range names {
		h := &tar.Header{Name: name, ModTime: mtime, Uname: "root", Gname: "root", Format: tar.FormatGNU,
			Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[name]))}
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
