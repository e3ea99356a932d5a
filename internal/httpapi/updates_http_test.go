package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/updates"
)

// testFeed is the release feed the API tests serve, written as the release
// tooling writes it (updates.Feed.Add): 1.3.0 on community, 1.4.0-beta.1
// on beta.
func testFeed(t *testing.T) []byte {
	t.Helper()
	f := updates.NewFeed()
	for _, r := range []struct {
		ch string
		r  updates.Release
	}{
		{"community", updates.Release{Version: "1.3.0", PublishedAt: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC), NotesURL: "https://example.org/v1.3.0",
			Checksums: map[string]string{"lcm_1.3.0_amd64.deb": "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}},
		{"beta", updates.Release{Version: "1.4.0-beta.1", PublishedAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}},
	} {
		if err := f.Add(r.ch, r.r); err != nil {
			t.Fatal(err)
		}
	}
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testUpdates is an update service for the running version 1.2.0 against
// an httptest feed.
func testUpdates(t *testing.T, st *store.Store) *updates.Service {
	t.Helper()
	feed := testFeed(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(feed)
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

			// Self-update: LCM installs nothing itself; it says so, with the
			// steps for the update the check found; POST is refused and
			// changes nothing.
			r = e.do(req{method: http.MethodGet, path: "/api/v1/system/self-update", token: adm})
			var su updates.SelfUpdate
			r.json(t, &su)
			if r.code != http.StatusOK || su.Supported || su.Installation != updates.InstalledBinary || su.Latest != "1.3.0" || !su.UpdateAvailable ||
				fmt.Sprint(su.Packages) != "[lcm_1.3.0_amd64.deb]" || len(su.Instructions) < 2 || su.Docs != "updates" || su.Reason == "" {
				t.Fatalf("self-update status: %d %+v", r.code, su)
			}
			_, before, _ := e.st.ListAudit(context.Background(), store.AuditFilter{Limit: 1})
			r = e.do(req{method: http.MethodPost, path: "/api/v1/system/self-update", token: adm})
			if r.code != http.StatusConflict || r.code2(t) != "self_update_unsupported" {
				t.Fatalf("POST self-update: %d %s", r.code, r.body)
			}
			if _, after, _ := e.st.ListAudit(context.Background(), store.AuditFilter{Limit: 1}); after != before {
				t.Errorf("a refused self-update left %d audit entries", after-before)
			}
			e.createUser(adm, "mgr", "Tq8#vLz2!pR9wXc4", "manager")
			mgr := e.login("mgr", "Tq8#vLz2!pR9wXc4")
			for _, m := range []string{http.MethodGet, http.MethodPost} {
				if r := e.do(req{method: m, path: "/api/v1/system/self-update", token: mgr}); r.code != http.StatusForbidden {
					t.Errorf("manager %s self-update: %d", m, r.code)
				}
			}
		})
	}
}
