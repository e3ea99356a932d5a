package containers

import (
	"archive/tar"
	"bytes"
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
