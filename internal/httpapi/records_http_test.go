package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lcmproject/lcm/internal/dnsserver"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/recordsvc"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// recEnv is the records routes served in-process over a real store, with a
// test-only middleware that signs the caller in by the X-Test-User header
// (the identity area's cookies are covered by the real-binary tests), and
// an embedded DNS listener fed by the service's change hook.
type recEnv struct {
	t     *testing.T
	ts    *httptest.Server
	st    *store.Store
	users map[string]*domain.Principal
	dns   *dnsserver.Server
}

func newRecEnv(t *testing.T, db testutil.DB) *recEnv {
	t.Helper()
	ctx := context.Background()
	st := storetest.Open(t, db.URL)

	e := &recEnv{t: t, st: st, users: map[string]*domain.Principal{}}
	for _, u := range []string{"owner", "editor", "viewer", "stranger"} {
		e.users[u] = insertUser(t, st, u)
	}
	svc := recordsvc.New(st)
	e.dns = dnsserver.New(dnsserver.Config{Addr: "127.0.0.1:0", AXFRAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	require.NoError(t, e.dns.Start(ctx))
	t.Cleanup(func() { _ = e.dns.Shutdown(context.Background()) })
	sync := recordsvc.NewDNS(st, e.dns, nil)
	require.NoError(t, sync.Load(ctx))
	svc.OnChange(func(ctx context.Context, ids []string) { require.NoError(t, sync.Refresh(ctx, ids)) })

	gin.SetMode(gin.ReleaseMode)
	s := &Server{deps: Deps{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Services: Services{Records: svc}}, engine: gin.New()}
	s.engine.Use(s.recoverPanics(), func(c *gin.Context) {
		if p := e.users[c.GetHeader("X-Test-User")]; p != nil {
			c.Set(ctxPrincipal, p)
		}
		c.Next()
	})
	s.routesRecords()
	e.ts = httptest.NewServer(s.engine)
	t.Cleanup(e.ts.Close)
	return e
}

func insertUser(t *testing.T, st *store.Store, name string) *domain.Principal {
	t.Helper()
	sqlDB, err := st.SQL()
	require.NoError(t, err)
	id := uuid.NewString()
	q := "INSERT INTO users (id, username, is_system, active, totp_enabled, totp_last_step, created_at, updated_at) VALUES (?, ?, false, true, false, 0, ?, ?)"
	if st.Dialect() == store.Postgres {
		q = strings.NewReplacer("(?, ?, false", "($1, $2, false", "0, ?, ?)", "0, $3, $4)").Replace(q)
	}
	now := time.Now().UTC()
	_, err = sqlDB.Exec(q, id, name, now, now)
	require.NoError(t, err)
	return &domain.Principal{UserID: id, Username: name, Method: domain.AuthSession}
}

// do sends a request as user and decodes the JSON answer into out.
func (e *recEnv) do(user, method, path string, body any, out any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		require.NoError(e.t, json.Unmarshal(raw, out), "%s %s: %s", method, path, raw)
	}
	return resp.StatusCode, raw
}

// must is do that expects status.
func (e *recEnv) must(status int, user, method, path string, body, out any) {
	e.t.Helper()
	got, raw := e.do(user, method, path, body, out)
	require.Equal(e.t, status, got, "%s %s as %s: %s", method, path, user, raw)
}

// dig queries the embedded listener with the real dig.
func (e *recEnv) dig(args ...string) string {
	e.t.Helper()
	return digAt(e.t, e.dns.Addr(), args...)
}

func digAt(t *testing.T, addr string, args ...string) string {
	t.Helper()
	bin := testutil.RequireTool(t, "dig")
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	all := append([]string{"@" + host, "-p", port, "+norec", "+time=3", "+tries=1"}, args...)
	out, err := exec.Command(bin, all...).CombinedOutput()
	require.NoError(t, err, "dig %v:\n%s", all, out)
	return string(out)
}

// short returns dig +short answers, sorted.
func (e *recEnv) short(name, typ string) []string {
	e.t.Helper()
	out := strings.Fields(e.dig("+short", name, typ))
	sort.Strings(out)
	return out
}

// checkZone runs named-checkzone on an exported zone file.
func checkZone(t *testing.T, origin string, file []byte) {
	t.Helper()
	bin := testutil.RequireTool(t, "named-checkzone")
	path := filepath.Join(t.TempDir(), "zone")
	require.NoError(t, os.WriteFile(path, file, 0o600))
	out, err := exec.Command(bin, "-k", "fail", "-n", "fail", "-i", "full", origin, path).CombinedOutput()
	require.NoError(t, err, "named-checkzone rejected %s:\n%s\n%s", origin, out, file)
	assert.Contains(t, string(out), "OK")
}

func TestRecordsHTTP(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) { testRecordsHTTP(t, newRecEnv(t, db)) })
	}
}

