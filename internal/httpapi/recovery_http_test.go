package httpapi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
)

type enableResp struct {
	userDTO
	RecoveryCodes []string `json:"recovery_codes"`
}

// enable2FAHTTP sets up and enables 2FA for the bearer tok and returns the
// secret and the recovery codes of the answer.
func (h *harness) enable2FAHTTP(tok string) (string, []string) {
	h.t.Helper()
	var setup setup2FAResponse
	h.do(req{method: "POST", path: "/api/v1/auth/2fa/setup", token: tok}).json(h.t, &setup)
	h.clock.off += 30 * time.Second
	c, err := totp.GenerateCode(setup.Secret, h.clock.now())
	if err != nil {
		h.t.Fatal(err)
	}
	r := h.do(req{method: "POST", path: "/api/v1/auth/2fa/enable", token: tok, body: map[string]string{"code": c}})
	var out enableResp
	r.json(h.t, &out)
	if r.code != 200 || !out.TOTPEnabled {
		h.t.Fatalf("enable: %d %s", r.code, r.body)
	}
	return setup.Secret, out.RecoveryCodes
}

func (h *harness) challengeHTTP(user, pw, ip string) string {
	h.t.Helper()
	var ch challengeResponse
	r := h.do(req{method: "POST", path: "/api/v1/auth/login", ip: ip, body: map[string]string{"username": user, "password": pw}})
	r.json(h.t, &ch)
	if r.code != 200 || ch.Challenge == "" {
		h.t.Fatalf("challenge: %d %s", r.code, r.body)
	}
	return ch.Challenge
}

