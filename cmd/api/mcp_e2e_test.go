package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/crypto/ssh"

	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
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
	hosts := startFleetsim(t, 2)
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, Args: []string{"--demo"}, Config: map[string]any{"mcp_port": port,
		"agent_port": testutil.FreePort(t), "agent_host": "127.0.0.1"}})
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
	// Another program holds the port: the setting is saved, the answer is
	// 503 mcp_listen_failed and GET names the reason; once the port is
	// free the listener binds by itself (the replica follows the setting).
	occupier, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := a.Do("PUT", "/api/v1/settings/mcp", tok, map[string]any{"enabled": true}, nil); resp.StatusCode != 503 ||
		!strings.Contains(string(body), `"code":"mcp_listen_failed"`) || !strings.Contains(string(body), "already in use") {
		t.Fatalf("PUT enabled with the port taken: %d %s", resp.StatusCode, body)
	}
	var stErr struct {
		Enabled, Listening bool
		Error              string
	}
	if resp, body := a.Do("GET", "/api/v1/settings/mcp", tok, nil, &stErr); resp.StatusCode != 200 || !stErr.Enabled || stErr.Listening ||
		!strings.Contains(stErr.Error, addr+" is already in use") {
		t.Fatalf("GET settings/mcp with the port taken: %d %s", resp.StatusCode, body)
	}
	occupier.Close()
	testutil.WaitFor(t, 10*time.Second, "MCP listener binds once the port is free", func() bool {
		stErr.Error = "" // omitted once there is none
		a.Do("GET", "/api/v1/settings/mcp", tok, nil, &stErr)
		return stErr.Listening && stErr.Error == "" && !refused(addr)
	})

	// The seeded fleet beyond the demo servers: two simulated Debian hosts
	// joined with a bootstrap password (LCM generates and installs its own
	// management key and pins the host key) and an agent server with an
	// issued agent token. Their secrets are searched for below.
	onboardSim(t, a, tok, hosts)
	var agentSrv struct{ ID string }
	if r, body := a.Do("POST", "/api/v1/servers/agent", tok, map[string]any{"name": "mcp-agent-01"}, &agentSrv); r.StatusCode != http.StatusCreated {
		t.Fatalf("create agent server: %d %s", r.StatusCode, body)
	}
	var agentTok struct{ Token string }
	if r, body := a.Do("POST", "/api/v1/servers/"+agentSrv.ID+"/agent-token", tok, nil, &agentTok); r.StatusCode != http.StatusCreated || agentTok.Token == "" {
		t.Fatalf("agent token: %d %s", r.StatusCode, body)
	}

	newKey := func(token, scope string) (id, key string) {
		var k struct{ ID, Key string }
		if resp, body := a.Do("POST", "/api/v1/apikeys", token, map[string]any{"name": "mcp-" + scope, "scope": scope}, &k); resp.StatusCode != 201 {
			t.Fatalf("create %s key: %d %s", scope, resp.StatusCode, body)
		}
		return k.ID, k.Key
	}
	_, mcpKey := newKey(tok, "mcp")
	_, rwKey := newKey(tok, "readwrite")
	_, readKey := newKey(tok, "read")
	expiredKey := expiredMCPKey(t, a, tok)

	// Credentials other than an active mcp key are refused with 401.
	for name, cred := range map[string]string{"none": "", "session token": tok, "readwrite key": rwKey, "read key": readKey,
		"expired mcp key": expiredKey, "garbage": "lcm_nope"} {
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
		NotContacted                  int            `json:"not_contacted"`
		ByStatus                      map[string]int `json:"by_status"`
		ServersWithCriticalCVE        int            `json:"servers_with_critical_cve"`
		UpdatesAvailable              int            `json:"updates_available"`
	}
	outputs = append(outputs, callTool(t, cs, "fleet_summary", nil, &sum))
	restUnreachable := 0
	for _, s := range rest {
		if s["status"] == "unreachable" {
			restUnreachable++
		}
	}
	if sum.Total != len(rest) || sum.Reachable+sum.Unreachable+sum.NotContacted != sum.Total || sum.NotContacted < 1 ||
		sum.Unreachable != restUnreachable || sum.ByStatus["unreachable"] != restUnreachable ||
		sum.ServersWithCriticalCVE != 1 || sum.UpdatesAvailable == 0 {
		t.Fatalf("fleet_summary: %+v (REST: %d servers, %d unreachable)", sum, len(rest), restUnreachable)
	}
	var sim struct {
		Reachable      bool    `json:"reachable"`
		Joined         bool    `json:"joined"`
		OSName         string  `json:"os_name"`
		FirewallActive *bool   `json:"firewall_active"`
		FirewallTool   *string `json:"firewall_tool"`
		HardeningIndex *int    `json:"hardening_index"`
	}
	outputs = append(outputs, callTool(t, cs, "get_server", map[string]any{"name": "sim-0"}, &sim))
	if !sim.Joined || !sim.Reachable || sim.OSName == "" || sim.FirewallActive == nil || sim.FirewallTool == nil {
		t.Fatalf("get_server sim-0: %+v", sim)
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

	// No output carries a secret field (the values are searched for at
	// the end, read back from the server's own store).
	for _, field := range []string{"password", "private_key", "public_key", "host_key", "fingerprint", "token", "login_user", "username", "secret"} {
		if strings.Contains(strings.ToLower(strings.Join(outputs, "\n")), `"`+field) {
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
	outputs = append(outputs, callTool(t, csKim, "list_servers", map[string]any{}, &kimPage))
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
	if code, body := rawMCP(t, url, key2, ""); code != http.StatusUnauthorized || !strings.Contains(body, `"code":"invalid_api_key"`) {
		t.Fatalf("revoked key: %d %s", code, body)
	}

	// The allowlist applies on the MCP port: a client from 127.0.0.200 is
	// refused once allowed_ips admits only 127.0.0.1 (this test's address
	// for REST), before its key is even looked at.
	if code, _ := rawMCP(t, url, mcpKey, "127.0.0.200"); code != http.StatusOK {
		t.Fatalf("from 127.0.0.200 before the allowlist: %d", code)
	}
	if resp, body := a.Do("PATCH", "/api/v1/settings/security", tok, map[string]any{"allowed_ips": []string{"127.0.0.1"}}, nil); resp.StatusCode != 200 {
		t.Fatalf("allowlist: %d %s", resp.StatusCode, body)
	}
	testutil.WaitFor(t, 5*time.Second, "the allowlist reaches the MCP listener", func() bool {
		code, body := rawMCP(t, url, mcpKey, "127.0.0.200")
		return code == http.StatusForbidden && strings.Contains(body, `"code":"ip_not_allowed"`)
	})
	if code, _ := rawMCP(t, url, mcpKey, ""); code != http.StatusOK {
		t.Fatalf("from 127.0.0.1 with the allowlist: %d", code)
	}
	if resp, body := a.Do("PATCH", "/api/v1/settings/security", tok, map[string]any{"allowed_ips": []string{}}, nil); resp.StatusCode != 200 {
		t.Fatalf("allowlist cleared: %d %s", resp.StatusCode, body)
	}

	// The API-key rate limit applies on the MCP port, per key, counted
	// before the key is checked: with a limit of 3 a fresh key gets 429
	// rate_limited with Retry-After within two one-minute windows' worth.
	if resp, body := a.Do("PATCH", "/api/v1/settings/security", tok, map[string]any{"api_key_rate_limit_per_minute": 3}, nil); resp.StatusCode != 200 {
		t.Fatalf("rate limit: %d %s", resp.StatusCode, body)
	}
	_, limited := newKey(tok, "mcp")
	admitted, got429 := 0, false
	time.Sleep(1100 * time.Millisecond) // the security settings are cached for 1 s per replica
	for i := 0; i < 7 && !got429; i++ {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+limited)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			admitted++
		case http.StatusTooManyRequests:
			got429 = true
			if !strings.Contains(string(b), `"code":"rate_limited"`) || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("429 without its code or Retry-After: %q %s", resp.Header.Get("Retry-After"), b)
			}
		default:
			t.Fatalf("rate-limited key: %d %s", resp.StatusCode, b)
		}
	}
	if !got429 || admitted < 3 {
		t.Fatalf("rate limit 3: %d admitted, 429 seen %v", admitted, got429)
	}
	if resp, body := a.Do("PATCH", "/api/v1/settings/security", tok, map[string]any{"api_key_rate_limit_per_minute": 120}, nil); resp.StatusCode != 200 {
		t.Fatalf("rate limit restored: %d %s", resp.StatusCode, body)
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
	a.Do("GET", "/api/v1/audit?limit=200&action=settings.mcp_updated", tok, nil, &audit)
	n := 0
	for _, e := range audit.Items {
		if e.Action == "settings.mcp_updated" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("audit has %d settings.mcp_updated entries, want 2", n)
	}

	// No output carries a known secret of the fleet, read back from the
	// server's own store once the process stopped: every server's
	// management private key (by the lines of its body, and its public
	// half), pending and bootstrap keys, login and bootstrap passwords, the
	// pinned host key and its fingerprint; the agent token; the keys, the
	// session token and the admin password.
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"mcp key": mcpKey, "readwrite key": rwKey, "read key": readKey, "session token": tok,
		"admin password": a.AdminPassword, "bootstrap password": "bootstrap-secret", "agent token": agentTok.Token}
	db := storetest.OpenIn(t, "", filepath.Join(a.Dir, "data"))
	keys := 0
	for _, s := range rest {
		id := s["id"].(string)
		srv, sec, err := db.ServerSecretsOf(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		name := srv.Name
		secrets[name+" host key fingerprint"] = srv.HostKeyFingerprint
		if f := strings.Fields(srv.HostKey); len(f) >= 2 {
			secrets[name+" host key"] = f[1]
		}
		for what, v := range map[string]string{"login password": sec.LoginPassword, "bootstrap password": sec.BootstrapPassword} {
			secrets[name+" "+what] = v
		}
		for what, pem := range map[string]string{"private key": sec.PrivateKey, "pending key": sec.PendingKey, "bootstrap key": sec.BootstrapKey} {
			if pem == "" {
				continue
			}
			keys++
			for i, line := range strings.Split(pem, "\n") {
				if len(line) >= 40 && !strings.HasPrefix(line, "-----") {
					secrets[fmt.Sprintf("%s %s line %d", name, what, i)] = line
				}
			}
			if signer, err := ssh.ParsePrivateKey([]byte(pem)); err == nil {
				secrets[name+" "+what+" public half"] = base64.StdEncoding.EncodeToString(signer.PublicKey().Marshal())
			}
		}
	}
	if keys < len(hosts) {
		t.Fatalf("only %d private keys in the store, want at least one per joined host (%d)", keys, len(hosts))
	}
	all := strings.Join(outputs, "\n")
	n = 0
	for what, v := range secrets {
		if len(v) < 8 {
			continue // empty (never set) or too short to mean anything
		}
		n++
		if strings.Contains(all, v) {
			t.Errorf("an MCP output contains the %s", what)
		}
	}
	t.Logf("walked %d MCP outputs (%d bytes) for %d secret values: no hit", len(outputs), len(all), n)
}

