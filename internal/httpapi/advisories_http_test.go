package httpapi

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/inventory"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestAdvisoryRoutes: the early warning over HTTP — off by default (a
// poll is refused), switched on by an administrator, a poll turns the
// real DSA-5724-1 into findings, a manager sees and acknowledges only
// their groups' findings, status and caches answer, bad input is 4xx.
func TestAdvisoryRoutes(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			h, admin, mgr, mine, other := inventoryHarness(t, db.URL)
			adv, src := startAdvisories(t, h.st)
			h.srv = New(Deps{Store: h.st, Bus: h.bus, Dev: true, Log: quietLog,
				ClientAddr: func(r *http.Request) netip.Addr {
					return h.svc.ClientAddr(r.Context(), r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
				},
				Allowed:  func(ip netip.Addr) bool { return h.svc.Allowed(context.Background(), ip) },
				Services: Services{Auth: h.svc, Inventory: inventory.New(h.st, inventory.Options{Log: quietLog}), Advisories: adv}})
			for _, id := range []string{mine, other} {
				ingestOldBookworm(t, h.st, id)
			}
			get := func(tok, path string) resp { return h.do(req{method: http.MethodGet, path: path, token: tok}) }
			post := func(tok, path string) resp { return h.do(req{method: http.MethodPost, path: path, token: tok}) }
			put := func(tok, path string, body any) resp {
				return h.do(req{method: http.MethodPut, path: path, token: tok, body: body})
			}

			if r := post(admin, "/api/v1/security/advisories/poll"); r.code != http.StatusConflict || !strings.Contains(string(r.body), "early_warning_disabled") {
				t.Fatalf("poll while off: %d %s", r.code, r.body)
			}
			if r := put(mgr, "/api/v1/security/advisories/settings", map[string]any{"enabled": true}); r.code != http.StatusForbidden {
				t.Fatalf("manager changes the settings: %d", r.code)
			}
			if r := put(admin, "/api/v1/security/advisories/settings", map[string]any{"base_url": "ftp://mirror"}); r.code != http.StatusBadRequest {
				t.Fatalf("bad base_url: %d %s", r.code, r.body)
			}
			r := put(admin, "/api/v1/security/advisories/settings", map[string]any{"enabled": true})
			if r.code != http.StatusOK || !strings.Contains(string(r.body), `"enabled":true`) || !strings.Contains(string(r.body), src.URL()) {
				t.Fatalf("enable: %d %s", r.code, r.body)
			}
			r = post(mgr, "/api/v1/security/advisories/poll")
			if r.code != http.StatusOK || !strings.Contains(string(r.body), `"findings_created":2`) {
				t.Fatalf("poll: %d %s", r.code, r.body)
			}
			var page earlyWarningPageDTO
			get(mgr, "/api/v1/security/advisories").json(t, &page)
			if page.Total != 1 || page.Items[0].ServerID != mine || page.Items[0].Advisory != "DSA-5724-1" || page.Items[0].ServerName != "inv-mine" {
				t.Fatalf("manager's findings: %+v", page)
			}
			if r := get(mgr, "/api/v1/security/advisories?server_id="+other); r.code != http.StatusNotFound {
				t.Fatalf("manager filters by a foreign server: %d", r.code)
			}
			get(admin, "/api/v1/security/advisories?server_id="+other).json(t, &page)
			foreign := page.Items[0].ID
			if r := post(mgr, "/api/v1/security/advisories/"+strconv.FormatUint(foreign, 10)+"/acknowledge"); r.code != http.StatusNotFound {
				t.Fatalf("manager acknowledges a foreign finding: %d", r.code)
			}
			get(mgr, "/api/v1/security/advisories").json(t, &page)
			var ack earlyWarningDTO
			r = post(mgr, "/api/v1/security/advisories/"+strconv.FormatUint(page.Items[0].ID, 10)+"/acknowledge")
			r.json(t, &ack)
			if r.code != http.StatusOK || ack.AcknowledgedBy != "invmgr" || ack.AcknowledgedAt == nil {
				t.Fatalf("ack: %d %s", r.code, r.body)
			}
			if get(mgr, "/api/v1/security/advisories").json(t, &page); page.Total != 0 {
				t.Fatalf("acknowledged finding still listed: %+v", page)
			}
			if get(mgr, "/api/v1/security/advisories?state=acknowledged").json(t, &page); page.Total != 1 {
				t.Fatalf("acknowledged filter: %+v", page)
			}
			var st struct {
				Open, Acknowledged int
				LastPoll           *struct{} `json:"last_poll"`
			}
			get(mgr, "/api/v1/security/advisories/status").json(t, &st)
			if st.Open != 0 || st.Acknowledged != 1 || st.LastPoll == nil {
				t.Fatalf("manager's status: %+v", st)
			}
			r = get(mgr, "/api/v1/security/caches")
			if r.code != http.StatusOK || !strings.Contains(string(r.body), `"name":"advisory_records"`) || !strings.Contains(string(r.body), `"name":"scanner_match"`) {
				t.Fatalf("caches: %d %s", r.code, r.body)
			}
			if r := post(mgr, "/api/v1/security/advisories/mirror"); r.code != http.StatusForbidden {
				t.Fatalf("manager mirrors: %d", r.code)
			}
			for _, tc := range []struct {
				method, path string
				code         int
			}{
				{http.MethodGet, "/api/v1/security/advisories?severity=extreme", 400},
				{http.MethodGet, "/api/v1/security/advisories?state=gone", 400},
				{http.MethodGet, "/api/v1/security/advisories?limit=x", 400},
				{http.MethodPost, "/api/v1/security/advisories/abc/acknowledge", 404},
				{http.MethodPost, "/api/v1/security/advisories/99999/acknowledge", 404},
			} {
				if r := h.do(req{method: tc.method, path: tc.path, token: admin}); r.code != tc.code || !strings.Contains(string(r.body), `"code"`) {
					t.Errorf("%s %s: %d %s", tc.method, tc.path, r.code, r.body)
				}
			}
		})
	}
}
