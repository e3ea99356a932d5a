package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/debpkg"
)

// runPackages: release packages [-repo .] [-bin bin] [-out dist]
// [-version X.Y.Z] [-arch amd64] builds the Debian packages lcm,
// lcm-worker and lcm-agent from the binaries of `make build`. The version
// defaults to the VERSION file.
func runPackages(args []string, out io.Writer, now time.Time) error {
	fs := flag.NewFlagSet("release packages", flag.ContinueOnError)
	repo := fs.String("repo", ".", "the repository's working tree")
	bin := fs.String("bin", "", "the binaries (default <repo>/bin)")
	dist := fs.String("out", "", "where the .deb files go (default <repo>/dist)")
	version := fs.String("version", "", "X.Y.Z or X.Y.Z-beta.N (default: the VERSION file)")
	arch := fs.String("arch", "amd64", "Debian architecture: amd64 or arm64")
	maint := fs.String("maintainer", debpkg.DefaultMaintainer, "the Maintainer field")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v := *version
	if v == "" {
		b, err := os.ReadFile(filepath.Join(*repo, "VERSION"))
		if err != nil {
			return err
		}
		v = strings.TrimSpace(string(b))
	}
	pkgs, err := debpkg.Build(debpkg.Options{Repo: *repo, Bin: *bin, Out: *dist, Version: v, Arch: *arch, Maintainer: *maint, MTime: now})
	if err != nil {
		return err
	}
	for _, p := range pkgs {
		fmt.Fprintf(out, "%s %s %s\n", p.Name, p.Version, p.Path)
	}
	return nil
}
