package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lcmproject/lcm/internal/testutil"
)

// bearerTransport adds an Authorization header to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpConnect(t *testing.T, url, key string) (*sdk.ClientSession, error) {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "lcm-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: bearerTransport{key}}}, nil)
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if res.IsError {
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				text += tc.Text
			}
		}
		return "ERROR: " + text
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v: %s", name, err, raw)
		}
	}
	return string(raw)
}

func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// TestMCPListenerE2E drives the real binary (demo fleet): the listener is
// off by default and follows PUT /settings/mcp; the official Go SDK client
// lists and calls every tool and reads a server resource; only mcp keys
// work; a manager's key sees only its groups; no output carries a secret.
func TestMCPListenerE2E(t *testing.T) {
	port := testutil.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	url := "http://" + addr + "/mcp"
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Args: []string{"--demo"}, Config: map[string]any{"mcp_port": port}})
	tok := login(t, a, "admin", a.AdminPassword)

	if !refused(addr) {
		t.Fatal("the MCP listener is on by default")
	}
	var st struct {
		Enabled, Listening bool
		URL                string
	}
	if resp, body := a.Do("GET", "/api/v1/settings/mcp", tok, nil, &st); resp.StatusCode != 200 || st.Enabled || st.URL != url {
		t.Fatalf("GET settings/mcp: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.Do("PUT", "/api/v1/settings/mcp", tok, map[string]any{"enabled": "yes"}, nil); resp.StatusCode != 400 {
		t.Fatalf("PUT with a string: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.Do("PUT", "/api/v1/settings/mcp", tok, map[string]any{"enabled": true}, &st); resp.StatusCode != 200 || !st.Listening {
		t.Fatalf("PUT enabled: %d %s", resp.StatusCode, body)
	}
	testutil.WaitFor(t, 5*time.Second, "MCP listener up", func() bool { return !refused(addr) })

	newKey := func(token, scope string) (id, key string) {
		var k struct{ ID, Key string }
		if resp, body := a.Do("POST", "/api/v1/apikeys", token, map[string]any{"name": "mcp-" + scope, "scope": scope}, &k); resp.StatusCode != 201 {
			t.Fatalf("create %s key: %d %s", scope, resp.StatusCode, body)
		}
		return k.ID, k.Key
	}
	_, mcpKey := newKey(tok, "mcp")
	_, rwKey := newKey(tok, "readwrite")

	// Credentials other than an mcp key are refused with 401.
	for name, cred := range map[string]string{"none": "", "session token": tok, "readwrite key": rwKey, "garbage": "lcm_nope"} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if cred != "" {
			req.Header.Set("Authorization", "Bearer "+cred)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %q, want 401 with WWW-Authenticate", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// And the mcp key is refused on the REST API.
	req, _ := http.NewRequest("GET", a.BaseURL+"/api/v1/servers", nil)
	req.Header.Set("X-API-Key", mcpKey)
	if resp, err := a.Client.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("mcp key on REST: %v %v", resp.StatusCode, err)
	}

	cs, err := mcpConnect(t, url, mcpKey)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
		if tl.OutputSchema == nil || tl.Annotations == nil || !tl.Annotations.ReadOnlyHint {
			t.Errorf("tool %s: output schema %v, annotations %+v", tl.Name, tl.OutputSchema != nil, tl.Annotations)
		}
	}
	for _, n := range []string{"list_servers", "get_server", "fleet_summary", "list_vulnerabilities", "list_outdated_packages"} {
		if !names[n] {
			t.Errorf("tool %s missing (have %v)", n, names)
		}
	}

	// REST's view of the demo fleet, for comparison and for the secrets.
	var rest []map[string]any
	a.Do("GET", "/api/v1/servers", tok, nil, &rest)
	if len(rest) < 5 {
		t.Fatalf("demo fleet: %d servers", len(rest))
	}
	var outputs []string
	type page struct {
		Servers []struct {
			ID, Name         string
			OutdatedPackages int  `json:"outdated_packages"`
			CVECritical      int  `json:"cve_critical"`
			RebootRequired   bool `json:"reboot_required"`
		}
		Total      int
		NextOffset *int `json:"next_offset"`
	}
	// Page through all servers two at a time.
	seen := map[string]bool{}
	for off := 0; ; {
		var p page
		outputs = append(outputs, callTool(t, cs, "list_servers", map[string]any{"limit": 2, "offset": off}, &p))
		if p.Total != len(rest) || len(p.Servers) == 0 || len(p.Servers) > 2 {
			t.Fatalf("list_servers page at %d: total %d, %d items (REST has %d)", off, p.Total, len(p.Servers), len(rest))
		}
		for _, s := range p.Servers {
			seen[s.ID] = true
		}
		if p.NextOffset == nil {
			break
		}
		off = *p.NextOffset
	}
	if len(seen) != len(rest) {
		t.Fatalf("paging saw %d servers, REST lists %d", len(seen), len(rest))
	}
	var crit page
	outputs = append(outputs, callTool(t, cs, "list_servers", map[string]any{"critical_cve_only": true}, &crit))
	if len(crit.Servers) != 1 || crit.Servers[0].Name != "app-01" || crit.Servers[0].CVECritical != 1 {
		t.Fatalf("critical_cve_only: %+v", crit)
	}
	if msg := callTool(t, cs, "list_servers", map[string]any{"limit": 1000}, nil); !strings.Contains(msg, "invalid_limit") {
		t.Fatalf("limit 1000: %s", msg)
	}
	var app struct {
		ID, Name, Status string
		OutdatedPackages int  `json:"outdated_packages"`
		SecurityUpdates  int  `json:"security_updates"`
		RebootRequired   bool `json:"reboot_required"`
		CPUCores         int  `json:"cpu_cores"`
	}
	outputs = append(outputs, callTool(t, cs, "get_server", map[string]any{"name": "APP-01"}, &app))
	if app.Name != "app-01" || app.OutdatedPackages != 2 || app.SecurityUpdates != 1 || !app.RebootRequired || app.CPUCores == 0 {
		t.Fatalf("get_server app-01: %+v", app)
	}
	if msg := callTool(t, cs, "get_server", map[string]any{"id": "00000000-0000-0000-0000-000000000000"}, nil); !strings.Contains(msg, "not found") {
		t.Fatalf("get_server unknown: %s", msg)
	}
	var sum struct {
		Total, Reachable, Unreachable int
		ServersWithCriticalCVE        int `json:"servers_with_critical_cve"`
		UpdatesAvailable              int `json:"updates_available"`
	}
	outputs = append(outputs, callTool(t, cs, "fleet_summary", nil, &sum))
	if sum.Total != len(rest) || sum.Reachable+sum.Unreachable != sum.Total || sum.ServersWithCriticalCVE != 1 || sum.UpdatesAvailable == 0 {
		t.Fatalf("fleet_summary: %+v", sum)
	}
	var vulns struct {
		Findings []struct {
			CVE, Severity string
			ServerName    string `json:"server_name"`
		}
		Total int
	}
	outputs = append(outputs, callTool(t, cs, "list_vulnerabilities", map[string]any{"severity": "critical"}, &vulns))
	if vulns.Total != 1 || vulns.Findings[0].CVE != "CVE-2024-6387" || vulns.Findings[0].ServerName != "app-01" {
		t.Fatalf("list_vulnerabilities critical: %+v", vulns)
	}
	var outdated struct {
		Servers []struct {
			ServerName string `json:"server_name"`
			Packages   []struct{ Name string }
		}
	}
	outputs = append(outputs, callTool(t, cs, "list_outdated_packages", map[string]any{"server": "web-01", "security_only": true}, &outdated))
	if len(outdated.Servers) != 1 || len(outdated.Servers[0].Packages) != 2 {
		t.Fatalf("list_outdated_packages web-01: %+v", outdated)
	}
	res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "lcm://servers/" + app.ID})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, `"app-01"`) {
		t.Fatalf("resource: %v %+v", err, res)
	}
	outputs = append(outputs, res.Contents[0].Text)

	// No output carries a secret field or a known secret value.
	all := strings.Join(outputs, "\n")
	secrets := []string{mcpKey, rwKey, tok, a.AdminPassword}
	for _, s := range rest {
		if fp, _ := s["host_key_fingerprint"].(string); fp != "" {
			secrets = append(secrets, fp)
		}
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(all, s) {
			t.Fatalf("an MCP output contains a secret value %q…", s[:min(8, len(s))])
		}
	}
	for _, field := range []string{"password", "private_key", "public_key", "host_key", "fingerprint", "token", "login_user", "username", "secret"} {
		if strings.Contains(strings.ToLower(all), `"`+field) {
			t.Fatalf("an MCP output has a field starting with %q", field)
		}
	}

	// A manager's key sees only its groups. apikeys:manage is admin-only, and
	// a key acts in its creator's current permission context: kim creates
	// the key as an admin and is then made a manager of one group.
	const kimPW = "Lantern-Orbit-7391!"
	var kim struct{ ID string }
	if resp, body := a.Do("POST", "/api/v1/users", tok, map[string]any{"username": "kim", "first_name": "Kim", "last_name": "Manager",
		"email": "kim@example.org", "password": kimPW, "roles": []string{"admin"}}, &kim); resp.StatusCode/100 != 2 {
		t.Fatalf("create kim: %d %s", resp.StatusCode, body)
	}
	_, kimKey := newKey(login(t, a, "kim", kimPW), "mcp")
	var grp struct{ ID string }
	if resp, body := a.Do("POST", "/api/v1/server-groups/create", tok, map[string]any{"name": "Kim's servers"}, &grp); resp.StatusCode/100 != 2 {
		t.Fatalf("create group: %d %s", resp.StatusCode, body)
	}
	mine := map[string]bool{}
	for _, s := range rest[:2] {
		id := s["id"].(string)
		mine[id] = true
		if resp, body := a.Do("POST", "/api/v1/server-groups/"+grp.ID+"/assign-server", tok, map[string]any{"server_id": id}, nil); resp.StatusCode/100 != 2 {
			t.Fatalf("assign server: %d %s", resp.StatusCode, body)
		}
	}
	if resp, body := a.Do("PUT", "/api/v1/users/"+kim.ID+"/roles", tok, map[string]any{"roles": []string{"manager"}}, nil); resp.StatusCode/100 != 2 {
		t.Fatalf("kim becomes a manager: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.Do("POST", "/api/v1/server-groups/"+grp.ID+"/assign-manager", tok, map[string]any{"user_id": kim.ID}, nil); resp.StatusCode/100 != 2 {
		t.Fatalf("assign manager: %d %s", resp.StatusCode, body)
	}
	csKim, err := mcpConnect(t, url, kimKey)
	if err != nil {
		t.Fatal(err)
	}
	var kimPage page
	callTool(t, csKim, "list_servers", map[string]any{}, &kimPage)
	if kimPage.Total != len(mine) || len(kimPage.Servers) != len(mine) {
		t.Fatalf("manager's key sees %d servers (total %d), want the %d of its group", len(kimPage.Servers), kimPage.Total, len(mine))
	}
	for _, s := range kimPage.Servers {
		if !mine[s.ID] {
			t.Fatalf("manager's key sees %s, outside its group", s.Name)
		}
	}
	var kimSum struct{ Total int }
	callTool(t, csKim, "fleet_summary", map[string]any{}, &kimSum)
	if kimSum.Total != len(mine) {
		t.Fatalf("manager's fleet_summary total %d, want %d", kimSum.Total, len(mine))
	}
	for _, s := range rest[2:] {
		if msg := callTool(t, csKim, "get_server", map[string]any{"id": s["id"]}, nil); !strings.Contains(msg, "not_found") && !strings.Contains(msg, "not found") {
			t.Fatalf("manager's key reads a server outside its group: %s", msg)
		}
	}
	csKim.Close()
	// A revoked key stops working at once.
	key2ID, key2 := newKey(tok, "mcp")
	cs2, err := mcpConnect(t, url, key2)
	if err != nil {
		t.Fatal(err)
	}
	cs2.Close()
	if resp, body := a.Do("DELETE", "/api/v1/apikeys/"+key2ID, tok, nil, nil); resp.StatusCode/100 != 2 {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	if _, err := mcpConnect(t, url, key2); err == nil {
		t.Fatal("a revoked key still connects")
	}

	// Off closes the port.
	if resp, body := a.Do("PUT", "/api/v1/settings/mcp", tok, map[string]any{"enabled": false}, &st); resp.StatusCode != 200 || st.Listening {
		t.Fatalf("PUT disabled: %d %s", resp.StatusCode, body)
	}
	testutil.WaitFor(t, 5*time.Second, "MCP listener closed", func() bool { return refused(addr) })
	// The switch is audited.
	var audit struct {
		Items []struct{ Action string } `json:"items"`
	}
	a.Do("GET", "/api/v1/audit?limit=50", tok, nil, &audit)
	n := 0
	for _, e := range audit.Items {
		if e.Action == "settings.mcp_updated" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("audit has %d settings.mcp_updated entries, want 2", n)
	}
}
