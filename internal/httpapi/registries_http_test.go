package httpapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/registrysvc"
	"github.com/lcmproject/lcm/internal/testutil"
)

// TestRegistriesHTTP: an administrator stores, changes, tests and deletes
// registry credentials against a real registry with Basic
// authentication; the password never comes back; a manager without
// settings:manage is refused.
func TestRegistriesHTTP(t *testing.T) {
	reg := testutil.StartRegistry(t, testutil.RegistryOptions{Htpasswd: map[string]string{"ci": "Pass-Word-1"}})
	h := newHarness(t, harnessOpts{no2FA: true})
	h.srv.deps.Services.Registries = registrysvc.New(h.st, registrysvc.Options{Log: quietLog})
	adm := h.login("admin", adminPW)
	h.createUser(adm, "mona", "Silver-Canyon-Road-28", domain.RoleManager)
	mgr := h.login("mona", "Silver-Canyon-Road-28")

	const base = "/api/v1/settings/registries"
	assert.Equal(t, 403, h.do(req{method: "GET", path: base, token: mgr}).code)
	assert.Equal(t, 403, h.do(req{method: "POST", path: base, token: mgr, body: map[string]any{"host": "ghcr.io"}}).code)

	r := h.do(req{method: "POST", path: base, token: adm, body: map[string]any{"host": reg.Host, "username": "ci", "password": "wrong-pass", "plain_http": true}})
	require.Equal(t, 201, r.code, string(r.body))
	assert.NotContains(t, string(r.body), "wrong-pass")
	var got registrysvc.Registry
	r.json(t, &got)
	assert.True(t, got.HasPassword)
	assert.Contains(t, string(r.body), `"has_password":true`)

	r = h.do(req{method: "POST", path: base + "/" + got.ID + "/test", token: adm})
	require.Equal(t, 200, r.code, string(r.body))
	assert.Contains(t, string(r.body), `"ok":false`)
	assert.Contains(t, string(r.body), `"reason":"unauthorized"`)

	r = h.do(req{method: "PUT", path: base + "/" + got.ID, token: adm, body: map[string]any{"password": "Pass-Word-1"}})
	require.Equal(t, 200, r.code, string(r.body))
	r = h.do(req{method: "POST", path: base + "/" + got.ID + "/test", token: adm})
	require.Equal(t, 200, r.code, string(r.body))
	assert.Contains(t, string(r.body), `"ok":true`)

	for _, body := range []map[string]any{{"host": "https://ghcr.io"}, {"host": "ghcr.io", "password": "x"}, {"host": strings.Repeat("a", 300)}, {}} {
		r = h.do(req{method: "POST", path: base, token: adm, body: body})
		assert.Equal(t, 400, r.code, "%v: %s", body, r.body)
	}
	assert.Equal(t, 409, h.do(req{method: "POST", path: base, token: adm, body: map[string]any{"host": reg.Host}}).code)

	r = h.do(req{method: "GET", path: base, token: adm})
	require.Equal(t, 200, r.code)
	assert.NotContains(t, string(r.body), "Pass-Word-1")
	assert.Contains(t, string(r.body), reg.Host)

	assert.Equal(t, 204, h.do(req{method: "DELETE", path: base + "/" + got.ID, token: adm}).code)
	assert.Equal(t, 404, h.do(req{method: "DELETE", path: base + "/" + got.ID, token: adm}).code)
	assert.Equal(t, 404, h.do(req{method: "POST", path: base + "/" + got.ID + "/test", token: adm}).code)
}
