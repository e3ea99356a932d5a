package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

type e2eUser struct {
	ID           string   `json:"id"`
	Username     string   `json:"username"`
	Roles        []string `json:"roles"`
	MustSetup2FA bool     `json:"must_setup_2fa"`
	TOTPEnabled  bool     `json:"totp_enabled"`
}

type e2eLogin struct {
	Token             string  `json:"token"`
	User              e2eUser `json:"user"`
	TwoFactorRequired bool    `json:"two_factor_required"`
	Challenge         string  `json:"challenge"`
}

func e2eLoginAs(t *testing.T, a *testutil.API, user, pw string) (e2eLogin, *http.Response) {
	t.Helper()
	var out e2eLogin
	resp, body := a.Do("POST", "/api/v1/auth/login", "", map[string]string{"username": user, "password": pw}, &out)
	if resp.StatusCode != 200 {
		t.Fatalf("login %s: %d %s", user, resp.StatusCode, body)
	}
	return out, resp
}

var e2eLink = regexp.MustCompile(`https?://\S+\?token=[A-Za-z0-9_%-]+`)

// TestAuthE2E runs the main identity flows through the real binary on
// SQLite and PostgreSQL: login, me, signed-in health, invitation e-mail over
// real SMTP with a link from the listener address, and that a restart ends
// every session.
func TestAuthE2E(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			sink := testutil.StartSMTPSink(t)
			dir := t.TempDir()
			cfg := map[string]any{"smtp": map[string]any{"host": "127.0.0.1", "port": sink.Port, "from": "lcm@example.test", "tls": "none"}}
			a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, DatabaseURL: db.URL, Config: cfg})
			lr, resp := e2eLoginAs(t, a, "admin", a.AdminPassword)
			if lr.User.MustSetup2FA {
				t.Fatal("2FA requirement must be off with --dev")
			}
			for _, c := range resp.Cookies() {
				if c.Secure {
					t.Fatalf("cookie %s Secure in --dev", c.Name)
				}
			}
			var me e2eUser
			if resp, body := a.Do("GET", "/api/v1/auth/me", lr.Token, nil, &me); resp.StatusCode != 200 || me.Username != "admin" {
				t.Fatalf("me: %d %s", resp.StatusCode, body)
			}
			// Signed-in health shows the diagnostics; anonymous does not.
			var h map[string]any
			a.Do("GET", "/api/v1/health", lr.Token, nil, &h)
			for _, k := range []string{"fail_streak", "panics_total", "panics_recent", "watchdog_active", "uptime_seconds"} {
				if _, ok := h[k]; !ok {
					t.Errorf("signed-in health lacks %s: %v", k, h)
				}
			}
			h = nil
			a.Do("GET", "/api/v1/health", "", nil, &h)
			if len(h) != 1 {
				t.Fatalf("anonymous health: %v", h)
			}
			// Invitation over real SMTP; no public_base_url: the listener's address.
			resp, body := a.Do("POST", "/api/v1/users", lr.Token, map[string]any{"username": "nina", "email": "nina@example.test", "roles": []string{"manager"}}, nil)
			if resp.StatusCode != 201 {
				t.Fatalf("invite: %d %s", resp.StatusCode, body)
			}
			m := sink.WaitFor(t, "nina@example.test", 15*time.Second)
			link := e2eLink.FindString(m.Text())
			if !strings.HasPrefix(link, a.BaseURL+"/activate?token=") {
				t.Fatalf("link %q (base %s) in\n%s", link, a.BaseURL, m.Text())
			}
			u, _ := url.Parse(link)
			if resp, body := a.Do("POST", "/api/v1/users/activation-links/consume", "", map[string]string{"token": u.Query().Get("token"), "password": "Harbor-Lights-Twelve-9"}, nil); resp.StatusCode != 204 {
				t.Fatalf("consume: %d %s", resp.StatusCode, body)
			}
			nina, _ := e2eLoginAs(t, a, "nina", "Harbor-Lights-Twelve-9")
			if resp, _ := a.Do("GET", "/api/v1/users", nina.Token, nil, nil); resp.StatusCode != 403 {
				t.Fatalf("manager on users: %d", resp.StatusCode)
			}
			// An API key works with the creator's rights; a restart keeps it.
			var key struct{ Key string }
			a.Do("POST", "/api/v1/apikeys", lr.Token, map[string]any{"name": "ci", "scope": "read"}, &key)
			if resp, _ := a.Do("DELETE", "/api/v1/users/x", key.Key, nil, nil); resp.StatusCode != 403 {
				t.Fatalf("read key DELETE: %d", resp.StatusCode)
			}
			// Restart: every session ends (new epoch), keys keep working.
			if err := a.Stop(); err != nil {
				t.Fatal(err)
			}
			b := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true, DatabaseURL: db.URL})
			if resp, _ := b.Do("GET", "/api/v1/auth/me", lr.Token, nil, nil); resp.StatusCode != 401 {
				t.Fatalf("token after restart: %d", resp.StatusCode)
			}
			if resp, _ := b.Do("GET", "/api/v1/users", key.Key, nil, nil); resp.StatusCode != 200 {
				t.Fatalf("API key after restart: %d", resp.StatusCode)
			}
			lr2, _ := e2eLoginAs(t, b, "admin", a.AdminPassword)
			var page struct {
				Total int `json:"total"`
			}
			if resp, body := b.Do("GET", "/api/v1/audit", lr2.Token, nil, &page); resp.StatusCode != 200 || page.Total < 4 {
				t.Fatalf("audit: %d %s", resp.StatusCode, body)
			}
			if !strings.Contains(b.Stderr(), "audit log chain verified") {
				t.Fatal("audit chain not verified at start")
			}
			if strings.Contains(a.Stderr()+b.Stderr(), a.AdminPassword) || strings.Contains(a.Stderr()+b.Stderr(), lr.Token) {
				t.Fatal("a secret reached the log")
			}
		})
	}
}

