package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
)

// stubAuth answers the guard's questions from fixed values, to prove the
// order and the HTTP answers of the checks (the real identity service is
// exercised end to end in cmd/api's TestMCPListenerE2E).
type stubAuth struct {
	allowedIP bool
	rateOK    bool
	key       string
	calls     []string
}

func (s *stubAuth) AuthenticateMCP(_ context.Context, key string) (*domain.Principal, error) {
	s.calls = append(s.calls, "auth")
	if key != s.key {
		return nil, &domain.Error{Kind: domain.ErrUnauthenticated, Code: "invalid_api_key", Message: "no"}
	}
	return &domain.Principal{UserID: "u"}, nil
}

func (s *stubAuth) AllowAPIKey(context.Context, string) (bool, time.Duration, error) {
	s.calls = append(s.calls, "rate")
	return s.rateOK, 20 * time.Second, nil
}

func (s *stubAuth) ClientAddr(_ context.Context, remote string, _ []string) netip.Addr {
	s.calls = append(s.calls, "addr")
	ap, _ := netip.ParseAddrPort(remote)
	return ap.Addr()
}

func (s *stubAuth) Allowed(context.Context, netip.Addr) bool { return s.allowedIP }

func TestGuardOrderAndAnswers(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, has := r.Context().Value(principalKey{}).(*domain.Principal); !has {
			t.Error("no principal in the context")
		}
		w.WriteHeader(299)
	})
	cases := []struct {
		name          string
		auth          stubAuth
		header        string
		code          int
		errCode       string
		calls         string
		wwwAuth, retr bool
	}{
		{"not on the allowlist", stubAuth{allowedIP: false, rateOK: true, key: "k"}, "Bearer k", 403, "ip_not_allowed", "addr", false, false},
		{"no bearer", stubAuth{allowedIP: true, rateOK: true, key: "k"}, "", 401, "unauthenticated", "addr", true, false},
		{"basic auth", stubAuth{allowedIP: true, rateOK: true, key: "k"}, "Basic a2V5", 401, "unauthenticated", "addr", true, false},
		{"rate limited before validation", stubAuth{allowedIP: true, rateOK: false, key: "k"}, "Bearer wrong", 429, "rate_limited", "addr,rate", false, true},
		{"wrong key", stubAuth{allowedIP: true, rateOK: true, key: "k"}, "Bearer wrong", 401, "invalid_api_key", "addr,rate,auth", true, false},
		{"good key", stubAuth{allowedIP: true, rateOK: true, key: "k"}, "bearer k", 299, "", "addr,rate,auth", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := c.auth
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/mcp", strings.NewReader("{}"))
			req.RemoteAddr = "198.51.100.7:5000"
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			guard(&a, ok).ServeHTTP(rec, req)
			if rec.Code != c.code {
				t.Fatalf("code %d, want %d (%s)", rec.Code, c.code, rec.Body)
			}
			if c.errCode != "" && !strings.Contains(rec.Body.String(), `"code":"`+c.errCode+`"`) {
				t.Errorf("body %s, want code %s", rec.Body, c.errCode)
			}
			if got := strings.Join(a.calls, ","); got != c.calls {
				t.Errorf("checks %s, want %s", got, c.calls)
			}
			if has := rec.Header().Get("WWW-Authenticate") != ""; has != c.wwwAuth {
				t.Errorf("WWW-Authenticate %q", rec.Header().Get("WWW-Authenticate"))
			}
			if has := rec.Header().Get("Retry-After") != ""; has != c.retr {
				t.Errorf("Retry-After %q", rec.Header().Get("Retry-After"))
			}
		})
	}
}