func testRecordsHTTP(t *testing.T, e *recEnv) {
	var project projectDTO
	e.must(201, "owner", "POST", "/api/v1/projects/create", map[string]any{"name": "web"}, &project)
	e.must(201, "owner", "POST", "/api/v1/projects/"+project.ID+"/members/add", map[string]any{"userId": e.users["editor"].UserID, "role": "editor"}, nil)
	e.must(201, "owner", "POST", "/api/v1/projects/"+project.ID+"/members/add", map[string]any{"userId": e.users["viewer"].UserID, "role": "viewer"}, nil)

	// Errors: 401, malformed uuid → 400, unknown → 404, bad body → 400, all {error}.
	for _, c := range []struct {
		user, method, path string
		body               any
		status             int
	}{
		{"", "GET", "/api/v1/projects", nil, 401},
		{"owner", "GET", "/api/v1/projects/not-a-uuid", nil, 400},
		{"owner", "POST", "/api/v1/zones/123/update", map[string]any{}, 400},
		{"owner", "GET", "/api/v1/zones/" + uuid.NewString(), nil, 404},
		{"owner", "POST", "/api/v1/sync-groups/" + uuid.NewString() + "/update-sets", map[string]any{"sets": []any{}}, 404},
		{"owner", "POST", "/api/v1/source-hosts/" + uuid.NewString() + "/update", map[string]any{"name": "x"}, 404},
		{"owner", "POST", "/api/v1/projects/" + project.ID + "/templates/create", `{"name": "t", "sets": [{"name": "www", "type": "A", "records": "192.0.2.1"}]}`, 400},
		{"owner", "POST", "/api/v1/projects/" + project.ID + "/templates/create", `{"name": "t", "sets": [{"name": "www", "type": "A", "records": ["192.0.2.300"]}]}`, 400},
		{"owner", "POST", "/api/v1/projects/" + project.ID + "/templates/create", `{"name": "t", "sets": [], "extra": 1}`, 400},
		{"owner", "POST", "/api/v1/projects/" + project.ID + "/templates/create", `{"name": "t"`, 400},
		{"owner", "POST", "/api/v1/projects/" + project.ID + "/members/add", map[string]any{"userId": "nope", "role": "viewer"}, 400},
		{"stranger", "GET", "/api/v1/projects/" + project.ID, nil, 404},
		{"viewer", "POST", "/api/v1/projects/" + project.ID + "/zones/create", map[string]any{"name": "x.example"}, 403},
	} {
		status, raw := e.do(c.user, c.method, c.path, c.body, nil)
		assert.Equal(t, c.status, status, "%s %s: %s", c.method, c.path, raw)
		var body map[string]any
		require.NoError(t, json.Unmarshal(raw, &body), "%s", raw)
		assert.NotEmpty(t, body["error"], "%s %s", c.method, c.path)
	}

	// Zones, served at once.
	var za, zb zoneDTO
	e.must(201, "editor", "POST", "/api/v1/projects/"+project.ID+"/zones/create",
		map[string]any{"name": "alpha.example", "mname": "ns1.lcm-dns.example.net.", "rname": "hostmaster@alpha.example"}, &za)
	e.must(201, "editor", "POST", "/api/v1/projects/"+project.ID+"/zones/create",
		map[string]any{"name": "beta.example", "mname": "ns1.lcm-dns.example.net.", "rname": "hostmaster@beta.example", "defaultTtl": 600}, &zb)
	assert.Equal(t, "alpha.example.", za.Name)
	assert.Contains(t, e.dig("alpha.example.", "SOA"), "status: NOERROR")
	assert.Contains(t, e.dig("nope.alpha.example.", "A"), "status: NXDOMAIN")

	var www zoneSetDTO
	e.must(201, "editor", "POST", "/api/v1/zones/"+za.ID+"/record-sets/create", map[string]any{"name": "www", "type": "a", "ttl": 60, "records": []string{"192.0.2.9"}}, &www)
	assert.Equal(t, "manual", www.Origin)
	assert.Equal(t, []string{"192.0.2.9"}, e.short("www.alpha.example.", "A"))
	assert.Contains(t, e.dig("www.alpha.example.", "TXT"), "ANSWER: 0", "NODATA")
	e.must(200, "editor", "POST", "/api/v1/zones/"+za.ID+"/record-sets/"+www.ID+"/update", map[string]any{"name": "www", "type": "A", "records": []string{"192.0.2.10"}}, &www)
	assert.Equal(t, []string{"192.0.2.10"}, e.short("www.alpha.example.", "A"))
	e.must(201, "editor", "POST", "/api/v1/zones/"+za.ID+"/record-sets/create", map[string]any{"name": "alias", "type": "CNAME", "records": []string{"elsewhere.example."}}, nil)
	e.must(409, "editor", "POST", "/api/v1/zones/"+za.ID+"/record-sets/create", map[string]any{"name": "alias", "type": "TXT", "records": []string{"x"}}, nil)
	e.must(403, "viewer", "POST", "/api/v1/zones/"+za.ID+"/record-sets/create", map[string]any{"name": "v", "type": "A", "records": []string{"192.0.2.1"}}, nil)
	e.must(404, "stranger", "GET", "/api/v1/zones/"+za.ID+"/record-sets", nil, nil)
	var list []zoneSetDTO
	e.must(200, "viewer", "GET", "/api/v1/zones/"+za.ID+"/record-sets", nil, &list)
	assert.Len(t, list, 2)

	// Sync groups: applied, skippedPriority, conflicts, idempotent.
	var high, low syncGroupDTO
	e.must(201, "owner", "POST", "/api/v1/sync-groups/create", map[string]any{"name": "high", "priority": 1}, &high)
	e.must(201, "owner", "POST", "/api/v1/sync-groups/create", map[string]any{"name": "low", "priority": 50}, &low)
	e.must(400, "owner", "POST", "/api/v1/sync-groups/create", map[string]any{"name": "nopriority"}, nil)
	e.must(200, "owner", "POST", "/api/v1/sync-groups/"+high.ID+"/members/add", map[string]any{"zoneId": zb.ID}, nil)
	e.must(200, "owner", "POST", "/api/v1/sync-groups/"+low.ID+"/members/add", map[string]any{"zoneId": za.ID}, nil)
	e.must(200, "owner", "POST", "/api/v1/sync-groups/"+low.ID+"/members/add", map[string]any{"zoneId": zb.ID}, nil)
	e.must(404, "editor", "POST", "/api/v1/sync-groups/"+low.ID+"/update-sets", map[string]any{"sets": []any{}}, nil)
	var reps []map[string]any
	e.must(200, "owner", "POST", "/api/v1/sync-groups/"+high.ID+"/update-sets", map[string]any{"sets": []any{
		map[string]any{"name": "@", "type": "TXT", "records": []string{"high"}}}}, &reps)
	sets := []any{
		map[string]any{"name": "www", "type": "A", "records": []string{"192.0.2.1"}},
		map[string]any{"name": "alias", "type": "A", "records": []string{"192.0.2.2"}},
		map[string]any{"name": "@", "type": "TXT", "records": []string{"low"}},
		map[string]any{"name": "@", "type": "MX", "ttl": 300, "records": []string{"10 mail"}},
		map[string]any{"name": "mail", "type": "A", "records": []string{"192.0.2.25"}},
	}
	e.must(200, "owner", "POST", "/api/v1/sync-groups/"+low.ID+"/update-sets", map[string]any{"sets": sets}, &reps)
	require.Len(t, reps, 2)
	byZone := map[string]map[string]any{}
	for _, r := range reps {
		assert.ElementsMatch(t, []string{"zoneId", "applied", "skippedPriority", "conflicts"}, keys(r))
		byZone[r["zoneId"].(string)] = r
	}
	assert.Equal(t, []any{"@ MX", "@ TXT", "mail A"}, byZone[za.ID]["applied"])
	assert.Equal(t, []any{"alias A", "www A"}, byZone[za.ID]["conflicts"])
	assert.Equal(t, []any{"@ TXT"}, byZone[zb.ID]["skippedPriority"])
	assert.Equal(t, []any{"@ MX", "alias A", "mail A", "www A"}, byZone[zb.ID]["applied"])
	assert.Equal(t, []string{"192.0.2.10"}, e.short("www.alpha.example.", "A"), "manual data kept")
	assert.Equal(t, []string{"192.0.2.1"}, e.short("www.beta.example.", "A"))
	assert.Equal(t, []string{`"high"`}, e.short("beta.example.", "TXT"))
	assert.Contains(t, e.dig("alpha.example.", "MX"), "10 mail.alpha.example.")
	var zbBefore zoneDTO
	e.must(200, "viewer", "GET", "/api/v1/zones/"+zb.ID, nil, &zbBefore)
	var again []map[string]any
	e.must(200, "owner", "POST", "/api/v1/sync-groups/"+low.ID+"/update-sets", map[string]any{"sets": sets}, &again)
	assert.Equal(t, reps, again)
	var zbAfter zoneDTO
	e.must(200, "viewer", "GET", "/api/v1/zones/"+zb.ID, nil, &zbAfter)
	assert.Equal(t, zbBefore.Serial, zbAfter.Serial, "a second identical call changes nothing")

	// Source hosts: propagation to sets in several zones, seen by dig.
	var src map[string]any
	e.must(201, "editor", "POST", "/api/v1/projects/"+project.ID+"/source-hosts/create", map[string]any{"name": "lb", "ipv4": []string{"198.51.100.1"}}, &src)
	sid := src["id"].(string)
	for _, z := range []string{za.ID, zb.ID} {
		e.must(200, "editor", "POST", "/api/v1/source-hosts/"+sid+"/bind", map[string]any{"zoneId": z, "name": "lb", "type": "A"}, nil)
		e.must(200, "editor", "POST", "/api/v1/source-hosts/"+sid+"/bind", map[string]any{"zoneId": z, "name": "lb", "type": "AAAA"}, nil)
	}
	assert.Contains(t, e.dig("lb.beta.example.", "AAAA"), "ANSWER: 0", "an empty bound set answers NODATA")
	e.must(200, "editor", "POST", "/api/v1/source-hosts/"+sid+"/update", map[string]any{"name": "lb", "ipv4": []string{"198.51.100.2", "198.51.100.3"}, "ipv6": []string{"2001:db8::5"}}, &src)
	assert.ElementsMatch(t, []string{"id", "projectId", "name", "ipv4", "ipv6", "updatedAt"}, keys(src))
	for _, z := range []string{"lb.alpha.example.", "lb.beta.example."} {
		assert.Equal(t, []string{"198.51.100.2", "198.51.100.3"}, e.short(z, "A"))
		assert.Equal(t, []string{"2001:db8::5"}, e.short(z, "AAAA"))
	}
	e.must(403, "viewer", "POST", "/api/v1/source-hosts/"+sid+"/update", map[string]any{"name": "lb"}, nil)
	e.must(400, "editor", "POST", "/api/v1/source-hosts/"+sid+"/update", map[string]any{"name": "lb", "ipv4": []string{"2001:db8::1"}}, nil)

	// Templates.
	var tpl templateDTO
	e.must(201, "editor", "POST", "/api/v1/projects/"+project.ID+"/templates/create", map[string]any{"name": "spf", "sets": []any{
		map[string]any{"name": "_dmarc", "type": "TXT", "records": []string{`"v=DMARC1; p=none"`}}}}, &tpl)
	e.must(403, "viewer", "POST", "/api/v1/projects/"+project.ID+"/templates/create", map[string]any{"name": "x", "sets": []any{}}, nil)
	var rep map[string]any
	e.must(200, "editor", "POST", "/api/v1/templates/"+tpl.ID+"/apply", map[string]any{"zoneId": za.ID}, &rep)
	assert.Equal(t, []any{"_dmarc TXT"}, rep["applied"])
	assert.Equal(t, []string{`"v=DMARC1;`, `p=none"`}, e.short("_dmarc.alpha.example.", "TXT"))

	// AXFR and export: named-checkzone accepts every zone file.
	assert.Contains(t, e.dig("+tcp", "AXFR", "alpha.example."), "XFR size")
	for _, z := range []zoneDTO{za, zb} {
		req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/zones/"+z.ID+"/export", nil)
		req.Header.Set("X-Test-User", "viewer")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		file, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, "%s", file)
		assert.Equal(t, "text/dns; charset=utf-8", resp.Header.Get("Content-Type"))
		checkZone(t, z.Name, file)
	}

	// Deletions disappear from DNS at once.
	e.must(204, "editor", "POST", "/api/v1/zones/"+za.ID+"/record-sets/"+www.ID+"/delete", nil, nil)
	assert.Contains(t, e.dig("www.alpha.example.", "A"), "status: NXDOMAIN")
	e.must(204, "owner", "POST", "/api/v1/sync-groups/"+low.ID+"/delete", nil, nil)
	assert.Contains(t, e.dig("www.beta.example.", "A"), "status: NXDOMAIN")
	e.must(204, "editor", "POST", "/api/v1/zones/"+zb.ID+"/delete", nil, nil)
	assert.Contains(t, e.dig("beta.example.", "SOA"), "status: REFUSED")
	e.must(403, "editor", "POST", "/api/v1/projects/"+project.ID+"/delete", nil, nil)
	e.must(204, "owner", "POST", "/api/v1/projects/"+project.ID+"/delete", nil, nil)
	assert.Contains(t, e.dig("alpha.example.", "SOA"), "status: REFUSED")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