// TestAuthE2EHTTPSForced2FA runs over HTTPS (no --dev): the admin must set
// up 2FA first (fail-closed allowlist), cookies are Secure, and a 2FA login
// goes through the challenge.
func TestAuthE2EHTTPSForced2FA(t *testing.T) {
	a := testutil.StartAPI(t, testutil.APIOptions{})
	lr, resp := e2eLoginAs(t, a, "admin", a.AdminPassword)
	for _, c := range resp.Cookies() {
		if !c.Secure || c.SameSite != http.SameSiteStrictMode {
			t.Fatalf("cookie %s over HTTPS: %+v", c.Name, c)
		}
	}
	if !lr.User.MustSetup2FA {
		t.Fatal("admin not forced to set up 2FA")
	}
	if resp, body := a.Do("GET", "/api/v1/users", lr.Token, nil, nil); resp.StatusCode != 403 || !strings.Contains(string(body), "2fa_setup_required") {
		t.Fatalf("outside the remediation allowlist: %d %s", resp.StatusCode, body)
	}
	var setup struct {
		Secret string `json:"secret"`
	}
	if resp, body := a.Do("POST", "/api/v1/auth/2fa/setup", lr.Token, nil, &setup); resp.StatusCode != 200 {
		t.Fatalf("setup: %d %s", resp.StatusCode, body)
	}
	code, _ := totp.GenerateCode(setup.Secret, time.Now())
	if resp, body := a.Do("POST", "/api/v1/auth/2fa/enable", lr.Token, map[string]string{"code": code}, nil); resp.StatusCode != 200 {
		t.Fatalf("enable: %d %s", resp.StatusCode, body)
	}
	if resp, _ := a.Do("GET", "/api/v1/users", lr.Token, nil, nil); resp.StatusCode != 200 {
		t.Fatalf("after enabling: %d", resp.StatusCode)
	}
	ch, _ := e2eLoginAs(t, a, "admin", a.AdminPassword)
	if !ch.TwoFactorRequired || ch.Token != "" {
		t.Fatalf("no challenge: %+v", ch)
	}
	// The next code (the current step is spent): wait for the next step.
	next := time.Now().Truncate(30 * time.Second).Add(30 * time.Second)
	time.Sleep(time.Until(next) + 200*time.Millisecond)
	code, _ = totp.GenerateCode(setup.Secret, time.Now())
	var done e2eLogin
	if resp, body := a.Do("POST", "/api/v1/auth/login/2fa", "", map[string]string{"challenge": ch.Challenge, "code": code}, &done); resp.StatusCode != 200 || done.Token == "" {
		t.Fatalf("login/2fa: %d %s", resp.StatusCode, body)
	}
}