func (h *harness) audits(action string) int64 {
	h.t.Helper()
	_, n, err := h.st.ListAudit(context.Background(), store.AuditFilter{Action: action, Limit: 1})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// TestRecoveryCodesHTTP is the HTTP contract of recovery codes on SQLite
// and PostgreSQL: codes in the enable answer, sign-in with a code through
// /auth/login/2fa (same result as a TOTP login plus the remaining count),
// single use, status, regeneration, disable with a code, and 400s for
// malformed bodies.
func TestRecoveryCodesHTTP(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{dbURL: db.URL, no2FA: true})
			admin := h.login("admin", adminPW)
			_, codes := h.enable2FAHTTP(admin)
			if len(codes) != 10 {
				t.Fatalf("enable answered %d codes", len(codes))
			}
			for _, c := range codes {
				if len(c) != 11 || c[5] != '-' {
					t.Fatalf("code %q is not xxxxx-xxxxx", c)
				}
			}
			var st recoveryStatusDTO
			r := h.do(req{method: "GET", path: "/api/v1/auth/2fa/recovery-codes", token: admin})
			r.json(t, &st)
			if r.code != 200 || st.Remaining != 10 || st.Total != 10 || st.Low || st.GeneratedAt == nil || strings.Contains(string(r.body), "recovery_codes") {
				t.Fatalf("status: %d %s", r.code, r.body)
			}

			// Malformed second-factor bodies are 400, not 401 and not counted.
			ch := h.challengeHTTP("admin", adminPW, "192.0.2.20")
			for i, b := range []any{
				map[string]string{"challenge": ch},
				map[string]string{"challenge": ch, "code": "123456", "recovery_code": codes[0]},
				map[string]any{"challenge": ch, "recovery_code": 5},
				map[string]string{"challenge": ch, "recovery_code": codes[0], "extra": "x"},
			} {
				if r := h.do(req{method: "POST", path: "/api/v1/auth/login/2fa", body: b}); r.code != 400 {
					t.Errorf("bad body #%d: %d %s", i, r.code, r.body)
				}
			}

			r = h.do(req{method: "POST", path: "/api/v1/auth/login/2fa", ip: "192.0.2.20", body: map[string]string{"challenge": ch, "recovery_code": strings.ToUpper(codes[0])}})
			var lr struct {
				Token     string  `json:"token"`
				User      userDTO `json:"user"`
				Remaining *int    `json:"recovery_codes_remaining"`
			}
			r.json(t, &lr)
			if r.code != 200 || lr.Token == "" || lr.User.Username != "admin" || lr.Remaining == nil || *lr.Remaining != 9 || len(r.cookies) == 0 {
				t.Fatalf("login with recovery code: %d %s", r.code, r.body)
			}
			if h.audits("auth.recovery_code_used") != 1 {
				t.Fatal("no auth.recovery_code_used audit entry")
			}
			// Second use of the same code.
			ch = h.challengeHTTP("admin", adminPW, "192.0.2.21")
			r = h.do(req{method: "POST", path: "/api/v1/auth/login/2fa", ip: "192.0.2.21", body: map[string]string{"challenge": ch, "recovery_code": codes[0]}})
			if r.code != 401 || r.code2(t) != "invalid_recovery_code" {
				t.Fatalf("reused code: %d %s", r.code, r.body)
			}

			// Regeneration.
			for i, b := range []any{map[string]string{}, map[string]string{"password": adminPW, "code": "123456"}, map[string]string{"pw": "x"}} {
				if r := h.do(req{method: "POST", path: "/api/v1/auth/2fa/recovery-codes", token: lr.Token, body: b}); r.code != 400 {
					t.Errorf("regenerate bad body #%d: %d %s", i, r.code, r.body)
				}
			}
			if r := h.do(req{method: "POST", path: "/api/v1/auth/2fa/recovery-codes", token: lr.Token, ip: "192.0.2.22", body: map[string]string{"password": "Not-The-Password-42"}}); r.code != 403 || r.code2(t) != "wrong_password" {
				t.Fatalf("regenerate, wrong password: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: "POST", path: "/api/v1/auth/2fa/recovery-codes", token: lr.Token, ip: "192.0.2.22", body: map[string]string{"code": "000000"}}); r.code != 401 || r.code2(t) != "invalid_code" {
				t.Fatalf("regenerate, wrong code: %d %s", r.code, r.body)
			}
			r = h.do(req{method: "POST", path: "/api/v1/auth/2fa/recovery-codes", token: lr.Token, ip: "192.0.2.22", body: map[string]string{"password": adminPW}})
			var regen recoveryStatusDTO
			r.json(t, &regen)
			if r.code != 200 || len(regen.Codes) != 10 || regen.Remaining != 10 || regen.Total != 10 {
				t.Fatalf("regenerate: %d %s", r.code, r.body)
			}
			ch = h.challengeHTTP("admin", adminPW, "192.0.2.23")
			if r := h.do(req{method: "POST", path: "/api/v1/auth/login/2fa", ip: "192.0.2.23", body: map[string]string{"challenge": ch, "recovery_code": codes[1]}}); r.code != 401 {
				t.Fatalf("old set after regeneration: %d %s", r.code, r.body)
			}
			if h.audits("auth.recovery_codes_regenerated") != 1 {
				t.Fatal("no auth.recovery_codes_regenerated audit entry")
			}

			// Disable with a recovery code.
			r = h.do(req{method: "POST", path: "/api/v1/auth/2fa/disable", token: lr.Token, ip: "192.0.2.24", body: map[string]string{"recovery_code": regen.Codes[4]}})
			var u userDTO
			r.json(t, &u)
			if r.code != 200 || u.TOTPEnabled {
				t.Fatalf("disable with recovery code: %d %s", r.code, r.body)
			}
			r = h.do(req{method: "GET", path: "/api/v1/auth/2fa/recovery-codes", token: lr.Token})
			st = recoveryStatusDTO{}
			r.json(t, &st)
			if r.code != 200 || st.Total != 0 || st.Low {
				t.Fatalf("status without 2FA: %d %s", r.code, r.body)
			}
			if r := h.do(req{method: "POST", path: "/api/v1/auth/2fa/recovery-codes", token: lr.Token, body: map[string]string{"password": adminPW}}); r.code != 409 {
				t.Fatalf("regenerate without 2FA: %d %s", r.code, r.body)
			}
		})
	}
}

