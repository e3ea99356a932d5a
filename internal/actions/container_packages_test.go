package actions

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/remote"
)

// imageFiles is an executor whose engine answers `cp NAME:PATH -` with the
// files of one image (as a tar stream, exit 1 for a missing file) and
// every other command with exit 0.
type imageFiles map[string][]byte

func (f imageFiles) Run(_ context.Context, c remote.Command) (remote.Result, error) {
	if !strings.Contains(c.Cmd, " cp ") {
		return remote.Result{}, nil
	}
	for path, b := range f {
		if strings.Contains(c.Cmd, ":"+path+"' -") {
			tw := tar.NewWriter(c.Stdout)
			_ = tw.WriteHeader(&tar.Header{Name: path[strings.LastIndex(path, "/")+1:], Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
			_, _ = tw.Write(b)
			_ = tw.Close()
			return remote.Result{}, nil
		}
	}
	return remote.Result{ExitCode: 1}, nil
}

func (imageFiles) Close() error { return nil }

// TestReadContainerPackagesApk: an image without dpkg is read through
// apk's database (Alpine), with the manager recorded; one with neither
// says which databases it looked for.
func TestReadContainerPackagesApk(t *testing.T) {
	apkDB, err := os.ReadFile("../containers/testdata/alpine-3.14-armv7-apk-installed")
	if err != nil {
		t.Fatal(err)
	}
	osRelease := []byte("NAME=\"Alpine Linux\"\nID=alpine\nVERSION_ID=3.14.2\n")
	for _, tc := range []struct {
		name                string
		files               imageFiles
		manager, osVer, err string
		packages            int
	}{
		{"alpine", imageFiles{containers.ApkInstalledPath: apkDB, "/etc/os-release": osRelease}, "apk", "3.14.2", "", 6},
		{"debian", imageFiles{containers.DpkgStatusPath: []byte("Package: zlib1g\nStatus: install ok installed\nVersion: 1:1.2.13.dfsg-1\n"),
			containers.ApkInstalledPath: apkDB, "/usr/lib/os-release": []byte("ID=debian\nVERSION_ID=\"12\"\n")}, "dpkg", "12", "", 1},
		{"neither", imageFiles{"/etc/os-release": osRelease}, "", "", "no package database: dpkg (/var/lib/dpkg/status)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &containerRun{ctx: context.Background(), env: &Env{Exec: tc.files, Out: io.Discard}}
			ip := containers.ImagePackages{Engine: containers.Podman, Container: "web", ImageID: "sha256:0123456789abcdef"}
			err := c.readContainerPackages(&ip)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), containers.ApkInstalledPath) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || ip.Manager != tc.manager || ip.OSVersion != tc.osVer || len(ip.Packages) != tc.packages {
				t.Fatalf("%+v %v", ip, err)
			}
		})
	}
}
