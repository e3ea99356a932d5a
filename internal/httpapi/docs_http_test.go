package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestDocsRoutes: the embedded docs are public; a slug that is not one is
// refused before any lookup, however it is encoded.
func TestDocsRoutes(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	r := h.do(req{method: http.MethodGet, path: "/api/v1/docs"})
	var list struct {
		Items []struct{ Slug, Title string } `json:"items"`
	}
	if r.code != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Items) < 10 {
		t.Fatalf("list: %d %s", r.code, r.body)
	}
	found := false
	for _, d := range list.Items {
		found = found || (d.Slug == "updates" && d.Title == "Updates")
	}
	if !found {
		t.Errorf("updates.md not listed: %+v", list.Items)
	}
	r = h.do(req{method: http.MethodGet, path: "/api/v1/docs/packages-deb"})
	var page struct{ Slug, Title, Markdown string }
	if r.code != http.StatusOK || json.Unmarshal(r.body, &page) != nil || page.Title != "Debian packages" || !strings.Contains(page.Markdown, "dpkg") {
		t.Fatalf("page: %d %.200s", r.code, r.body)
	}
	for path, want := range map[string]int{
		"/api/v1/docs/no-such-doc": http.StatusNotFound,
		"/api/v1/docs/Install":     http.StatusBadRequest,
		"/api/v1/docs/install.md":  http.StatusBadRequest,
		// Decoded to /api/v1/docs/../../go.mod, which no route matches.
		"/api/v1/docs/..%2f..%2fgo.mod":           http.StatusNotFound,
		"/api/v1/docs/%2e%2e":                     http.StatusBadRequest,
		"/api/v1/docs/embed.go":                   http.StatusBadRequest,
		"/api/v1/docs/" + strings.Repeat("a", 65): http.StatusBadRequest,
	} {
		r := h.do(req{method: http.MethodGet, path: path})
		var body errorBody
		if r.code != want || json.Unmarshal(r.body, &body) != nil || body.Code == "" || body.Error == "" {
			t.Errorf("%s: %d %s, want %d {error, code}", path, r.code, r.body, want)
		}
	}
}
