package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/pquerna/otp/totp"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/testutil"
)

func TestLoginAndMe(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dbURL: db.URL, no2FA: true})
			r := h.do(req{method: "POST", path: "/api/v1/auth/login", body: map[string]string{"username": "admin", "password": adminPW}})
			if r.code != 200 {
				t.Fatalf("login: %d %s", r.code, r.body)
			}
			var lr struct {
				Token     string
				ExpiresAt time.Time `json:"expires_at"`
				User      userDTO
			}
			r.json(t, &lr)
			if lr.User.Username != "admin" || !roleListHas(lr.User.Permissions, domain.PermUsersWrite) || time.Until(lr.ExpiresAt) < 59*time.Minute {
				t.Fatalf("login response: %+v", lr)
			}
			claims := jwt.MapClaims{}
			if _, _, err := jwt.NewParser().ParseUnverified(lr.Token, claims); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"sub", "username", "iat", "exp", "iat_ms"} {
				if _, ok := claims[k]; !ok {
					t.Errorf("claim %s missing: %v", k, claims)
				}
			}
			if len(claims) != 5 {
				t.Errorf("unexpected claims (a token holds no permissions): %v", claims)
			}
			me := h.do(req{method: "GET", path: "/api/v1/auth/me", token: lr.Token})
			if me.code != 200 || !strings.Contains(string(me.body), `"username":"admin"`) {
				t.Fatalf("me: %d %s", me.code, me.body)
			}
			if h.do(req{method: "GET", path: "/api/v1/auth/me"}).code != 401 {
				t.Fatal("me without login is not 401")
			}
		})
	}
}

func TestUnknownUserAndWrongPasswordSameError(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	a := h.do(req{method: "POST", path: "/api/v1/auth/login", body: map[string]string{"username": "admin", "password": "wrong-password-1X"}, ip: "192.0.2.10"})
	b := h.do(req{method: "POST", path: "/api/v1/auth/login", body: map[string]string{"username": "nobody", "password": "wrong-password-1X"}, ip: "192.0.2.11"})
	c := h.do(req{method: "POST", path: "/api/v1/auth/login", body: map[string]string{"username": "system", "password": "wrong-password-1X"}, ip: "192.0.2.12"})
	if a.code != 401 || b.code != 401 || c.code != 401 || string(a.body) != string(b.body) || string(b.body) != string(c.body) {
		t.Fatalf("different answers:\n%d %s\n%d %s\n%d %s", a.code, a.body, b.code, b.body, c.code, c.body)
	}
}

func TestSystemUserNeverLogsIn(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	// Even if someone planted a password hash for the system user.
	u, err := h.st.GetUserByUsername(t.Context(), "system")
	if err != nil {
		t.Fatal(err)
	}
	hash := mustHash(t, h, "Planted-Password-42x")
	if err := h.st.UpdateUser(t.Context(), u.ID, storeUpdateHash(hash)); err != nil {
		t.Fatal(err)
	}
	r := h.do(req{method: "POST", path: "/api/v1/auth/login", body: map[string]string{"username": "system", "password": "Planted-Password-42x"}})
	if r.code != 401 || r.code2(t) != "invalid_credentials" {
		t.Fatalf("system login: %d %s", r.code, r.body)
	}
}

func TestBadTokens(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	tok := h.login("admin", adminPW)
	parts := strings.Split(tok, ".")
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	hs512 := func() string {
		var m map[string]any
		_ = json.Unmarshal(claims, &m)
		s, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.MapClaims(m)).SignedString([]byte(strings.Repeat("s", 48)))
		return s
	}()
	wrongKey := func() string {
		var m map[string]any
		_ = json.Unmarshal(claims, &m)
		s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(m)).SignedString([]byte(strings.Repeat("s", 48)))
		return s
	}()
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(claims), `"admin"`, `"root"`, 1))) + "." + parts[2]
	for name, bad := range map[string]string{
		"alg none": none, "hs512": hs512, "wrong key": wrongKey, "tampered": tampered,
		"garbage": "abc.def.ghi", "empty parts": "..", "not a jwt": "hello",
	} {
		r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: bad})
		if r.code != 401 {
			t.Errorf("%s: %d %s", name, r.code, r.body)
		}
	}
	r := h.do(req{method: "GET", path: "/api/v1/auth/me", headers: map[string]string{"Authorization": "Basic YWRtaW46eA=="}})
	if r.code != 401 {
		t.Errorf("basic auth: %d", r.code)
	}
	// Expiry: move the clock past the lifetime.
	h.clock.off = 61 * time.Minute
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: tok}); r.code != 401 {
		t.Fatalf("expired token: %d %s", r.code, r.body)
	}
}

func TestLogoutEndsSessions(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	tok := h.login("admin", adminPW)
	r := h.do(req{method: "POST", path: "/api/v1/auth/logout", token: tok})
	if r.code != 204 {
		t.Fatalf("logout: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: tok}); r.code != 401 {
		t.Fatalf("token after logout: %d", r.code)
	}
	tok2 := h.login("admin", adminPW)
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: tok2}); r.code != 200 {
		t.Fatalf("new login after logout: %d", r.code)
	}
}

