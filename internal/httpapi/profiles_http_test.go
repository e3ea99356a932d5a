package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/linuxusers"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestProfilesHTTP is the HTTP contract of privilege profiles and blocks:
// permissions, 400 with the rejection's own code and every rejected rule in
// details, the audited danger confirmation naming rule and person, 409s,
// the family preview, and 404s.
func TestProfilesHTTP(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dbURL: db.URL, no2FA: true})
			lu := linuxusers.New(h.st, nil, quietLog)
			if err := lu.SeedBuiltins(context.Background()); err != nil {
				t.Fatal(err)
			}
			h.srv.deps.Services.LinuxUsers = lu
			adm := h.login("admin", adminPW)
			h.createUser(adm, "mara", "Quiet-Lantern-83q", "manager")
			mgr := h.login("mara", "Quiet-Lantern-83q")

			// A manager has no profiles permission at all.
			if r := h.do(req{method: http.MethodGet, path: "/api/v1/privilege-profiles", token: mgr}); r.code != http.StatusForbidden {
				t.Fatalf("manager list: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: http.MethodPost, path: "/api/v1/privilege-profiles", token: mgr, body: map[string]any{"name": "x"}}); r.code != http.StatusForbidden {
				t.Fatalf("manager create: %d", r.code)
			}

			var list []privProfileDTO
			r := h.do(req{method: http.MethodGet, path: "/api/v1/privilege-profiles", token: adm})
			r.json(t, &list)
			if r.code != 200 || len(list) != 2 || list[0].Name != "Full administrator" && list[1].Name != "Full administrator" {
				t.Fatalf("list: %d %s", r.code, r.body)
			}

			// Rejections: one code per class, every rule in details.
			for code, argv := range map[string][]string{
				"relative_path":         {"systemctl", "status", "ssh"},
				"wildcard":              {"/usr/bin/systemctl", "restart", "ng*"},
				"shell_metacharacter":   {"/usr/bin/du", "$HOME"},
				"comma":                 {"/usr/bin/du", "a,b"},
				"bare_command":          {"/usr/bin/apt-get"},
				"dangerous_unconfirmed": {"/usr/bin/python3"},
			} {
				r := h.do(req{method: http.MethodPost, path: "/api/v1/privilege-profiles", token: adm,
					body: map[string]any{"name": "P " + code, "rules": []map[string]any{{"kind": "command", "argv": argv}}}})
				var body struct {
					Code    string
					Details []struct {
						Code  string
						Index int
					}
				}
				r.json(t, &body)
				if r.code != 400 || body.Code != code || len(body.Details) != 1 || body.Details[0].Code != code {
					t.Fatalf("%s: %d %s", code, r.code, r.body)
				}
			}
			if r := h.do(req{method: http.MethodPost, path: "/api/v1/privilege-profiles", token: adm, body: map[string]any{"name": "x", "rules": "no"}}); r.code != 400 {
				t.Fatalf("bad body: %d", r.code)
			}

			// A confirmed dangerous rule: stored, and audited with rule and person.
			before := h.audits("profile.dangerous_confirmed")
			r = h.do(req{method: http.MethodPost, path: "/api/v1/privilege-profiles", token: adm, body: map[string]any{
				"name": "Log writers", "rules": []map[string]any{
					{"kind": "command", "argv": []string{"/usr/bin/tee", "/var/log/app/marker"}, "confirmed": true},
					{"kind": "command", "argv": []string{"/usr/bin/journalctl", "-u", "app"}},
				}}})
			var p privProfileDTO
			r.json(t, &p)
			if r.code != 201 || p.Group != "lcm-prof-log-writers" || strings.Join(p.Rules[1].Argv, " ") != "/usr/bin/journalctl --no-pager -u app" {
				t.Fatalf("create: %d %s", r.code, r.body)
			}
			if h.audits("profile.dangerous_confirmed") != before+1 {
				t.Fatal("no profile.dangerous_confirmed entry")
			}
			entries, _, err := h.st.ListAudit(context.Background(), store.AuditFilter{Action: "profile.dangerous_confirmed", Limit: 1})
			if err != nil || entries[0].Actor != "admin" || entries[0].Details["rule"] != "/usr/bin/tee /var/log/app/marker" || entries[0].Target != "profile:"+p.ID {
				t.Fatalf("entry %+v %v", entries, err)
			}

			// Rendered for a family.
			r = h.do(req{method: http.MethodGet, path: "/api/v1/privilege-profiles/" + p.ID + "?family=apt", token: adm})
			r.json(t, &p)
			if r.code != 200 || p.Rendered == nil || !strings.Contains(p.Rendered.Sudoers, "%lcm-prof-log-writers ALL=(root) NOPASSWD: /usr/bin/tee /var/log/app/marker\n") {
				t.Fatalf("rendered: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: http.MethodGet, path: "/api/v1/privilege-profiles/" + p.ID + "?family=beos", token: adm}); r.code != 400 {
				t.Fatalf("bad family: %d", r.code)
			}
			if r := h.do(req{method: http.MethodGet, path: "/api/v1/privilege-profiles/nope", token: adm}); r.code != 404 {
				t.Fatalf("unknown: %d", r.code)
			}

			// Built-ins: 409 on change.
			var full privProfileDTO
			for _, x := range list {
				if x.Kind == "full_admin" {
					full = x
				}
			}
			if r := h.do(req{method: http.MethodPatch, path: "/api/v1/privilege-profiles/" + full.ID, token: adm, body: map[string]any{"name": "x"}}); r.code != 409 {
				t.Fatalf("patch built-in: %d", r.code)
			}
			if r := h.do(req{method: http.MethodDelete, path: "/api/v1/privilege-profiles/" + full.ID, token: adm}); r.code != 409 {
				t.Fatalf("delete built-in: %d", r.code)
			}

			// Blocks: list, preview, usage.
			var blocks []blockDTO
			h.do(req{method: http.MethodGet, path: "/api/v1/profile-blocks", token: adm}).json(t, &blocks)
			var nginx blockDTO
			for _, b := range blocks {
				if b.Slug == "nginx-operate" {
					nginx = b
				}
			}
			if len(blocks) < 20 || nginx.ID == "" || len(nginx.Families) != 5 {
				t.Fatalf("blocks: %d %+v", len(blocks), nginx)
			}
			var prev linuxusers.BlockPreview
			r = h.do(req{method: http.MethodPost, path: "/api/v1/profile-blocks/" + nginx.ID + "/preview", token: adm, body: map[string]any{"family": "pacman"}})
			r.json(t, &prev)
			if r.code != 200 || !strings.HasPrefix(prev.Sudoers, "%lcm-prof-preview ALL=(root) NOPASSWD: /usr/bin/nginx -t\n") {
				t.Fatalf("preview: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: http.MethodPost, path: "/api/v1/profile-blocks/" + nginx.ID + "/preview", token: mgr, body: map[string]any{"family": "apt"}}); r.code != 403 {
				t.Fatalf("manager preview: %d", r.code)
			}
			r = h.do(req{method: http.MethodPatch, path: "/api/v1/privilege-profiles/" + p.ID, token: adm,
				body: map[string]any{"blocks": []map[string]any{{"block_id": nginx.ID, "params": map[string]string{}}}}})
			if r.code != 200 {
				t.Fatalf("use block: %d %s", r.code, r.body)
			}
			var usage []privProfileDTO
			h.do(req{method: http.MethodGet, path: "/api/v1/profile-blocks/" + nginx.ID + "/usage", token: adm}).json(t, &usage)
			if len(usage) != 1 || usage[0].ID != p.ID {
				t.Fatalf("usage %+v", usage)
			}
			if r := h.do(req{method: http.MethodDelete, path: "/api/v1/profile-blocks/" + nginx.ID, token: adm}); r.code != 409 {
				t.Fatalf("delete built-in block: %d", r.code)
			}
			if r := h.do(req{method: http.MethodDelete, path: "/api/v1/privilege-profiles/" + p.ID, token: adm}); r.code != 204 {
				t.Fatalf("delete: %d %s", r.code, r.body)
			}
		})
	}
}
