package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/auth/mail"
	"github.com/lcmproject/lcm/internal/auth/password"
	"github.com/lcmproject/lcm/internal/bus"
	_ "github.com/lcmproject/lcm/internal/bus/natsembed"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/testutil"
	"github.com/lcmproject/lcm/internal/testutil/storetest"
)

// cheapParams keep in-process tests fast; the real binary's tests and the
// benchmarks use the production parameters.
var cheapParams = password.Params{Memory: 8 * 1024, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

const adminPW = "Correct-Horse-Battery-7"

type harness struct {
	t     testing.TB
	st    *store.Store
	bus   *bus.Bus
	svc   *auth.Service
	srv   *Server
	clock *testClock
	sink  *testutil.SMTPSink
}

type testClock struct{ off time.Duration }

func (c *testClock) now() time.Time { return time.Now().Add(c.off) }

type harnessOpts struct {
	dbURL string
	no2FA bool
	// require2FA overrides the seeded require_2fa_roles (nil: ["admin"]).
	require2FA []string
	rateLimit  int
	// prodHasher uses the production argon2id parameters (benchmarks).
	prodHasher bool
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st := storetest.OpenIn(t, o.dbURL, dir)
	hasher, err := password.NewHasher(cheapParams, 0)
	if o.prodHasher {
		hasher, err = auth.NewPasswordHasher()
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SeedIdentity(ctx, func() (string, error) { return hasher.Hash(ctx, adminPW) }); err != nil {
		t.Fatal(err)
	}
	b, err := bus.Open(ctx, bus.Options{DataDir: dir, Logger: quietLog})
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
	ep, err := auth.NewEpoch(ctx, strings.Repeat("s", 48), cas(bus.BucketAuth), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	sink := testutil.StartSMTPSink(t)
	clock := &testClock{}
	svc := auth.New(auth.Options{Store: st, Hasher: hasher, Lockout: cas(bus.BucketLockout), RateLimit: cas(bus.BucketRateLimit),
		Epoch: ep, Mail: mail.New(mail.Config{Host: "127.0.0.1", Port: sink.Port, From: "lcm@example.test"}),
		Log: quietLog, No2FA: o.no2FA, ListenerURL: "https://127.0.0.1:9310", Now: clock.now})
	rl := o.rateLimit
	if rl == 0 {
		rl = 120
	}
	if err := svc.SeedSettings(ctx, auth.SecuritySettings{Require2FARoles: o.require2FA, APIKeyRateLimitPerMinute: rl, AccessTokenTTLMinutes: 60}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		svc.Close(c)
	})
	srv := New(Deps{Store: st, Bus: b, Dev: true, Log: quietLog,
		ClientAddr: func(r *http.Request) netip.Addr {
			return svc.ClientAddr(r.Context(), r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
		},
		Allowed:  func(ip netip.Addr) bool { return svc.Allowed(context.Background(), ip) },
		Services: Services{Auth: svc}})
	return &harness{t: t, st: st, bus: b, svc: svc, srv: srv, clock: clock, sink: sink}
}

// req describes one request to the in-process router.
type req struct {
	method, path string
	body         any
	token        string // bearer, or an API key when it starts with lcm_
	ip           string // client address (RemoteAddr host); default 192.0.2.1
	headers      map[string]string
	cookies      []*http.Cookie
}

type resp struct {
	code    int
	body    []byte
	header  http.Header
	cookies []*http.Cookie
}

func (r resp) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (r resp) code2(t testing.TB) string {
	var e errorBody
	_ = json.Unmarshal(r.body, &e)
	return e.Code
}

func (h *harness) do(r req) resp {
	h.t.Helper()
	var rd io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	hr := httptest.NewRequest(r.method, r.path, rd)
	ip := r.ip
	if ip == "" {
		ip = "192.0.2.1"
	}
	hr.RemoteAddr = netip.AddrPortFrom(netip.MustParseAddr(ip), 40000).String()
	if rd != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		if strings.HasPrefix(r.token, "lcm_") {
			hr.Header.Set("X-API-Key", r.token)
		} else {
			hr.Header.Set("Authorization", "Bearer "+r.token)
		}
	}
	for k, v := range r.headers {
		hr.Header.Set(k, v)
	}
	for _, c := range r.cookies {
		hr.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, hr)
	res := w.Result()
	return resp{code: w.Code, body: w.Body.Bytes(), header: w.Header(), cookies: res.Cookies()}
}

// login signs in and returns the token (fails the test otherwise).
func (h *harness) login(user, pw string) string {
	h.t.Helper()
	r := h.do(req{method: "POST", path: "/api/v1/auth/login", body: map[string]string{"username": user, "password": pw}, ip: "198.51.100.200"})
	if r.code != 200 {
		h.t.Fatalf("login %s: %d %s", user, r.code, r.body)
	}
	var out struct{ Token string }
	r.json(h.t, &out)
	if out.Token == "" {
		h.t.Fatalf("login %s: no token: %s", user, r.body)
	}
	return out.Token
}

// createUser creates a user with a password and roles as admin.
func (h *harness) createUser(adminTok, name, pw string, roles ...string) string {
	h.t.Helper()
	if roles == nil {
		roles = []string{}
	}
	r := h.do(req{method: "POST", path: "/api/v1/users", token: adminTok,
		body: map[string]any{"username": name, "password": pw, "roles": roles, "email": name + "@example.test"}})
	if r.code != 201 {
		h.t.Fatalf("create user %s: %d %s", name, r.code, r.body)
	}
	var u userDTO
	r.json(h.t, &u)
	return u.ID
}

func mustHash(t testing.TB, h *harness, pw string) string {
	t.Helper()
	hs, err := password.NewHasher(cheapParams, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := hs.Hash(context.Background(), pw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func storeUpdateHash(h string) store.UserUpdate { return store.UserUpdate{PasswordHash: &h} }
