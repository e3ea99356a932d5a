package httpapi

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/dnsserver"
	"github.com/lcmproject/lcm/internal/recordsvc"
)

// TestDNSStatusHTTP: signed-in callers read where the listener answers.
func TestDNSStatusHTTP(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	svc := recordsvc.New(h.st)
	h.srv.deps.Services.Records = svc
	adm := h.login("admin", adminPW)
	h.createUser(adm, "vic", "Silver-Canyon-Road-28")
	user := h.login("vic", "Silver-Canyon-Road-28")

	assert.Equal(t, 401, h.do(req{method: "GET", path: "/api/v1/dns/status"}).code)
	r := h.do(req{method: "GET", path: "/api/v1/dns/status", token: user})
	require.Equal(t, 200, r.code, string(r.body))
	var st dnsStatusDTO
	r.json(t, &st)
	assert.False(t, st.Enabled)
	assert.Equal(t, []string{}, st.Zones)

	srv := dnsserver.New(dnsserver.Config{Addr: "127.0.0.1:0"})
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	require.NoError(t, recordsvc.NewDNS(h.st, srv, nil).Load(context.Background()))
	svc.SetListener(srv, []netip.Prefix{netip.MustParsePrefix("192.0.2.53/32")})
	r = h.do(req{method: "GET", path: "/api/v1/dns/status", token: user})
	require.Equal(t, 200, r.code)
	r.json(t, &st)
	assert.True(t, st.Enabled)
	assert.True(t, strings.HasPrefix(st.Addr, "127.0.0.1:") && st.Addr != "127.0.0.1:0", st.Addr)
	assert.Equal(t, []string{"192.0.2.53/32"}, st.AXFRAllow)
}
