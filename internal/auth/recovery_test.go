package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	otptotp "github.com/pquerna/otp/totp"

	"github.com/lcmproject/lcm/internal/auth/password"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

const recoveryTestPW = "Quiet-Lantern-Orbit-58"

var recoveryCodeShape = regexp.MustCompile(`^[a-hjkmnp-z2-9]{5}-[a-hjkmnp-z2-9]{5}$`)

type recoveryEnv struct {
	t     *testing.T
	st    *store.Store
	svc   *Service
	clock *time.Duration
}

func newRecoveryEnv(t *testing.T, dbURL string) *recoveryEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st := storetest.OpenIn(t, dbURL, dir)
	hasher, err := password.NewHasher(password.Params{Memory: 8 * 1024, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SeedIdentity(ctx, func() (string, error) { return hasher.Hash(ctx, recoveryTestPW) }); err != nil {
		t.Fatal(err)
	}
	b, err := bus.Open(ctx, bus.Options{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cas := func(name string) *bus.CAS {
		c, err := b.NewCAS(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ep, err := NewEpoch(ctx, strings.Repeat("s", 48), cas(bus.BucketAuth), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	off := new(time.Duration)
	svc := New(Options{Store: st, Hasher: hasher, Lockout: cas(bus.BucketLockout), RateLimit: cas(bus.BucketRateLimit),
		Epoch: ep, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), No2FA: true,
		Now: func() time.Time { return time.Now().Add(*off) }})
	if err := svc.SeedSettings(ctx, SecuritySettings{APIKeyRateLimitPerMinute: 120, AccessTokenTTLMinutes: 60}); err != nil {
		t.Fatal(err)
	}
	return &recoveryEnv{t: t, st: st, svc: svc, clock: off}
}

// ctx is a request context from the client address ip.
func ipCtx(ip string) context.Context {
	return WithClientIP(context.Background(), netip.MustParseAddr(ip))
}

func (e *recoveryEnv) principal(username string) *domain.Principal {
	e.t.Helper()
	u, err := e.st.GetUserByUsername(context.Background(), username)
	if err != nil {
		e.t.Fatal(err)
	}
	perms := map[string]bool{}
	for _, p := range u.Permissions {
		perms[p] = true
	}
	return &domain.Principal{UserID: u.ID, Username: u.Username, Roles: u.Roles, Permissions: perms, Method: domain.AuthSession}
}

// totpNow is a valid code for the next unused 30 s step: the clock moves
// on one step first, so no code is a replay of the one before.
func (e *recoveryEnv) totpNow(secret string) string {
	e.t.Helper()
	*e.clock += 30 * time.Second
	c, err := otptotp.GenerateCode(secret, e.svc.now())
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// enable sets up and enables 2FA for p and returns the secret and codes.
func (e *recoveryEnv) enable(p *domain.Principal) (string, []string) {
	e.t.Helper()
	ctx := ipCtx("192.0.2.10")
	setup, err := e.svc.Setup2FA(ctx, p)
	if err != nil {
		e.t.Fatal(err)
	}
	u, codes, err := e.svc.Enable2FA(ctx, p, e.totpNow(setup.Secret))
	if err != nil || !u.TOTPEnabled {
		e.t.Fatalf("enable: %v", err)
	}
	return setup.Secret, codes
}

func (e *recoveryEnv) challenge(username, ip string) string {
	e.t.Helper()
	r, err := e.svc.Login(ipCtx(ip), username, recoveryTestPW)
	if err != nil || r.Challenge == "" {
		e.t.Fatalf("login %s: %v %+v", username, err, r)
	}
	return r.Challenge
}

func (e *recoveryEnv) auditCount(action string) int64 {
	e.t.Helper()
	_, n, err := e.st.ListAudit(context.Background(), store.AuditFilter{Action: action, Limit: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func errCode(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Code
	}
	return ""
}

func TestRecoveryCodeNormalizeAndShape(t *testing.T) {
	for in, want := range map[string]string{"ABCDE-FGHJK": "abcdefghjk", " abcde fghjk ": "abcdefghjk", "ab-cd-ef": "abcdef"} {
		if got := NormalizeRecoveryCode(in); got != want {
			t.Errorf("NormalizeRecoveryCode(%q) = %q, want %q", in, got, want)
		}
	}
	for code, ok := range map[string]bool{"abcdefghjk": true, "abcdefghj": false, "abcdefghjkm": false, "abcdefghj0": false, "abcdefghjl": false, "abcdéfghjk": false} {
		if validRecoveryShape(code) != ok {
			t.Errorf("validRecoveryShape(%q) != %v", code, ok)
		}
	}
	plain, hashes, err := newRecoverySet()
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) != RecoveryCodeCount || len(hashes) != RecoveryCodeCount {
		t.Fatalf("set of %d/%d", len(plain), len(hashes))
	}
	salts := map[string]bool{}
	for i, c := range plain {
		if !recoveryCodeShape.MatchString(c) {
			t.Errorf("code %q has the wrong shape", c)
		}
		if salts[hashes[i].Salt] {
			t.Error("two codes share a salt")
		}
		salts[hashes[i].Salt] = true
		if strings.Contains(hashes[i].Hash, NormalizeRecoveryCode(c)) || len(hashes[i].Hash) != 64 {
			t.Errorf("stored hash %q of %q", hashes[i].Hash, c)
		}
	}
}

// TestRecoveryCodes runs the whole life of a set on SQLite and PostgreSQL:
// issued at enable, sign-in with a code (any case, with or without the
// dash), single use, regeneration with password or TOTP invalidating the
// old set, disable with a recovery code, and the admin reset.
func TestRecoveryCodes(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			e := newRecoveryEnv(t, db.URL)
			ctx := context.Background()
			admin := e.principal("admin")
			secret, codes := e.enable(admin)
			if len(codes) != RecoveryCodeCount {
				t.Fatalf("enable gave %d codes", len(codes))
			}
			st, err := e.svc.RecoveryCodeStatus(ctx, admin)
			if err != nil || st.Remaining != 10 || st.Total != 10 || st.Low || st.GeneratedAt == nil {
				t.Fatalf("status after enable: %+v %v", st, err)
			}

			// Sign in with a code typed in upper case without the dash.
			typed := strings.ToUpper(strings.ReplaceAll(codes[3], "-", ""))
			r, err := e.svc.Login2FA(ipCtx("192.0.2.11"), e.challenge("admin", "192.0.2.11"), SecondFactor{RecoveryCode: typed})
			if err != nil || r.Token == "" || r.RecoveryCodesRemaining == nil || *r.RecoveryCodesRemaining != 9 {
				t.Fatalf("login with recovery code: %v %+v", err, r)
			}
			if n := e.auditCount("auth.recovery_code_used"); n != 1 {
				t.Fatalf("auth.recovery_code_used entries: %d", n)
			}
			// The same code a second time is refused.
			_, err = e.svc.Login2FA(ipCtx("192.0.2.12"), e.challenge("admin", "192.0.2.12"), SecondFactor{RecoveryCode: codes[3]})
			if !errors.Is(err, domain.ErrUnauthenticated) || errCode(err) != "invalid_recovery_code" {
				t.Fatalf("reused code: %v", err)
			}
			if n := e.auditCount("auth.recovery_code_failed"); n != 1 {
				t.Fatalf("auth.recovery_code_failed entries: %d", n)
			}
			// Both fields at once is a client mistake.
			if _, err := e.svc.Login2FA(ctx, "x", SecondFactor{Code: "123456", RecoveryCode: codes[0]}); !errors.Is(err, domain.ErrInvalid) {
				t.Fatalf("code and recovery code: %v", err)
			}

			// Regeneration needs the password or a TOTP code.
			if _, err := e.svc.RegenerateRecoveryCodes(ctx, admin, Reauth{}); !errors.Is(err, domain.ErrInvalid) {
				t.Fatalf("regenerate without proof: %v", err)
			}
			if _, err := e.svc.RegenerateRecoveryCodes(ipCtx("192.0.2.13"), admin, Reauth{Password: "Wrong-Password-123"}); errCode(err) != "wrong_password" {
				t.Fatalf("regenerate with a wrong password: %v", err)
			}
			fresh, err := e.svc.RegenerateRecoveryCodes(ipCtx("192.0.2.13"), admin, Reauth{Password: recoveryTestPW})
			if err != nil || len(fresh) != RecoveryCodeCount {
				t.Fatalf("regenerate with password: %v %d", err, len(fresh))
			}
			if _, err := e.svc.Login2FA(ipCtx("192.0.2.14"), e.challenge("admin", "192.0.2.14"), SecondFactor{RecoveryCode: codes[0]}); errCode(err) != "invalid_recovery_code" {
				t.Fatalf("old set still works after regeneration: %v", err)
			}
			again, err := e.svc.RegenerateRecoveryCodes(ipCtx("192.0.2.15"), admin, Reauth{Code: e.totpNow(secret)})
			if err != nil || len(again) != RecoveryCodeCount {
				t.Fatalf("regenerate with TOTP: %v", err)
			}
			if _, err := e.svc.Login2FA(ipCtx("192.0.2.16"), e.challenge("admin", "192.0.2.16"), SecondFactor{RecoveryCode: fresh[0]}); errCode(err) != "invalid_recovery_code" {
				t.Fatalf("previous set still works: %v", err)
			}
			if n := e.auditCount("auth.recovery_codes_regenerated"); n != 2 {
				t.Fatalf("auth.recovery_codes_regenerated entries: %d", n)
			}
			// Spending codes down to 2 makes the status low.
			for i := 0; i < 8; i++ {
				ip := fmt.Sprintf("192.0.2.%d", 20+i)
				if _, err := e.svc.Login2FA(ipCtx(ip), e.challenge("admin", ip), SecondFactor{RecoveryCode: again[i]}); err != nil {
					t.Fatalf("code %d: %v", i, err)
				}
			}
			if st, _ := e.svc.RecoveryCodeStatus(ctx, admin); st.Remaining != 2 || !st.Low {
				t.Fatalf("status after 8 uses: %+v", st)
			}

			// Disabling with a recovery code deletes the rest.
			if _, err := e.svc.Disable2FA(ipCtx("192.0.2.40"), admin, SecondFactor{RecoveryCode: again[9]}); err != nil {
				t.Fatalf("disable with recovery code: %v", err)
			}
			if rc, _ := e.st.RecoveryCodes(ctx, admin.UserID); rc.Total != 0 {
				t.Fatalf("codes left after disable: %+v", rc)
			}
			if _, err := e.svc.RegenerateRecoveryCodes(ctx, admin, Reauth{Password: recoveryTestPW}); !errors.Is(err, domain.ErrConflict) {
				t.Fatalf("regenerate without 2FA: %v", err)
			}
		})
	}
}

// TestRecoveryCodeSharesTOTPLimit: failed recovery codes and failed TOTP
// codes add up on the one per-account TOTP key (15), so a valid recovery
// code is then locked out like a valid TOTP code.
func TestRecoveryCodeSharesTOTPLimit(t *testing.T) {
	e := newRecoveryEnv(t, "")
	admin := e.principal("admin")
	_, codes := e.enable(admin)
	ch := e.challenge("admin", "198.51.100.1")
	for i := 0; i < 15; i++ {
		ctx := ipCtx(fmt.Sprintf("203.0.113.%d", i+1))
		f, want := SecondFactor{RecoveryCode: "aaaaa-bbbbb"}, "invalid_recovery_code"
		if i%2 == 1 {
			f, want = SecondFactor{Code: "000000"}, "invalid_code"
		}
		if _, err := e.svc.Login2FA(ctx, ch, f); errCode(err) != want {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	_, err := e.svc.Login2FA(ipCtx("203.0.113.100"), ch, SecondFactor{RecoveryCode: codes[0]})
	if !errors.Is(err, domain.ErrRateLimited) {
		t.Fatalf("valid recovery code after 15 shared failures: %v", err)
	}
	if _, ok := RetryAfter(err); !ok {
		t.Fatal("no retry-after on the lockout")
	}
	// The lockout refused before the code was looked at: it is still unused.
	if rc, _ := e.st.RecoveryCodes(context.Background(), admin.UserID); rc.Remaining != RecoveryCodeCount {
		t.Fatalf("a locked-out attempt spent a code: %+v", rc)
	}
}

// TestRecoveryCodeSingleUseUnderRace: two sign-ins racing with the same
// code; exactly one wins (conditional update in the database).
func TestRecoveryCodeSingleUseUnderRace(t *testing.T) {
	for _, db := range testutil.Databases(t) {
		t.Run(db.Name, func(t *testing.T) {
			e := newRecoveryEnv(t, db.URL)
			admin := e.principal("admin")
			_, codes := e.enable(admin)
			const n = 4
			chs := make([]string, n)
			for i := range chs {
				chs[i] = e.challenge("admin", fmt.Sprintf("198.51.100.%d", 10+i))
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			wins := 0
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					_, err := e.svc.Login2FA(ipCtx(fmt.Sprintf("198.51.100.%d", 50+i)), chs[i], SecondFactor{RecoveryCode: codes[5]})
					if err == nil {
						mu.Lock()
						wins++
						mu.Unlock()
					} else if errCode(err) != "invalid_recovery_code" {
						t.Errorf("racer %d: %v", i, err)
					}
				}(i)
			}
			wg.Wait()
			if wins != 1 {
				t.Fatalf("%d sign-ins with one code", wins)
			}
		})
	}
}

// TestReset2FA: an admin switches another user's 2FA off (secret, codes
// and sessions gone); not one's own, not without users:write.
func TestReset2FA(t *testing.T) {
	e := newRecoveryEnv(t, "")
	ctx := context.Background()
	admin := e.principal("admin")
	h, err := e.svc.hasher.Hash(ctx, recoveryTestPW)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateUser(ctx, store.NewUser{Username: "olga", PasswordHash: h, Active: true, Roles: []string{domain.RoleAdmin}}); err != nil {
		t.Fatal(err)
	}
	olga := e.principal("olga")
	e.enable(olga)
	e.enable(admin)
	if _, err := e.svc.Reset2FA(ctx, admin, admin.UserID); errCode(err) != "cannot_reset_own_2fa" {
		t.Fatalf("own reset: %v", err)
	}
	noPerm := &domain.Principal{UserID: "x", Username: "x", Permissions: map[string]bool{}}
	if _, err := e.svc.Reset2FA(ctx, noPerm, olga.UserID); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("reset without users:write: %v", err)
	}
	u, err := e.svc.Reset2FA(ctx, admin, olga.UserID)
	if err != nil || u.TOTPEnabled || u.TOTPSecret != "" || u.SessionsValidAfter == 0 {
		t.Fatalf("reset: %v %+v", err, u)
	}
	if rc, _ := e.st.RecoveryCodes(ctx, olga.UserID); rc.Total != 0 {
		t.Fatalf("codes left after reset: %+v", rc)
	}
	if n := e.auditCount("user.2fa_reset"); n != 1 {
		t.Fatalf("user.2fa_reset entries: %d", n)
	}
	// Olga signs in with the password alone again.
	if r, err := e.svc.Login(ipCtx("192.0.2.90"), "olga", recoveryTestPW); err != nil || r.Token == "" {
		t.Fatalf("login after reset: %v %+v", err, r)
	}
	if _, err := e.svc.Reset2FA(ctx, admin, olga.UserID); errCode(err) != "2fa_not_enabled" {
		t.Fatalf("second reset: %v", err)
	}
}

// BenchmarkRecoveryCodeHash is one argon2id hash of a recovery code; a
// sign-in with a recovery code costs up to RecoveryCodeCount of them.
func BenchmarkRecoveryCodeHash(b *testing.B) {
	salt := make([]byte, recoverySaltLen)
	for i := 0; i < b.N; i++ {
		hashRecoveryCode("abcdefghjk", salt)
	}
}
