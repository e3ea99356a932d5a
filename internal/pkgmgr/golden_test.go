package pkgmgr

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// golden compares got with testdata/name; with -update it rewrites the file.
// Non-string values are compared as indented JSON.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	var b []byte
	if s, ok := got.(string); ok {
		b = []byte(s)
	} else {
		var err error
		b, err = json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		b = append(b, '\n')
	}
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing; run go test -update")
	require.Equal(t, string(want), string(b))
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}
