// Package advisoriestest serves an OSV advisory source for tests, laid
// out as osv.dev's export bucket (https://osv-vulnerabilities.storage.googleapis.com):
// <ecosystem>/modified_id.csv ("<modified>,<id>" per line, newest first),
// <ecosystem>/<id>.json and <ecosystem>/all.zip. The records are the real
// published ones shipped in internal/vulndb/testdata/osv (see its
// README.md for where each comes from); the modified_id.csv lines are
// written from those records' own "modified" fields, which is how
// osv.dev's exporter writes the file.
package advisoriestest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/lcmproject/lcm/internal/vulndb"
	"github.com/lcmproject/lcm/internal/vulndb/vulndbtest"
)

// Source is a running fake source. Publish makes a fixture record
// visible; only published records are listed, served and zipped.
type Source struct {
	Srv *httptest.Server
	mu  sync.Mutex
	pub map[string]map[string][]byte // ecosystem → id → record
	// Requests counts requests per path.
	Requests map[string]int
	down     bool
}

// New starts a source with nothing published.
func New(t testing.TB) *Source {
	t.Helper()
	s := &Source{pub: map[string]map[string][]byte{}, Requests: map[string]int{}}
	s.Srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Srv.Close)
	return s
}

// URL is the base URL.
func (s *Source) URL() string { return s.Srv.URL }

// SetDown makes every request fail with 503 (an unreachable source).
func (s *Source) SetDown(down bool) { s.mu.Lock(); s.down = down; s.mu.Unlock() }

// Count returns the requests made for path.
func (s *Source) Count(path string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.Requests[path] }

// Publish makes the fixture records ecosystem/id visible.
func (s *Source) Publish(t testing.TB, eco string, ids ...string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(vulndbtest.FixtureDir(), eco, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if s.pub[eco] == nil {
			s.pub[eco] = map[string][]byte{}
		}
		s.pub[eco][id] = b
	}
}

func (s *Source) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Requests[r.URL.Path]++
	if s.down {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	eco, file, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	recs := s.pub[eco]
	if !ok || recs == nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case file == "modified_id.csv":
		type line struct{ mod, id string }
		var lines []line
		for id, b := range recs {
			rec, err := vulndb.ParseRecord(b)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			lines = append(lines, line{rec.Modified, id})
		}
		sort.Slice(lines, func(i, j int) bool { return lines[i].mod > lines[j].mod })
		for _, l := range lines {
			fmt.Fprintf(w, "%s,%s\n", l.mod, l.id)
		}
	case file == "all.zip":
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for id, b := range recs {
			f, _ := zw.Create(id + ".json")
			_, _ = f.Write(b)
		}
		_ = zw.Close()
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write(buf.Bytes())
	case strings.HasSuffix(file, ".json"):
		b, ok := recs[strings.TrimSuffix(file, ".json")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	default:
		http.NotFound(w, r)
	}
}
