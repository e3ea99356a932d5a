package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lcmproject/lcm/internal/testutil"
)

// cookieClient is a browser-like session: the lcm_session cookie in a jar
// and the X-CSRF-Token header (the lcm_csrf cookie's value) on every POST.
type cookieClient struct {
	t    *testing.T
	a    *testutil.API
	http *http.Client
}

// signIn logs in with POST /api/v1/auth/login and keeps the cookies.
func signIn(t *testing.T, a *testutil.API, user, password string) *cookieClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &cookieClient{t: t, a: a, http: &http.Client{Jar: jar, Transport: a.Client.Transport, Timeout: a.Client.Timeout}}
	if status, body := c.do("POST", "/api/v1/auth/login", map[string]string{"username": user, "password": password}, nil); status != 200 {
		t.Fatalf("login %s: %d %s", user, status, body)
	}
	return c
}

func (c *cookieClient) csrf() string {
	u, _ := url.Parse(c.a.BaseURL)
	for _, k := range c.http.Jar.Cookies(u) {
		if k.Name == "lcm_csrf" {
			return k.Value
		}
	}
	return ""
}

func (c *cookieClient) do(method, path string, body, out any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, c.a.BaseURL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if method != "GET" {
		if v := c.csrf(); v != "" {
			req.Header.Set("X-CSRF-Token", v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, raw
}

func (c *cookieClient) must(status int, method, path string, body, out any) {
	c.t.Helper()
	if got, raw := c.do(method, path, body, out); got != status {
		c.t.Fatalf("%s %s: want %d, got %d: %s", method, path, status, got, raw)
	}
}

func digE2E(t *testing.T, addr string, args ...string) string {
	t.Helper()
	bin := testutil.RequireTool(t, "dig")
	host, port, _ := net.SplitHostPort(addr)
	all := append([]string{"@" + host, "-p", port, "+norec", "+time=3", "+tries=1"}, args...)
	out, err := exec.Command(bin, all...).CombinedOutput()
	if err != nil {
		t.Fatalf("dig %v: %v\n%s", all, err, out)
	}
	return string(out)
}

func wantIn(t *testing.T, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Fatalf("want %q in:\n%s", want, out)
	}
}

// TestRecordsE2E drives the records API of the real binary with session
// cookies (editor, viewer, non-member), on SQLite and PostgreSQL, and
// checks each change with dig against the embedded DNS listener
// (dns.listen) and every exported zone with named-checkzone.
func TestRecordsE2E(t *testing.T) {
	testutil.RequireTool(t, "dig")
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			dnsAddr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
			a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, DatabaseURL: db.URL,
				Config: map[string]any{"dns": map[string]any{"listen": dnsAddr, "axfr_allow": []string{"127.0.0.1"}}}})
			admin := signIn(t, a, "admin", a.AdminPassword)
			if status, _ := (&cookieClient{t: t, a: a, http: &http.Client{Jar: admin.http.Jar, Transport: a.Client.Transport}}).doNoCSRF("POST", "/api/v1/projects/create", map[string]any{"name": "x"}); status != 403 {
				t.Fatalf("a cookie POST without X-CSRF-Token: want 403, got %d", status)
			}
			const pw = "Harbor-Lights-Twelve-9"
			ids := map[string]string{}
			for _, u := range []string{"alice", "bob", "carol"} {
				var out struct {
					ID string `json:"id"`
				}
				admin.must(201, "POST", "/api/v1/users", map[string]any{"username": u, "email": u + "@example.test", "password": pw, "roles": []string{}}, &out)
				ids[u] = out.ID
			}
			alice, bob, carol := signIn(t, a, "alice", pw), signIn(t, a, "bob", pw), signIn(t, a, "carol", pw)

			var project struct{ ID string }
			admin.must(201, "POST", "/api/v1/projects/create", map[string]any{"name": "web"}, &project)
			admin.must(201, "POST", "/api/v1/projects/"+project.ID+"/members/add", map[string]any{"userId": ids["alice"], "role": "editor"}, nil)
			admin.must(201, "POST", "/api/v1/projects/"+project.ID+"/members/add", map[string]any{"userId": ids["bob"], "role": "viewer"}, nil)
			carol.must(404, "GET", "/api/v1/projects/"+project.ID, nil, nil)
			bob.must(200, "GET", "/api/v1/projects/"+project.ID, nil, nil)
			bob.must(403, "POST", "/api/v1/projects/"+project.ID+"/zones/create", map[string]any{"name": "x.example"}, nil)
			alice.must(400, "GET", "/api/v1/zones/not-a-uuid", nil, nil)

			var zones [2]struct{ ID, Name string }
			for i, n := range []string{"one.example", "two.example"} {
				alice.must(201, "POST", "/api/v1/projects/"+project.ID+"/zones/create",
					map[string]any{"name": n, "mname": "ns1.lcm-dns.example.net.", "rname": "hostmaster@" + n}, &zones[i])
				wantIn(t, digE2E(t, dnsAddr, n+".", "SOA"), "status: NOERROR")
			}
			alice.must(201, "POST", "/api/v1/zones/"+zones[0].ID+"/record-sets/create", map[string]any{"name": "www", "type": "A", "records": []string{"192.0.2.9"}}, nil)
			wantIn(t, digE2E(t, dnsAddr, "www.one.example.", "A"), "192.0.2.9")
			bob.must(403, "POST", "/api/v1/zones/"+zones[0].ID+"/record-sets/create", map[string]any{"name": "b", "type": "A", "records": []string{"192.0.2.1"}}, nil)
			carol.must(404, "GET", "/api/v1/zones/"+zones[0].ID+"/record-sets", nil, nil)

			var group struct{ ID string }
			alice.must(201, "POST", "/api/v1/sync-groups/create", map[string]any{"name": "base", "priority": 10}, &group)
			for _, z := range zones {
				alice.must(200, "POST", "/api/v1/sync-groups/"+group.ID+"/members/add", map[string]any{"zoneId": z.ID}, nil)
			}
			var reports []struct {
				ZoneID    string   `json:"zoneId"`
				Applied   []string `json:"applied"`
				Conflicts []string `json:"conflicts"`
			}
			alice.must(200, "POST", "/api/v1/sync-groups/"+group.ID+"/update-sets", map[string]any{"sets": []any{
				map[string]any{"name": "www", "type": "A", "records": []string{"192.0.2.1"}},
				map[string]any{"name": "@", "type": "TXT", "records": []string{"managed"}}}}, &reports)
			if len(reports) != 2 {
				t.Fatalf("reports: %+v", reports)
			}
			wantIn(t, digE2E(t, dnsAddr, "www.two.example.", "A"), "192.0.2.1")
			wantIn(t, digE2E(t, dnsAddr, "www.one.example.", "A"), "192.0.2.9")

			var src struct{ ID string }
			alice.must(201, "POST", "/api/v1/projects/"+project.ID+"/source-hosts/create", map[string]any{"name": "lb", "ipv4": []string{"198.51.100.1"}}, &src)
			for _, z := range zones {
				alice.must(200, "POST", "/api/v1/source-hosts/"+src.ID+"/bind", map[string]any{"zoneId": z.ID, "name": "lb", "type": "A"}, nil)
			}
			alice.must(200, "POST", "/api/v1/source-hosts/"+src.ID+"/update", map[string]any{"name": "lb", "ipv4": []string{"198.51.100.7"}}, nil)
			for _, z := range zones {
				wantIn(t, digE2E(t, dnsAddr, "lb."+z.Name, "A"), "198.51.100.7")
			}
			wantIn(t, digE2E(t, dnsAddr, "+tcp", "AXFR", "one.example."), "XFR size")

			checkzone := testutil.RequireTool(t, "named-checkzone")
			for _, z := range zones {
				status, file := bob.do("GET", "/api/v1/zones/"+z.ID+"/export", nil, nil)
				if status != 200 {
					t.Fatalf("export: %d %s", status, file)
				}
				path := filepath.Join(t.TempDir(), "zone")
				if err := os.WriteFile(path, file, 0o600); err != nil {
					t.Fatal(err)
				}
				if out, err := exec.Command(checkzone, "-k", "fail", "-n", "fail", "-i", "full", z.Name, path).CombinedOutput(); err != nil {
					t.Fatalf("named-checkzone %s: %v\n%s\n%s", z.Name, err, out, file)
				}
			}
			alice.must(204, "POST", "/api/v1/zones/"+zones[1].ID+"/delete", nil, nil)
			wantIn(t, digE2E(t, dnsAddr, "two.example.", "SOA"), "status: REFUSED")

			// A restart serves the stored zones from the first query on.
			a.Stop()
			b := testutil.StartAPI(t, testutil.APIOptions{Dir: a.Dir, Dev: true, DatabaseURL: db.URL})
			_ = b
			wantIn(t, digE2E(t, dnsAddr, "lb.one.example.", "A"), "198.51.100.7")
		})
	}
}

// doNoCSRF sends a request with the session cookie but no CSRF header.
func (c *cookieClient) doNoCSRF(method, path string, body any) (int, []byte) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, c.a.BaseURL+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}
