// Package vulndbtest builds OSV export directories (<ecosystem>/all.zip)
// from the shipped fixture records for tests and benchmarks.
package vulndbtest

import (
	"archive/zip"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// FixtureDir is the directory of the shipped records the scanner tests
// use (one subdirectory per ecosystem, one <ID>.json per record; see the
// README.md beside it).
func FixtureDir() string { return testdataDir("osv") }

// PublishedDir holds records copied verbatim from published sources, one
// subdirectory per ecosystem (testdata/README.md says where each is from).
func PublishedDir() string { return testdataDir("osv-published") }

// ShapedDir holds records for the ecosystems no published record could
// be copied for here (Red Hat family, SUSE): written in each database's
// record shape, with ids marking them as LCM's own.
func ShapedDir() string { return testdataDir("osv-shaped") }

func testdataDir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", name)
}

// Build zips every ecosystem directory of FixtureDir into
// dir/<ecosystem>/all.zip, the official export layout, and returns dir.
func Build(tb testing.TB) string {
	tb.Helper()
	return BuildFrom(tb, FixtureDir())
}

// BuildFrom is Build over the ecosystem directories of src.
func BuildFrom(tb testing.TB, src string) string {
	tb.Helper()
	dir := tb.TempDir()
	ecos, err := os.ReadDir(src)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ecos {
		if !e.IsDir() {
			continue
		}
		if err := ZipDir(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name(), "all.zip")); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// ZipDir writes the *.json files of src into the zip file dst, flat, as
// the OSV export does.
func ZipDir(src, dst string) error {
	files, err := filepath.Glob(filepath.Join(src, "*.json"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Close()
			return err
		}
		w, err := zw.Create(filepath.Base(p))
		if err != nil {
			f.Close()
			return err
		}
		if _, err := w.Write(b); err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