// rawMCP sends one tools/list request with key, from the local address
// local ("" lets the kernel choose), and returns the status and body.
func rawMCP(t *testing.T, url, key, local string) (int, string) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// expiredMCPKey stores an mcp key of the admin whose expiry has passed, in
// the running server's database (as time would have done), and returns
// its plaintext.
func expiredMCPKey(t *testing.T, a *testutil.API, tok string) string {
	t.Helper()
	var me struct{ ID string }
	if resp, body := a.Do("GET", "/api/v1/auth/me", tok, nil, &me); resp.StatusCode != 200 || me.ID == "" {
		t.Fatalf("me: %d %s", resp.StatusCode, body)
	}
	st := storetest.OpenIn(t, "", filepath.Join(a.Dir, "data"))
	plain := auth.APIKeyPrefix + "expiredExpiredExpiredExpiredExpired0123456"
	past := time.Now().Add(-time.Minute).UTC()
	if _, err := st.CreateAPIKey(context.Background(), store.APIKey{UserID: me.ID, Name: "expired", Prefix: plain[:12],
		Scope: "mcp", ExpiresAt: &past}, auth.HashAPIKey(plain)); err != nil {
		t.Fatal(err)
	}
	return plain
}

// startNATS runs a nats-server with JetStream of this test's own (the
// external NATS of a scaled deployment) and returns its URL.
func startNATS(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		testutil.Unavailable(t, "nats-server is not installed (Debian package nats-server)")
	}
	port := testutil.FreePort(t)
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	testutil.WaitFor(t, 10*time.Second, "nats-server up", func() bool { return !refused(addr) })
	return "nats://" + addr
}