// TestAllowlistE2E: clients outside allowed_ips get 403 before
// authentication and are not logged; X-Forwarded-For counts only with
// trust_proxy_header. The agent download alone is exempt (servers fetch
// it before they are managed): a GET of it is served from outside the
// allowlist, anything else under or beside its path is not.
func TestAllowlistE2E(t *testing.T) {
	binDir := t.TempDir()
	agentBin := []byte("#!/bin/sh\necho lcm-agent stand-in\n")
	if err := os.WriteFile(filepath.Join(binDir, "lcm-agent-linux-amd64"), agentBin, 0o755); err != nil {
		t.Fatal(err)
	}
	a := testutil.StartAPI(t, testutil.APIOptions{Dev: true, NoWait: true, Env: []string{"LCM_AGENT_BIN_DIR=" + binDir},
		Config: map[string]any{"allowed_ips": []string{"192.0.2.0/24"}, "access_log": true}})
	testutil.WaitFor(t, 15*time.Second, "the service answers", func() bool {
		resp, err := a.Client.Get(a.BaseURL + "/api/v1/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 403
	})
	for i := 0; i < 3; i++ {
		resp, body := a.Do("GET", "/api/v1/health?probe=outside", "", nil, nil)
		if resp.StatusCode != 403 || !strings.Contains(string(body), "ip_not_allowed") {
			t.Fatalf("outside: %d %s", resp.StatusCode, body)
		}
	}
	req, _ := http.NewRequest("GET", a.BaseURL+"/api/v1/health", nil)
	req.Header.Set("X-Forwarded-For", "192.0.2.7")
	resp, err := a.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("XFF honoured without trust_proxy_header: %d", resp.StatusCode)
	}
	if strings.Contains(a.Stderr(), `path=/api/v1/health`) {
		t.Fatalf("refused requests were logged:\n%s", a.Stderr())
	}
	// The exemption: GET of the agent download from outside.
	sum := sha256.Sum256(agentBin)
	resp, body := a.Do("GET", "/api/v1/agent/download/amd64", "", nil, nil)
	if resp.StatusCode != 200 || !bytes.Equal(body, agentBin) || resp.Header.Get("X-Checksum-Sha256") != hex.EncodeToString(sum[:]) {
		t.Fatalf("agent download from outside the allowlist: %d %q", resp.StatusCode, body)
	}
	if resp, body := a.Do("GET", "/api/v1/agent/download/arm64", "", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("missing arch from outside: %d %s", resp.StatusCode, body)
	}
	// Only that GET: other methods, neighbouring paths and a path that
	// climbs out of the prefix are refused as before.
	for _, c := range []struct{ method, path string }{
		{"POST", "/api/v1/agent/download/amd64"},
		{"DELETE", "/api/v1/agent/download/amd64"},
		{"GET", "/api/v1/agent/downloads"},
		{"GET", "/api/v1/agent/download"},
		{"GET", "/api/v1/agent"},
		{"POST", "/api/v1/auth/login"},
	} {
		resp, body := a.Do(c.method, c.path, "", nil, nil)
		if resp.StatusCode != 403 || !strings.Contains(string(body), "ip_not_allowed") {
			t.Errorf("%s %s from outside the allowlist: %d %s", c.method, c.path, resp.StatusCode, body)
		}
	}
	for _, path := range []string{"/api/v1/agent/download/../../health", "/api/v1/agent/download/amd64/../../../servers"} {
		req, _ := http.NewRequest("GET", a.BaseURL+path, nil)
		req.URL.Opaque = path // sent as is, not cleaned by the client
		resp, err := a.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || strings.Contains(string(b), `"status"`) || strings.Contains(string(b), `"servers"`) {
			t.Errorf("GET %s reached another route through the exemption: %d %s", path, resp.StatusCode, b)
		}
	}
	a.Stop()
	b := testutil.StartAPI(t, testutil.APIOptions{Dev: true, NoWait: true,
		Config: map[string]any{"allowed_ips": []string{"192.0.2.0/24"}, "trust_proxy_header": true}})
	testutil.WaitFor(t, 15*time.Second, "allowed through the proxy header", func() bool {
		req, _ := http.NewRequest("GET", b.BaseURL+"/api/v1/health", nil)
		req.Header.Set("X-Forwarded-For", "203.0.113.1, 192.0.2.7")
		resp, err := b.Client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// TestAuditTamperReportedAtStart: a changed audit row is reported clearly
// at the next start (the service keeps running; see docs/security.md).
func TestAuditTamperReportedAtStart(t *testing.T) {
	dir := t.TempDir()
	a := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true})
	lr, _ := e2eLoginAs(t, a, "admin", a.AdminPassword)
	a.Do("POST", "/api/v1/apikeys", lr.Token, map[string]any{"name": "one"}, nil)
	a.Stop()
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{DataDir: filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := s.SQL()
	if _, err := sqlDB.Exec("UPDATE audit_log SET actor = 'mallory' WHERE seq = 1"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	b := testutil.StartAPI(t, testutil.APIOptions{Dir: dir, Dev: true})
	// The report is written by the start-up check, which may still be
	// flushing when the health check already answers: wait for the line.
	reported := func() bool {
		return strings.Contains(b.Stderr(), "AUDIT LOG TAMPERED") && strings.Contains(b.Stderr(), "entry 1")
	}
	deadline := time.Now().Add(15 * time.Second)
	for !reported() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !reported() {
		t.Fatalf("tampering not reported:\n%s", b.Stderr())
	}
}
