package containers

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DpkgStatusPath, ApkInstalledPath and OSReleasePaths are what a
// CVE-relevant container's packages are read from: dpkg's database
// (Debian, Ubuntu) or else apk's (Alpine), and the release (os-release is
// usually a link into /usr/lib).
const (
	DpkgStatusPath   = "/var/lib/dpkg/status"
	ApkInstalledPath = "/lib/apk/db/installed"
)

// OSReleasePaths are tried in order.
var OSReleasePaths = []string{"/usr/lib/os-release", "/etc/os-release"}

// CopyOutCommand copies one file out of a container as a tar stream on
// stdout (`docker cp` / `podman cp NAME:PATH -`): it needs no shell in the
// container and works on stopped containers too.
func CopyOutCommand(e Engine, container, path string) string {
	return Sudo + string(e) + " cp " + shellQuote(container+":"+path) + " -"
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// FileFromTar returns the first regular file in a tar stream (what `cp …
// -` prints).
func FileFromTar(b []byte) ([]byte, error) {
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: no regular file in the copy", ErrFormat)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		if h.Typeflag == tar.TypeReg {
			return io.ReadAll(io.LimitReader(tr, 64<<20))
		}
	}
}

// ParseDpkgStatus reads dpkg's status file: the installed packages
// ("Status: install ok installed"), with architecture and source package
// (the Source field without its version; the package itself when absent).
func ParseDpkgStatus(b []byte) []Package {
	var out []Package
	var cur Package
	installed := false
	flush := func() {
		if installed && cur.Name != "" && cur.Version != "" {
			if cur.Source == "" {
				cur.Source = cur.Name
			}
			out = append(out, cur)
		}
		cur, installed = Package{}, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // continuation of a multi-line field
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Package":
			cur.Name = v
		case "Version":
			cur.Version = v
		case "Architecture":
			cur.Arch = v
		case "Source":
			cur.Source, _, _ = strings.Cut(v, " ")
		case "Status":
			installed = strings.HasSuffix(v, " installed") && strings.HasPrefix(v, "install ")
		}
	}
	flush()
	return out
}

// ParseApkInstalled reads apk's installed database: one record per
// package, records separated by a blank line, one "X:value" field a line.
// P is the name, V the version, A the architecture and o the origin (the
// aport the package was built from, apk's source package; the package
// itself when absent). A record without name or version is skipped.
func ParseApkInstalled(b []byte) []Package {
	var out []Package
	var cur Package
	flush := func() {
		if cur.Name != "" && cur.Version != "" {
			if cur.Source == "" {
				cur.Source = cur.Name
			}
			out = append(out, cur)
		}
		cur = Package{}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			flush()
			continue
		}
		if len(line) < 2 || line[1] != ':' {
			continue
		}
		v := strings.TrimSpace(line[2:])
		switch line[0] {
		case 'P':
			cur.Name = v
		case 'V':
			cur.Version = v
		case 'A':
			cur.Arch = v
		case 'o':
			cur.Source = v
		}
	}
	flush()
	return out
}

// ParseOSRelease returns ID and VERSION_ID of an os-release file.
func ParseOSRelease(b []byte) (id, version string) {
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "ID":
			id = v
		case "VERSION_ID":
			version = v
		}
	}
	return id, version
}