// TestRecoveryCodeLockoutHTTP: recovery-code failures count with TOTP
// failures on the per-account key; then a valid code gets 429.
func TestRecoveryCodeLockoutHTTP(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	admin := h.login("admin", adminPW)
	_, codes := h.enable2FAHTTP(admin)
	ch := h.challengeHTTP("admin", adminPW, "192.0.2.30")
	for i := 0; i < 15; i++ {
		body := map[string]string{"challenge": ch, "recovery_code": "zzzzz-zzzzz"}
		if i%2 == 1 {
			body = map[string]string{"challenge": ch, "code": "000000"}
		}
		if r := h.do(req{method: "POST", path: "/api/v1/auth/login/2fa", ip: fmt.Sprintf("198.51.100.%d", i+1), body: body}); r.code != 401 {
			t.Fatalf("failure %d: %d %s", i, r.code, r.body)
		}
	}
	r := h.do(req{method: "POST", path: "/api/v1/auth/login/2fa", ip: "198.51.100.99", body: map[string]string{"challenge": ch, "recovery_code": codes[0]}})
	if r.code != 429 || r.header.Get("Retry-After") == "" {
		t.Fatalf("valid recovery code during lockout: %d %s", r.code, r.body)
	}
	// The TOTP lockout locks the account's password step too (docs/security.md),
	// right password or not, from any address.
	for _, pw := range []string{adminPW, "wrong-password"} {
		r := h.do(req{method: "POST", path: "/api/v1/auth/login", ip: "198.51.100.120", body: map[string]string{"username": "admin", "password": pw}})
		if r.code != 429 || r.code2(t) != "locked_out" || r.header.Get("Retry-After") == "" {
			t.Fatalf("password step during a TOTP lockout: %d %s", r.code, r.body)
		}
	}
	// Another account is not affected.
	if r := h.do(req{method: "POST", path: "/api/v1/auth/login", ip: "198.51.100.121", body: map[string]string{"username": "nobody", "password": "x"}}); r.code != 401 {
		t.Fatalf("another account: %d %s", r.code, r.body)
	}
}

// TestReset2FAHTTP: POST /users/{id}/2fa/reset needs users:write, refuses
// one's own account, and ends the user's sessions.
func TestReset2FAHTTP(t *testing.T) {
	h := newHarness(t, harnessOpts{no2FA: true})
	admin := h.login("admin", adminPW)
	const pw = "Granite-Meadow-Falcon-19"
	id := h.createUser(admin, "rita", pw)
	rita := h.login("rita", pw)
	h.enable2FAHTTP(rita)
	if r := h.do(req{method: "POST", path: "/api/v1/users/" + id + "/2fa/reset", token: rita}); r.code != 403 {
		t.Fatalf("reset without users:write: %d %s", r.code, r.body)
	}
	var me userDTO
	h.do(req{method: "GET", path: "/api/v1/auth/me", token: admin}).json(t, &me)
	if r := h.do(req{method: "POST", path: "/api/v1/users/" + me.ID + "/2fa/reset", token: admin}); r.code != 409 || r.code2(t) != "cannot_reset_own_2fa" {
		t.Fatalf("own reset: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "POST", path: "/api/v1/users/" + id + "/2fa/reset", token: admin, body: `{"x":1}`}); r.code != 400 {
		t.Fatalf("reset with a body: %d %s", r.code, r.body)
	}
	r := h.do(req{method: "POST", path: "/api/v1/users/" + id + "/2fa/reset", token: admin})
	var u userDTO
	r.json(t, &u)
	if r.code != 200 || u.TOTPEnabled || u.Username != "rita" {
		t.Fatalf("reset: %d %s", r.code, r.body)
	}
	if r := h.do(req{method: "GET", path: "/api/v1/auth/me", token: rita}); r.code != 401 {
		t.Fatalf("rita's session after the reset: %d", r.code)
	}
	if h.audits("user.2fa_reset") != 1 {
		t.Fatal("no user.2fa_reset audit entry")
	}
	if r := h.do(req{method: "POST", path: "/api/v1/users/nope/2fa/reset", token: admin}); r.code != 404 {
		t.Fatalf("unknown user: %d %s", r.code, r.body)
	}
}
