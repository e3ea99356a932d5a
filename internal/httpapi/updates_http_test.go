package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/updates"
)

// testFeed is the release feed the API tests serve: 1.3.0 on community,
// 1.4.0-beta.1 on beta.
const testFeed = `{"schema": 1, "channels": {
  "community": [{"version": "1.3.0", "published_at": "2026-11-20T10:00:00Z", "notes_url": "https://example.org/v1.3.0",
                 "checksums": {"lcm_1.3.0_amd64.deb": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}],
  "beta": [{"version": "1.4.0-beta.1", "published_at": "2026-11-21T10:00:00Z"}]}}`

// testUpdates is an update service for the running version 1.2.0 against
// an httptest feed.
func testUpdates(t *testing.T, st *store.Store) *updates.Service {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(testFeed))
	}))
	t.Cleanup(srv.Close)
	return updates.New(updates.Options{Store: st, FeedURL: srv.URL, Current: "1.2.0", DailyCheck: true})
}

func TestUpdatesRoutes(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			e := newFullEnv(t, db.URL)
			adm := e.login("admin", adminPW)
			info := func(token string) (int, map[string]any) {
				r := e.do(req{method: http.MethodGet, path: "/api/v1/system/update-info", token: token})
				var m map[string]any
				_ = json.Unmarshal(r.body, &m)
				return r.code, m
			}
			if code, _ := info(""); code != http.StatusUnauthorized {
				t.Errorf("anonymous update-info: %d", code)
			}
			code, m := info(adm)
			if code != http.StatusOK || m["update_available"] != false || m["last"] != nil || m["current"] != "1.2.0" || m["channel"] != "community" {
				t.Fatalf("before a check: %d %v", code, m)
			}
			r := e.do(req{method: http.MethodPost, path: "/api/v1/system/update-check", token: adm})
			if r.code != http.StatusOK {
				t.Fatalf("update-check: %d %s", r.code, r.body)
			}
			code, m = info(adm)
			last, _ := m["last"].(map[string]any)
			latest, _ := last["latest"].(map[string]any)
			if code != http.StatusOK || m["update_available"] != true || latest["version"] != "1.3.0" || latest["notes_url"] != "https://example.org/v1.3.0" {
				t.Fatalf("after a check: %d %v", code, m)
			}
			entries, n, err := e.st.ListAudit(context.Background(), store.AuditFilter{Action: "system.update_checked", Limit: 10})
			if err != nil || n != 1 || entries[0].Target != "system:update" {
				t.Errorf("audit entries: %d %+v, %v", n, entries, err)
			}
		})
	}
}
