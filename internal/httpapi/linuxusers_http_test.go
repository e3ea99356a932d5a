package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/linuxusers"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestLinuxUsersHTTP is the catalogue's HTTP contract: permissions, 400
// codes, the private key and the activation token only in their creation
// answers, no password hash in any answer, the public consume with policy
// codes, 404 for a used link and 409 for a duplicate.
func TestLinuxUsersHTTP(t *testing.T) {
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
			post := func(tok, path string, body any) resp {
				return h.do(req{method: http.MethodPost, path: path, token: tok, body: body})
			}
			if r := h.do(req{method: http.MethodGet, path: "/api/v1/linux-users", token: mgr}); r.code != 403 {
				t.Fatalf("manager list: %d", r.code)
			}
			for body, code := range map[string]string{
				`{"username":"root"}`:                           "reserved_username",
				`{"username":"Bad Name"}`:                       "invalid_username",
				`{"username":"ok1","account_type":"superuser"}`: "invalid_account_type",
				`{"username":"ok1","shell":"/usr/bin/python3"}`: "invalid_shell",
				`{"username":"ok1","email":"nope"}`:             "invalid_email",
			} {
				r := h.do(req{method: http.MethodPost, path: "/api/v1/linux-users", token: adm, body: body})
				if r.code != 400 || !strings.Contains(string(r.body), `"code":"`+code+`"`) {
					t.Errorf("%s: %d %s", body, r.code, r.body)
				}
			}
			r := post(adm, "/api/v1/linux-users", map[string]any{"username": "ivan", "full_name": "Ivan Petrov", "email": "ivan@example.org"})
			if r.code != 201 {
				t.Fatalf("create: %d %s", r.code, r.body)
			}
			var u linuxUserDTO
			r.json(t, &u)
			if r := post(adm, "/api/v1/linux-users", map[string]any{"username": "ivan"}); r.code != 409 {
				t.Fatalf("duplicate: %d", r.code)
			}
			if r := h.do(req{method: http.MethodPatch, path: "/api/v1/linux-users/" + u.ID, token: adm, body: map[string]any{"username": "other"}}); r.code != 400 {
				t.Fatalf("rename: %d", r.code)
			}
			// Keys: a small RSA key and options are refused; generate shows the private key once.
			if r := post(adm, "/api/v1/linux-users/"+u.ID+"/keys", map[string]any{"public_key": `command="/bin/sh" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl x`}); r.code != 400 || !strings.Contains(string(r.body), "key_options") {
				t.Fatalf("options: %d %s", r.code, r.body)
			}
			g := post(adm, "/api/v1/linux-users/"+u.ID+"/keys/generate", nil)
			if g.code != 201 || !strings.Contains(string(g.body), "OPENSSH PRIVATE KEY") || g.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("generate: %d %s", g.code, g.body)
			}
			// Activation: the token only in the creation answer.
			l := post(adm, "/api/v1/linux-users/"+u.ID+"/activation-links/generate", nil)
			var link activationLinkDTO
			l.json(t, &link)
			if l.code != 201 || link.Token == "" || !strings.Contains(link.Path, link.Token) {
				t.Fatalf("link: %d %s", l.code, l.body)
			}
			if r := post("", "/api/v1/linux-users/activation-links/consume", map[string]any{"token": link.Token, "password": "Ivan-Petrov-1234x"}); r.code != 400 || !strings.Contains(string(r.body), "contains_identity") {
				t.Fatalf("policy: %d %s", r.code, r.body)
			}
			if r := post("", "/api/v1/linux-users/activation-links/consume", map[string]any{"token": link.Token, "password": "Silver-Orchard-62t"}); r.code != 200 {
				t.Fatalf("consume: %d %s", r.code, r.body)
			}
			if r := post("", "/api/v1/linux-users/activation-links/consume", map[string]any{"token": link.Token, "password": "Silver-Orchard-62t"}); r.code != 404 {
				t.Fatalf("second use: %d", r.code)
			}
			got := h.do(req{method: http.MethodGet, path: "/api/v1/linux-users/" + u.ID, token: adm})
			list := h.do(req{method: http.MethodGet, path: "/api/v1/linux-users", token: adm})
			for _, b := range []string{string(got.body), string(list.body)} {
				if strings.Contains(b, "$6$") || strings.Contains(b, "PRIVATE KEY") || strings.Contains(b, link.Token) || !strings.Contains(b, `"password_set":true`) {
					t.Fatalf("a secret leaks or the state is missing: %s", b)
				}
			}
			// Server routes on an unknown server: 404, never 500.
			if r := post(adm, "/api/v1/servers/nope/sync-users", nil); r.code != 404 {
				t.Fatalf("unknown server: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: http.MethodDelete, path: "/api/v1/linux-users/" + u.ID, token: adm}); r.code != 204 {
				t.Fatalf("delete: %d %s", r.code, r.body)
			}
		})
	}
}