func TestCookieSessionAndCSRF(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	r := h.do(req{method: "POST", path: "/api/v1/auth/login", body: map[string]string{"username": "admin", "password": adminPW}})
	var sess, csrf *http.Cookie
	for _, c := range r.cookies {
		switch c.Name {
		case cookieSession:
			sess = c
		case cookieCSRF:
			csrf = c
		}
	}
	if sess == nil || csrf == nil || !sess.HttpOnly || csrf.HttpOnly || sess.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookies: %+v", r.cookies)
	}
	if sess.Secure {
		t.Fatal("Secure set in dev mode (harness is Dev)")
	}
	jar := []*http.Cookie{{Name: sess.Name, Value: sess.Value}, {Name: csrf.Name, Value: csrf.Value}}
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", cookies: jar}); r.code != 200 {
		t.Fatalf("GET with cookie: %d", r.code)
	}
	body := map[string]any{"name": "k1"}
	if r := h.do(req{method: "POST", path: "/api/v1/apikeys", cookies: jar, body: body}); r.code != 403 || r.code2(t) != "csrf_failed" {
		t.Fatalf("POST without CSRF header: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "POST", path: "/api/v1/apikeys", cookies: jar, body: body, headers: map[string]string{headerCSRF: "forged"}}); r.code != 403 {
		t.Fatalf("POST with wrong CSRF header: %d", r.code)
	}
	if r := h.do(req{method: "POST", path: "/api/v1/apikeys", cookies: jar, body: body, headers: map[string]string{headerCSRF: csrf.Value}}); r.code != 201 {
		t.Fatalf("POST with CSRF header: %d %s", r.code, r.body)
	}
	// A planted lcm_csrf cookie does not help: the token is bound to the session.
	planted := []*http.Cookie{{Name: sess.Name, Value: sess.Value}, {Name: cookieCSRF, Value: "x"}}
	if r := h.do(req{method: "POST", path: "/api/v1/apikeys", cookies: planted, body: body, headers: map[string]string{headerCSRF: "x"}}); r.code != 403 {
		t.Fatalf("planted CSRF cookie: %d", r.code)
	}
	// Logout clears both cookies.
	r = h.do(req{method: "POST", path: "/api/v1/auth/logout", cookies: jar, headers: map[string]string{headerCSRF: csrf.Value}})
	if r.code != 204 || len(r.cookies) != 2 || r.cookies[0].MaxAge >= 0 {
		t.Fatalf("logout cookies: %d %+v", r.code, r.cookies)
	}
}

