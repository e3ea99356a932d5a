package containers

import (
	"archive/tar"
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestContainersDpkgStatus(t *testing.T) {
	status := `Package: libssl3
Status: install ok installed
Priority: optional
Architecture: amd64
Source: openssl (3.0.15-1~deb12u1)
Version: 3.0.15-1~deb12u1
Description: Secure Sockets Layer toolkit
 a continuation line

Package: base-files
Status: install ok installed
Architecture: amd64
Version: 12.4+deb12u8

Package: removed
Status: deinstall ok config-files
Version: 1.0
`
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	_ = tw.WriteHeader(&tar.Header{Name: "status", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(status))})
	_, _ = tw.Write([]byte(status))
	_ = tw.Close()
	b, err := FileFromTar(tb.Bytes())
	if err != nil || string(b) != status {
		t.Fatalf("from tar: %v", err)
	}
	ps := ParseDpkgStatus(b)
	want := []Package{{Name: "libssl3", Version: "3.0.15-1~deb12u1", Arch: "amd64", Source: "openssl"}, {Name: "base-files", Version: "12.4+deb12u8", Arch: "amd64", Source: "base-files"}}
	if len(ps) != len(want) || ps[0] != want[0] || ps[1] != want[1] {
		t.Fatalf("packages %+v", ps)
	}
	if id, v := ParseOSRelease([]byte("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n")); id != "debian" || v != "12" {
		t.Fatalf("os-release %s %s", id, v)
	}
	if _, err := FileFromTar([]byte("not a tar")); err == nil {
		t.Fatal("garbage read as a tar")
	}
}

// TestContainersApkInstalled: apk's database (a verbatim excerpt of
// Alpine 3.14's, testdata/README.md) gives name, version, architecture and
// origin as the source package; table cases cover the edges of the format.
func TestContainersApkInstalled(t *testing.T) {
	excerpt, err := os.ReadFile("testdata/alpine-3.14-armv7-apk-installed")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   string
		want []Package
	}{
		{"alpine 3.14 excerpt", string(excerpt), []Package{
			{Name: "musl", Version: "1.2.2-r3", Arch: "armv7", Source: "musl"},
			{Name: "libcrypto1.1", Version: "1.1.1k-r0", Arch: "armv7", Source: "openssl"},
			{Name: "libssl1.1", Version: "1.1.1k-r0", Arch: "armv7", Source: "openssl"},
			{Name: "zlib", Version: "1.2.11-r3", Arch: "armv7", Source: "zlib"},
			{Name: "libc-utils", Version: "0.7.2-r3", Arch: "armv7", Source: "libc-dev"},
			{Name: "ssl_client", Version: "1.33.1-r3", Arch: "armv7", Source: "busybox"},
		}},
		{"no origin: the package is its own source", "P:busybox\nV:1.36.1-r29\nA:x86_64\n", []Package{
			{Name: "busybox", Version: "1.36.1-r29", Arch: "x86_64", Source: "busybox"}}},
		{"CRLF and no blank line at the end", "P:zlib\r\nV:1.3.1-r1\r\no:zlib\r\n", []Package{
			{Name: "zlib", Version: "1.3.1-r1", Source: "zlib"}}},
		{"records without name or version are skipped", "P:nover\nA:x86_64\n\nV:1.0-r0\n\n\n\nP:ok\nV:2-r0\n", []Package{
			{Name: "ok", Version: "2-r0", Source: "ok"}}},
		{"lines that are no field are ignored", "garbage\nP:a\n:x\nV:1-r0\nlong line without colon\n", []Package{
			{Name: "a", Version: "1-r0", Source: "a"}}},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseApkInstalled([]byte(tc.in))
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("package %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func FuzzParseApkInstalled(f *testing.F) {
	if excerpt, err := os.ReadFile("testdata/alpine-3.14-armv7-apk-installed"); err == nil {
		f.Add(excerpt)
	}
	f.Add([]byte("P:zlib\nV:1.3.1-r1\nA:x86_64\no:zlib\n\n"))
	f.Add([]byte("P:\nV:\n\r\n:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range ParseApkInstalled(b) {
			if p.Name == "" || p.Version == "" || p.Source == "" {
				t.Fatalf("incomplete package %+v", p)
			}
			if strings.ContainsAny(p.Name+p.Version+p.Arch+p.Source, "\n") {
				t.Fatalf("a field spans lines: %+v", p)
			}
		}
	})
}