// TestMCPFollowsAcrossReplicasE2E: two lcm-api processes on one PostgreSQL
// database and one NATS JetStream, the scaled topology of docs/install.md
// (same jwt_secret and lcm.key). A switch made through one replica's REST
// API reaches the other through the replicated runtime settings within
// seconds: its MCP port binds, answers a key created on the first replica,
// and closes again when the other replica switches it off.
func TestMCPFollowsAcrossReplicasE2E(t *testing.T) {
	natsURL := startNATS(t)
	dbURL := testutil.PostgresURL(t)
	port1, port2 := testutil.FreePort(t), testutil.FreePort(t)
	addr1, addr2 := fmt.Sprintf("127.0.0.1:%d", port1), fmt.Sprintf("127.0.0.1:%d", port2)
	cfg := func(port int) map[string]any {
		return map[string]any{"mcp_port": port, "nats": map[string]any{"url": natsURL}}
	}
	a1 := testutil.StartAPI(t, testutil.APIOptions{Dev: true, DatabaseURL: dbURL, Config: cfg(port1)})
	dir2 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir2, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(a1.Dir, "data", "lcm.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir2, "data", "lcm.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	a2 := testutil.StartAPI(t, testutil.APIOptions{Dir: dir2, Dev: true, DatabaseURL: dbURL, Config: cfg(port2)})
	tok1 := login(t, a1, "admin", a1.AdminPassword)
	tok2 := login(t, a2, "admin", a1.AdminPassword)
	if !refused(addr1) || !refused(addr2) {
		t.Fatal("an MCP listener is on by default")
	}
	if resp, body := a1.Do("PUT", "/api/v1/settings/mcp", tok1, map[string]any{"enabled": true}, nil); resp.StatusCode != 200 {
		t.Fatalf("enable through replica 1: %d %s", resp.StatusCode, body)
	}
	start := time.Now()
	testutil.WaitFor(t, 10*time.Second, "replica 2 binds its MCP port", func() bool { return !refused(addr2) })
	t.Logf("replica 2 followed the switch on in %s", time.Since(start).Round(10*time.Millisecond))
	var st struct{ Enabled, Listening bool }
	if resp, body := a2.Do("GET", "/api/v1/settings/mcp", tok2, nil, &st); resp.StatusCode != 200 || !st.Enabled || !st.Listening {
		t.Fatalf("replica 2's settings/mcp: %d %s", resp.StatusCode, body)
	}
	var k struct{ Key string }
	if resp, body := a1.Do("POST", "/api/v1/apikeys", tok1, map[string]any{"name": "replicas", "scope": "mcp"}, &k); resp.StatusCode != 201 {
		t.Fatalf("mcp key on replica 1: %d %s", resp.StatusCode, body)
	}
	cs, err := mcpConnect(t, "http://"+addr2+"/mcp", k.Key)
	if err != nil {
		t.Fatalf("replica 2's MCP port with a key made on replica 1: %v", err)
	}
	var sum struct{ Total int }
	callTool(t, cs, "fleet_summary", nil, &sum)
	cs.Close()
	// Off through replica 2: replica 1 follows.
	if resp, body := a2.Do("PUT", "/api/v1/settings/mcp", tok2, map[string]any{"enabled": false}, nil); resp.StatusCode != 200 {
		t.Fatalf("disable through replica 2: %d %s", resp.StatusCode, body)
	}
	if !refused(addr2) {
		t.Fatal("replica 2 still listens after switching off")
	}
	start = time.Now()
	testutil.WaitFor(t, 10*time.Second, "replica 1 closes its MCP port", func() bool { return refused(addr1) })
	t.Logf("replica 1 followed the switch off in %s", time.Since(start).Round(10*time.Millisecond))
}
