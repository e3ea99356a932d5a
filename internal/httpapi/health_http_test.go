package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// TestHealthOutsideAPI: /health and /healthz answer the health check (same
// JSON and status as /api/v1/health, 503 once the database is gone), and
// no API or health path ever gets the web UI's page; client-side routes
// still do.
func TestHealthOutsideAPI(t *testing.T) {
	const page = "<!doctype html><title>LCM</title>"
	st := storetest.Open(t, "")
	s := New(Deps{Store: st, Log: quietLog, Web: fstest.MapFS{"index.html": {Data: []byte(page)}}})
	get := func(method, path string) (int, string, string) {
		t.Helper()
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, path, nil)
		r.RemoteAddr = "192.0.2.1:40000"
		s.Handler().ServeHTTP(w, r)
		return w.Code, w.Header().Get("Content-Type"), w.Body.String()
	}
	health := func(path string, wantCode int, wantStatus string) {
		t.Helper()
		code, ct, body := get(http.MethodGet, path)
		var h struct {
			Status string `json:"status"`
		}
		if code != wantCode || !strings.HasPrefix(ct, "application/json") || json.Unmarshal([]byte(body), &h) != nil || h.Status != wantStatus {
			t.Fatalf("GET %s: %d %s %s, want %d {status: %s}", path, code, ct, body, wantCode, wantStatus)
		}
	}
	for _, p := range []string{"/api/v1/health", "/health", "/healthz"} {
		health(p, http.StatusOK, "ok")
	}
	notUI := []struct{ method, path string }{
		{"GET", "/api"}, {"GET", "/api/"}, {"GET", "/api/v2/servers"}, {"GET", "/api/v1/nope"}, {"GET", "/api/health"},
		{"GET", "/v1/servers"}, {"GET", "/health/live"}, {"GET", "/healthz/ready"}, {"HEAD", "/health"},
		{"POST", "/health"},
	}
	for _, r := range notUI {
		code, ct, body := get(r.method, r.path)
		if code < 400 || strings.Contains(body, page) || (r.method != "HEAD" && !strings.HasPrefix(ct, "application/json")) {
			t.Errorf("%s %s: %d %s %q, want a JSON error and never the web page", r.method, r.path, code, ct, body)
		}
	}
	for _, p := range []string{"/", "/servers", "/jobs/abc", "/healthy-servers"} {
		if code, _, body := get(http.MethodGet, p); code != http.StatusOK || body != page {
			t.Errorf("GET %s: %d %q, want the web page", p, code, body)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/api/v1/health", "/health", "/healthz"} {
		health(p, http.StatusServiceUnavailable, "unhealthy")
	}
}