func TestRBACRoleChangeAndDeactivationActAtOnce(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dbURL: db.URL, no2FA: true})
			admin := h.login("admin", adminPW)
			id := h.createUser(admin, "mia", "Quiet-Lantern-58x")
			tok := h.login("mia", "Quiet-Lantern-58x")
			if r := h.do(req{method: "GET", path: "/api/v1/users", token: tok}); r.code != 403 || r.code2(t) != "forbidden" {
				t.Fatalf("no role: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: "PUT", path: "/api/v1/users/" + id + "/roles", token: admin, body: map[string]any{"roles": []string{"admin"}}}); r.code != 200 {
				t.Fatalf("set roles: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: "GET", path: "/api/v1/users", token: tok}); r.code != 200 {
				t.Fatalf("after role grant (same token): %d", r.code)
			}
			if r := h.do(req{method: "PUT", path: "/api/v1/users/" + id + "/roles", token: admin, body: map[string]any{"roles": []string{"nope"}}}); r.code != 400 || r.code2(t) != "unknown_role" {
				t.Fatalf("unknown role: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: "PATCH", path: "/api/v1/users/" + id + "/active", token: admin, body: map[string]any{"active": false}}); r.code != 200 {
				t.Fatalf("deactivate: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: tok}); r.code != 401 {
				t.Fatalf("deactivated user's token: %d", r.code)
			}
			if r := h.do(req{method: "POST", path: "/api/v1/auth/login", body: map[string]string{"username": "mia", "password": "Quiet-Lantern-58x"}, ip: "192.0.2.77"}); r.code != 401 {
				t.Fatalf("deactivated login: %d", r.code)
			}
			// The last admin keeps the role and cannot be removed.
			adminID := userID(t, h, admin)
			if r := h.do(req{method: "DELETE", path: "/api/v1/users/" + adminID, token: admin}); r.code != 409 {
				t.Fatalf("delete self: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: "PUT", path: "/api/v1/users/" + adminID + "/roles", token: admin, body: map[string]any{"roles": []string{}}}); r.code != 409 || r.code2(t) != "last_admin" {
				t.Fatalf("remove last admin: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: "DELETE", path: "/api/v1/users/" + id, token: admin}); r.code != 204 {
				t.Fatalf("delete: %d %s", r.code, r.body)
			}
			var roles []roleDTO
			r := h.do(req{method: "GET", path: "/api/v1/roles", token: admin})
			r.json(t, &roles)
			if len(roles) < 2 {
				t.Fatalf("roles: %s", r.body)
			}
		})
	}
}

func userID(t *testing.T, h *harness, tok string) string {
	var u userDTO
	h.do(req{method: "GET", path: "/api/v1/auth/me", token: tok}).json(t, &u)
	return u.ID
}

func TestAPIKeyScopes(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	admin := h.login("admin", adminPW)
	mk := func(scope string) string {
		body := map[string]any{"name": "k-" + scope}
		if scope != "" {
			body["scope"] = scope
		}
		r := h.do(req{method: "POST", path: "/api/v1/apikeys", token: admin, body: body})
		if r.code != 201 {
			t.Fatalf("create %s: %d %s", scope, r.code, r.body)
		}
		var k apiKeyDTO
		r.json(t, &k)
		if !strings.HasPrefix(k.Key, "lcm_") || !strings.HasPrefix(k.Key, k.Prefix) {
			t.Fatalf("key: %+v", k)
		}
		return k.Key
	}
	def, read, mcp := mk(""), mk("read"), mk("mcp")
	// readwrite by default; acts with the creator's rights.
	if r := h.do(req{method: "GET", path: "/api/v1/users", token: def}); r.code != 200 {
		t.Fatalf("readwrite GET: %d", r.code)
	}
	if r := h.do(req{method: "POST", path: "/api/v1/apikeys", token: def, body: map[string]any{"name": "x"}}); r.code != 201 {
		t.Fatalf("readwrite POST: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/users", token: read}); r.code != 200 {
		t.Fatalf("read GET: %d", r.code)
	}
	// 403 before the controller: even a malformed body is not looked at.
	if r := h.do(req{method: "POST", path: "/api/v1/apikeys", token: read, body: "{not json"}); r.code != 403 || r.code2(t) != "read_only_key" {
		t.Fatalf("read POST: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "DELETE", path: "/api/v1/users/x", token: read}); r.code != 403 || r.code2(t) != "read_only_key" {
		t.Fatalf("read DELETE: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/users", token: mcp}); r.code != 403 || r.code2(t) != "mcp_key_rejected" {
		t.Fatalf("mcp on REST: %d %s", r.code, r.body)
	}
	if _, err := h.svc.AuthenticateMCP(t.Context(), mcp); err != nil {
		t.Fatalf("mcp key on the MCP path: %v", err)
	}
	if _, err := h.svc.AuthenticateMCP(t.Context(), read); err == nil {
		t.Fatal("read key accepted for MCP")
	}
	if r := h.do(req{method: "GET", path: "/api/v1/users", token: "lcm_invalid"}); r.code != 401 {
		t.Fatalf("invalid key: %d", r.code)
	}
	// List has no secrets; revoke then delete.
	var keys []apiKeyDTO
	r := h.do(req{method: "GET", path: "/api/v1/apikeys", token: admin})
	r.json(t, &keys)
	if len(keys) != 4 || strings.Contains(string(r.body), def) || strings.Contains(string(r.body), `"key"`) {
		t.Fatalf("list: %s", r.body)
	}
	var readID string
	for _, k := range keys {
		if k.Scope == "read" {
			readID = k.ID
		}
	}
	if r := h.do(req{method: "DELETE", path: "/api/v1/apikeys/" + readID, token: admin}); r.code != 204 {
		t.Fatalf("revoke: %d", r.code)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/users", token: read}); r.code != 401 {
		t.Fatalf("revoked key: %d", r.code)
	}
	if r := h.do(req{method: "DELETE", path: "/api/v1/apikeys/" + readID, token: admin}); r.code != 204 {
		t.Fatalf("delete: %d", r.code)
	}
	if r := h.do(req{method: "DELETE", path: "/api/v1/apikeys/" + readID, token: admin}); r.code != 404 {
		t.Fatalf("deleted twice: %d", r.code)
	}
	// Expiry.
	r = h.do(req{method: "POST", path: "/api/v1/apikeys", token: admin, body: map[string]any{"name": "exp", "expires_in_days": 1}})
	var ek apiKeyDTO
	r.json(t, &ek)
	h.clock.off = 25 * time.Hour
	if r := h.do(req{method: "GET", path: "/api/v1/roles", token: ek.Key}); r.code != 401 {
		t.Fatalf("expired key: %d", r.code)
	}
	for _, bad := range []map[string]any{{"name": "x", "scope": "admin"}, {"name": ""}, {"name": "x", "expires_in_days": 0}, {"name": "x", "expires_in_days": "7"}, {}} {
		if r := h.do(req{method: "POST", path: "/api/v1/apikeys", token: h.login("admin", adminPW), body: bad}); r.code != 400 {
			t.Errorf("bad create %v: %d %s", bad, r.code, r.body)
		}
	}
}

func TestAPIKeyScopeMigration(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	admin := h.login("admin", adminPW)
	r := h.do(req{method: "POST", path: "/api/v1/apikeys", token: admin, body: map[string]any{"name": "old"}})
	var k apiKeyDTO
	r.json(t, &k)
	sqlDB, _ := h.st.SQL()
	if _, err := sqlDB.Exec("UPDATE api_keys SET scope = NULL WHERE id = ?", k.ID); err != nil {
		t.Fatal(err)
	}
	n, err := h.st.BackfillAPIKeyScopes(t.Context())
	if err != nil || n != 1 {
		t.Fatalf("backfill: %d %v", n, err)
	}
	if r := h.do(req{method: "POST", path: "/api/v1/apikeys", token: k.Key, body: map[string]any{"name": "via-old"}}); r.code != 201 {
		t.Fatalf("pre-scope key after migration: %d %s", r.code, r.body)
	}
}

func TestAPIKeyRateLimitExact(t *testing.T) {
	const limit = 50
	h := newHarness(t, harnessOpts{no2FA: true, rateLimit: limit})
	admin := h.login("admin", adminPW)
	r := h.do(req{method: "POST", path: "/api/v1/apikeys", token: admin, body: map[string]any{"name": "rl"}})
	var k apiKeyDTO
	r.json(t, &k)
	// Keep the whole burst inside one window.
	now := time.Now()
	if rem := now.Truncate(time.Minute).Add(time.Minute).Sub(now); rem < 20*time.Second {
		h.clock.off = rem + time.Second
	}
	var ok, limited, other atomic.Int32
	var retry atomic.Value
	var wg sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.do(req{method: "GET", path: "/api/v1/roles", token: k.Key})
			switch r.code {
			case 200:
				ok.Add(1)
			case 429:
				limited.Add(1)
				retry.Store(r.header.Get("Retry-After"))
			default:
				other.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != limit || limited.Load() != 1000-limit || other.Load() != 0 {
		t.Fatalf("admitted %d, limited %d, other %d; want exactly %d admitted", ok.Load(), limited.Load(), other.Load(), limit)
	}
	if ra, _ := retry.Load().(string); ra == "" || ra == "0" {
		t.Fatalf("Retry-After %q", ra)
	}
	// Invalid keys are throttled too (before validation)...
	for i := 0; i < limit; i++ {
		if r := h.do(req{method: "GET", path: "/api/v1/roles", token: "lcm_bogus"}); r.code != 401 {
			t.Fatalf("invalid key #%d: %d", i, r.code)
		}
	}
	if r := h.do(req{method: "GET", path: "/api/v1/roles", token: "lcm_bogus"}); r.code != 429 {
		t.Fatalf("invalid key over the limit: %d", r.code)
	}
	// ...JWT sessions are not.
	for i := 0; i < limit+5; i++ {
		if r := h.do(req{method: "GET", path: "/api/v1/roles", token: admin}); r.code != 200 {
			t.Fatalf("JWT request #%d: %d", i, r.code)
		}
	}
	// Next window admits again.
	h.clock.off += time.Minute
	if r := h.do(req{method: "GET", path: "/api/v1/roles", token: k.Key}); r.code != 200 {
		t.Fatalf("next window: %d", r.code)
	}
}

func TestLockoutPerIPExactUnderParallelAttempts(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	var fails, locked atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := h.do(req{method: "POST", path: "/api/v1/auth/login", ip: "203.0.113.5",
				body: map[string]string{"username": "admin", "password": "Wrong-Password-99x"}})
			switch r.code {
			case 401:
				fails.Add(1)
			case 429:
				locked.Add(1)
				if r.header.Get("Retry-After") == "" {
					t.Error("429 without Retry-After")
				}
			default:
				t.Errorf("unexpected %d %s", r.code, r.body)
			}
		}()
	}
	wg.Wait()
	if fails.Load() != 5 || locked.Load() != 195 {
		t.Fatalf("per-IP: %d checked, %d locked; want exactly 5 checked", fails.Load(), locked.Load())
	}
	// Even the right password is refused from that address now...
	if r := h.do(req{method: "POST", path: "/api/v1/auth/login", ip: "203.0.113.5", body: map[string]string{"username": "admin", "password": adminPW}}); r.code != 429 {
		t.Fatalf("locked IP with right password: %d", r.code)
	}
	// ...but another address still gets in (the account has 5 of 15).
	h.login("admin", adminPW)
	// The lockout ends after 30 s (first lockout) ...
	h.clock.off = 31 * time.Second
	if r := h.do(req{method: "POST", path: "/api/v1/auth/login", ip: "203.0.113.5", body: map[string]string{"username": "admin", "password": adminPW}}); r.code != 200 {
		t.Fatalf("after the lockout: %d %s", r.code, r.body)
	}
	var page auditPageDTO
	h.do(req{method: "GET", path: "/api/v1/audit?action=auth.login_locked&limit=1", token: h.login("admin", adminPW)}).json(t, &page)
	if page.Total == 0 {
		t.Fatal("lockouts not audited")
	}
}

func TestLockoutPerAccount(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	codes := map[int]int{}
	for i := 0; i < 20; i++ {
		// A fresh address each time: only the account counter applies.
		r := h.do(req{method: "POST", path: "/api/v1/auth/login", ip: fmt.Sprintf("203.0.113.%d", 100+i),
			body: map[string]string{"username": "admin", "password": "Wrong-Password-99x"}})
		codes[r.code]++
	}
	if codes[401] != 15 || codes[429] != 5 {
		t.Fatalf("per account: %v; want 15 checked then locked", codes)
	}
	// Unknown accounts are counted the same way (no enumeration).
	codes = map[int]int{}
	for i := 0; i < 16; i++ {
		r := h.do(req{method: "POST", path: "/api/v1/auth/login", ip: fmt.Sprintf("203.0.114.%d", 100+i),
			body: map[string]string{"username": "ghost", "password": "Wrong-Password-99x"}})
		codes[r.code]++
	}
	if codes[401] != 15 || codes[429] != 1 {
		t.Fatalf("unknown account: %v", codes)
	}
}

func TestMalformedBodies(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	admin := h.login("admin", adminPW)
	bodies := []any{"", "{", "[]", `{"username": 5, "password": "x"}`, `{"username": "a"}`, `{"username":"a","password":"b","extra":1}`,
		`{"username":"a","password":"b"} trailing`, `null`, strings.Repeat("x", 2<<20)}
	paths := []struct {
		path  string
		token string
	}{
		{"/api/v1/auth/login", ""}, {"/api/v1/auth/login/2fa", ""}, {"/api/v1/auth/password-reset", ""},
		{"/api/v1/auth/password-reset/confirm", ""}, {"/api/v1/users/activation-links/consume", ""},
		{"/api/v1/users", admin}, {"/api/v1/apikeys", admin}, {"/api/v1/auth/2fa/enable", admin},
		{"/api/v1/profile/update", admin}, {"/api/v1/users/activation-links/generate", admin},
	}
	for _, p := range paths {
		for i, b := range bodies {
			r := h.do(req{method: "POST", path: p.path, token: p.token, body: b, ip: fmt.Sprintf("198.18.%d.%d", i, len(p.path))})
			if r.code != 400 && r.code != 413 {
				t.Errorf("POST %s body #%d: %d %s", p.path, i, r.code, r.body)
				continue
			}
			var e errorBody
			if json.Unmarshal(r.body, &e) != nil || e.Error == "" {
				t.Errorf("POST %s body #%d: no {error}: %s", p.path, i, r.body)
			}
		}
	}
	for _, p := range []string{"/api/v1/settings/security"} {
		for i, b := range []any{"{", `{"allowed_ips": "x"}`, `{"api_key_rate_limit_per_minute": "many"}`, `{"nope": 1}`} {
			if r := h.do(req{method: "PATCH", path: p, token: admin, body: b}); r.code != 400 {
				t.Errorf("PATCH %s #%d: %d %s", p, i, r.code, r.body)
			}
		}
	}
}

func TestForced2FAAndSharedCounter(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	admin := h.login("admin", adminPW)
	var me userDTO
	h.do(req{method: "GET", path: "/api/v1/auth/me", token: admin}).json(t, &me)
	if !me.MustSetup2FA {
		t.Fatal("admin not forced to set up 2FA on a fresh DB")
	}
	// Fail-closed allowlist: everything but the remediation routes is refused.
	for _, p := range []string{"/api/v1/users", "/api/v1/profile", "/api/v1/apikeys", "/api/v1/settings/security"} {
		if r := h.do(req{method: "GET", path: p, token: admin}); r.code != 403 || r.code2(t) != "2fa_setup_required" {
			t.Errorf("GET %s during forced setup: %d %s", p, r.code, r.body)
		}
	}
	r := h.do(req{method: "POST", path: "/api/v1/auth/2fa/setup", token: admin})
	var setup setup2FAResponse
	r.json(t, &setup)
	png, _ := base64.StdEncoding.DecodeString(setup.QRPNG)
	if r.code != 200 || setup.Secret == "" || !strings.HasPrefix(setup.OTPAuthURI, "otpauth://totp/") || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("setup: %d %s", r.code, r.body)
	}
	code := func(at time.Time) string {
		c, err := totp.GenerateCode(setup.Secret, at)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if r := h.do(req{method: "POST", path: "/api/v1/auth/2fa/enable", token: admin, body: map[string]string{"code": "000000"}}); r.code != 401 {
		t.Fatalf("enable with wrong code: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "POST", path: "/api/v1/auth/2fa/enable", token: admin, body: map[string]string{"code": code(h.clock.now())}}); r.code != 200 {
		t.Fatalf("enable: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/users", token: admin}); r.code != 200 {
		t.Fatalf("after enabling 2FA: %d", r.code)
	}
	// Login now needs the challenge.
	r = h.do(req{method: "POST", path: "/api/v1/auth/login", body: map[string]string{"username": "admin", "password": adminPW}})
	var ch challengeResponse
	r.json(t, &ch)
	if !ch.TwoFactorRequired || ch.Challenge == "" || strings.Contains(string(r.body), `"token"`) {
		t.Fatalf("challenge: %s", r.body)
	}
	// The challenge is not a session token.
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: ch.Challenge}); r.code != 401 {
		t.Fatalf("challenge as bearer: %d", r.code)
	}
	// Replay of the code used to enable is refused.
	if r := h.do(req{method: "POST", path: "/api/v1/auth/login/2fa", body: map[string]string{"challenge": ch.Challenge, "code": code(h.clock.now())}}); r.code != 401 {
		t.Fatalf("replayed code: %d %s", r.code, r.body)
	}
	h.clock.off += 30 * time.Second
	r = h.do(req{method: "POST", path: "/api/v1/auth/login/2fa", body: map[string]string{"challenge": ch.Challenge, "code": code(h.clock.now())}})
	if r.code != 200 || !strings.Contains(string(r.body), `"token"`) {
		t.Fatalf("login 2fa: %d %s", r.code, r.body)
	}
	var lr struct{ Token string }
	r.json(t, &lr)
	tok := lr.Token
	// Shared counter: failures at login, disable and password change add
	// up on one per-account TOTP key (threshold 15), from fresh addresses.
	fails := 0
	for i := 0; fails < 15; i++ {
		ip := fmt.Sprintf("198.51.100.%d", i+1)
		var r resp
		switch i % 3 {
		case 0:
			r = h.do(req{method: "POST", path: "/api/v1/auth/login/2fa", ip: ip, body: map[string]string{"challenge": ch.Challenge, "code": "000000"}})
		case 1:
			r = h.do(req{method: "POST", path: "/api/v1/auth/2fa/disable", token: tok, ip: ip, body: map[string]string{"code": "000000"}})
		case 2:
			r = h.do(req{method: "POST", path: "/api/v1/users/" + me.ID + "/reset-password", token: tok, ip: ip,
				body: map[string]string{"password": "Another-Secret-71q", "current_password": adminPW, "code": "000000"}})
		}
		if r.code != 401 {
			t.Fatalf("failure %d (kind %d): %d %s", fails, i%3, r.code, r.body)
		}
		fails++
	}
	// Still inside the 30 s lockout: refused before the code is looked at.
	r = h.do(req{method: "POST", path: "/api/v1/auth/2fa/disable", token: tok, ip: "198.51.100.250", body: map[string]string{"code": code(h.clock.now())}})
	if r.code != 429 || r.header.Get("Retry-After") == "" {
		t.Fatalf("after 15 shared failures a valid code must be locked out: %d %s", r.code, r.body)
	}
}

func TestPasswordPolicyOnEverySetter(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	admin := h.login("admin", adminPW)
	for _, pw := range []string{"P4ssw0rd!2026", "password", "short1A!"} {
		r := h.do(req{method: "POST", path: "/api/v1/users", token: admin, body: map[string]any{"username": "pat", "password": pw}})
		if r.code != 400 || r.code2(t) == "" {
			t.Errorf("create with %q: %d %s", pw, r.code, r.body)
		}
	}
	r := h.do(req{method: "POST", path: "/api/v1/users", token: admin, body: map[string]any{"username": "pat", "password": "pat-Secure-Phrase-93"}})
	if r.code != 400 || r.code2(t) != "contains_identity" {
		t.Fatalf("identity: %d %s", r.code, r.body)
	}
	id := h.createUser(admin, "pat", "Velvet-Thunder-38q")
	if r := h.do(req{method: "POST", path: "/api/v1/users/" + id + "/reset-password", token: admin, body: map[string]any{"password": "P4ssw0rd!2026"}}); r.code != 400 || r.code2(t) != "common_password" {
		t.Fatalf("reset common: %d %s", r.code, r.body)
	}
	// Own password: current password required.
	pt := h.login("pat", "Velvet-Thunder-38q")
	if r := h.do(req{method: "POST", path: "/api/v1/users/" + id + "/reset-password", token: pt, body: map[string]any{"password": "Marble-Orchid-64z"}}); r.code != 400 {
		t.Fatalf("self without current: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "POST", path: "/api/v1/users/" + id + "/reset-password", token: pt, body: map[string]any{"password": "Marble-Orchid-64z", "current_password": "nope-Wrong-11"}}); r.code != 403 {
		t.Fatalf("self wrong current: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "POST", path: "/api/v1/users/" + id + "/reset-password", token: pt, body: map[string]any{"password": "Marble-Orchid-64z", "current_password": "Velvet-Thunder-38q"}}); r.code != 204 {
		t.Fatalf("self change: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: pt}); r.code != 401 {
		t.Fatalf("old session after password change: %d", r.code)
	}
	h.login("pat", "Marble-Orchid-64z")
	// Another user's password needs users:write.
	if r := h.do(req{method: "POST", path: "/api/v1/users/" + userID(t, h, admin) + "/reset-password", token: h.login("pat", "Marble-Orchid-64z"), body: map[string]any{"password": "Marble-Orchid-64z"}}); r.code != 403 {
		t.Fatalf("other's password without permission: %d", r.code)
	}
}

var linkRe = regexp.MustCompile(`https?://\S+\?token=[A-Za-z0-9_%-]+`)

func TestInvitationAndResetMails(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	admin := h.login("admin", adminPW)
	// Links come from public_base_url, never from the Host header.
	if r := h.do(req{method: "PATCH", path: "/api/v1/settings/security", token: admin, body: map[string]any{"public_base_url": "https://lcm.example.org/"}}); r.code != 200 {
		t.Fatalf("settings: %d %s", r.code, r.body)
	}
	r := h.do(req{method: "POST", path: "/api/v1/users", token: admin, headers: map[string]string{"Host": "evil.example"},
		body: map[string]any{"username": "ivy", "email": "ivy@example.test", "roles": []string{"manager"}}})
	if r.code != 201 {
		t.Fatalf("invite: %d %s", r.code, r.body)
	}
	m := h.sink.WaitFor(t, "ivy@example.test", 10*time.Second)
	link := linkRe.FindString(m.Text())
	if !strings.HasPrefix(link, "https://lcm.example.org/activate?token=") || strings.Contains(m.Data, "evil.example") {
		t.Fatalf("invitation link %q in:\n%s", link, m.Text())
	}
	u, _ := url.Parse(link)
	tok := u.Query().Get("token")
	if r := h.do(req{method: "POST", path: "/api/v1/users/activation-links/consume", body: map[string]string{"token": tok, "password": "P4ssw0rd!2026"}}); r.code != 400 || r.code2(t) != "common_password" {
		t.Fatalf("weak password through link: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "POST", path: "/api/v1/users/activation-links/consume", body: map[string]string{"token": tok, "password": "Sunlit-Meadow-47k"}}); r.code != 204 {
		t.Fatalf("consume: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "POST", path: "/api/v1/users/activation-links/consume", body: map[string]string{"token": tok, "password": "Sunlit-Meadow-47k"}}); r.code != 400 || r.code2(t) != "invalid_token" {
		t.Fatalf("second use: %d %s", r.code, r.body)
	}
	h.login("ivy", "Sunlit-Meadow-47k")
	// Reset: 202 for known and unknown alike; the mail link works once.
	for _, who := range []string{"ivy@example.test", "nobody@example.test"} {
		if r := h.do(req{method: "POST", path: "/api/v1/auth/password-reset", body: map[string]string{"username_or_email": who}}); r.code != 202 {
			t.Fatalf("reset request %s: %d", who, r.code)
		}
	}
	testutil.WaitFor(t, 10*time.Second, "reset mail", func() bool { return h.sink.Count("ivy@example.test") == 2 })
	msgs := h.sink.Messages()
	link = linkRe.FindString(msgs[len(msgs)-1].Text())
	if !strings.HasPrefix(link, "https://lcm.example.org/reset-password?token=") {
		t.Fatalf("reset link %q", link)
	}
	u, _ = url.Parse(link)
	if r := h.do(req{method: "POST", path: "/api/v1/auth/password-reset/confirm", body: map[string]string{"token": u.Query().Get("token"), "password": "Copper-Harbor-52m"}}); r.code != 204 {
		t.Fatalf("confirm: %d %s", r.code, r.body)
	}
	h.login("ivy", "Copper-Harbor-52m")
	if h.sink.Count("nobody@example.test") != 0 {
		t.Fatal("mail to an unknown address")
	}
	// A second request within a minute is answered alike but mails nothing.
	if r := h.do(req{method: "POST", path: "/api/v1/auth/password-reset", body: map[string]string{"username_or_email": "ivy"}}); r.code != 202 {
		t.Fatalf("throttled reset request: %d", r.code)
	}
	var audit struct {
		Items []struct{ Action, Target string } `json:"items"`
	}
	h.do(req{method: "GET", path: "/api/v1/audit?action=user.reset_throttled", token: admin}).json(t, &audit)
	if len(audit.Items) != 1 || audit.Items[0].Target != "ivy" {
		t.Fatalf("throttle not audited: %+v", audit)
	}
	time.Sleep(300 * time.Millisecond) // a mail would be on its way by now
	if n := h.sink.Count("ivy@example.test"); n != 2 {
		t.Fatalf("%d mails to ivy, want 2 (the throttled request sent one)", n)
	}
}

func TestSettingsValidationAndAllowlist(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	admin := h.login("admin", adminPW)
	patch := func(body any, ip string) resp {
		return h.do(req{method: "PATCH", path: "/api/v1/settings/security", token: admin, body: body, ip: ip})
	}
	for _, tc := range []struct {
		body any
		code string
	}{
		{map[string]any{"require_2fa_roles": []string{"admin", "wizard"}}, "unknown_role"},
		{map[string]any{"allowed_ips": []string{"10.0.0.1/8"}}, "invalid_allowed_ips"},
		{map[string]any{"allowed_ips": []string{"10.0.0.0/8"}}, "would_lock_out"},
		{map[string]any{"api_key_rate_limit_per_minute": -1}, "invalid_rate_limit"},
		{map[string]any{"access_token_ttl_minutes": 0}, "invalid_ttl"},
		{map[string]any{"public_base_url": "javascript:alert(1)"}, "invalid_public_base_url"},
	} {
		if r := patch(tc.body, ""); r.code != 400 || r.code2(t) != tc.code {
			t.Errorf("%v: %d %s", tc.body, r.code, r.body)
		}
	}
	r := patch(map[string]any{"allowed_ips": []string{"localhost", "192.0.2.0/24"}, "require_2fa_roles": []string{"manager"}}, "")
	var set settingsDTO
	r.json(t, &set)
	if r.code != 200 || len(set.AllowedIPs) != 2 || set.Require2FARoles[0] != "manager" {
		t.Fatalf("save: %d %s", r.code, r.body)
	}
	// Outside the list: 403 before authentication (even with a valid token).
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: admin, ip: "203.0.113.9"}); r.code != 403 || r.code2(t) != "ip_not_allowed" {
		t.Fatalf("outside allowlist: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/health", ip: "203.0.113.9"}); r.code != 403 {
		t.Fatalf("outside allowlist, public route: %d", r.code)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: admin, ip: "127.0.0.1"}); r.code != 200 {
		t.Fatalf("localhost: %d", r.code)
	}
	// X-Forwarded-For only with trust_proxy_header.
	xff := map[string]string{"X-Forwarded-For": "192.0.2.50"}
	if r := h.do(req{method: "GET", path: "/api/v1/health", ip: "203.0.113.9", headers: xff}); r.code != 403 {
		t.Fatalf("XFF honoured without trust_proxy_header: %d", r.code)
	}
	if r := patch(map[string]any{"trust_proxy_header": true}, "192.0.2.1"); r.code != 200 {
		t.Fatalf("trust proxy: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/health", ip: "203.0.113.9", headers: xff}); r.code != 200 {
		t.Fatalf("XFF with trust_proxy_header: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/health", ip: "192.0.2.1", headers: map[string]string{"X-Forwarded-For": "192.0.2.50, 203.0.113.9"}}); r.code != 403 {
		t.Fatalf("right-most XFF entry not used: %d", r.code)
	}
}

func TestProfile(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	admin := h.login("admin", adminPW)
	var p profileDTO
	r := h.do(req{method: "GET", path: "/api/v1/profile", token: admin})
	r.json(t, &p)
	if p.Username != "admin" || p.Role != "admin" {
		t.Fatalf("profile: %s", r.body)
	}
	r = h.do(req{method: "POST", path: "/api/v1/profile/update", token: admin, body: map[string]string{"displayName": "Ada", "email": "ada@example.test"}})
	r.json(t, &p)
	if r.code != 200 || p.DisplayName != "Ada" || p.Email != "ada@example.test" || !strings.Contains(string(r.body), `"displayName"`) {
		t.Fatalf("update: %d %s", r.code, r.body)
	}
	for _, b := range []any{map[string]string{"displayName": "A", "email": "not-an-email"}, map[string]any{"displayName": 5, "email": "a@b.c"},
		map[string]string{"displayName": "A"}, map[string]string{"displayName": "bad\x00name", "email": "a@example.test"}, "{"} {
		r := h.do(req{method: "POST", path: "/api/v1/profile/update", token: admin, body: b})
		var e errorBody
		if r.code != 400 || json.Unmarshal(r.body, &e) != nil || e.Error == "" {
			t.Errorf("%v: %d %s", b, r.code, r.body)
		}
	}
}

func TestSignedInHealthDiagnostics(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	// The harness has no health monitor, so the signed-in view is checked
	// through the real binary in cmd/api; here: anonymous stays minimal and
	// a bad token does not break the public route.
	r := h.do(req{method: "GET", path: "/api/v1/health", token: "garbage"})
	if r.code != 200 || string(r.body) != `{"status":"ok"}` {
		t.Fatalf("health with a bad token: %d %s", r.code, r.body)
	}
}

func TestAuditChain(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dbURL: db.URL, no2FA: true})
			admin := h.login("admin", adminPW)
			var key apiKeyDTO
			h.do(req{method: "POST", path: "/api/v1/apikeys", token: admin, body: map[string]any{"name": "audited"}}).json(t, &key)
			h.do(req{method: "POST", path: "/api/v1/auth/login", body: map[string]string{"username": "admin", "password": "Wrong-Password-99x"}, ip: "192.0.2.99"})
			var page auditPageDTO
			r := h.do(req{method: "GET", path: "/api/v1/audit", token: admin})
			r.json(t, &page)
			actions := map[string]bool{}
			for _, e := range page.Items {
				actions[e.Action] = true
			}
			for _, a := range []string{"auth.login", "apikey.created", "auth.login_failed"} {
				if !actions[a] {
					t.Errorf("no %s in %s", a, r.body)
				}
			}
			if strings.Contains(string(r.body), "Wrong-Password") || strings.Contains(string(r.body), adminPW) || strings.Contains(string(r.body), key.Key) || strings.Contains(string(r.body), admin) {
				t.Fatal("audit contains a secret")
			}
			if n, err := h.svc.VerifyAudit(t.Context()); err != nil || n != page.Total {
				t.Fatalf("verify: %d %v", n, err)
			}
			sqlDB, _ := h.st.SQL()
			q := "UPDATE audit_log SET target = 'mallory' WHERE seq = 2"
			if _, err := sqlDB.Exec(q); err != nil {
				t.Fatal(err)
			}
			if _, err := h.svc.VerifyAudit(t.Context()); err == nil || !strings.Contains(err.Error(), "entry 2") {
				t.Fatalf("tampering not detected: %v", err)
			}
			if r := h.do(req{method: "GET", path: "/api/v1/audit", token: h.login("admin", adminPW)}); r.code != 200 {
				t.Fatal(r.code)
			}
		})
	}
}
