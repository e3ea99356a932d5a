// Package auth is LCM's identity service: password and 2FA login, session
// tokens, API keys with scopes and rate limits, brute-force lockouts, users
// and roles, the security settings and the tamper-evident audit log. It
// knows nothing of HTTP; internal/httpapi maps its errors and results.
//
// Shared state lives where every replica sees it: users, keys, settings and
// the audit log in the database; lockout counters, rate-limit windows and
// the auth epoch in NATS KV (internal/bus). See docs/security.md.
package auth

import (
	"context"
	"log/slog"
	"net/netip"
	"runtime"
	"time"

	"github.com/lcmproject/lcm/internal/auth/lockout"
	"github.com/lcmproject/lcm/internal/auth/mail"
	"github.com/lcmproject/lcm/internal/auth/password"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/store"
)

// Issuer names LCM in authenticator apps.
const Issuer = "LCM"

// Options are the collaborators and fixed configuration of the Service.
type Options struct {
	Store  *store.Store
	Hasher *password.Hasher
	// Lockout is the KV bucket of login lockouts (bus.BucketLockout).
	Lockout *bus.CAS
	// RateLimit is the KV bucket of API-key windows (bus.BucketRateLimit).
	RateLimit *bus.CAS
	// Epoch holds the signing keys (see epoch.go).
	Epoch *Epoch
	Mail  *mail.Sender
	Log   *slog.Logger
	// No2FA turns the require_2fa_roles requirement off (--dev, --demo).
	No2FA bool
	// ListenerURL is scheme://host:port of the UI listener: the base of
	// e-mail links when public_base_url is unset.
	ListenerURL string
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Service is the identity service. It is safe for concurrent use.
type Service struct {
	st       *store.Store
	hasher   *password.Hasher
	limiter  *lockout.Limiter
	rate     *bus.CAS
	epoch    *Epoch
	mail     *mail.Sender
	log      *slog.Logger
	no2FA    bool
	listener string
	now      func() time.Time
	settings settingsCache
	// mailWG tracks background mail deliveries so shutdown can wait.
	mailWG waitGroup
}

// New returns the Service.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	lim := lockout.NewLimiter(lockoutStore{o.Lockout})
	lim.Now = o.Now
	s := &Service{st: o.Store, hasher: o.Hasher, limiter: lim, rate: o.RateLimit, epoch: o.Epoch,
		mail: o.Mail, log: o.Log, no2FA: o.No2FA, listener: o.ListenerURL, now: o.Now}
	s.settings.svc = s
	return s
}

// Close waits (bounded by ctx) for e-mails still being delivered.
func (s *Service) Close(ctx context.Context) { s.mailWG.wait(ctx) }

type ctxKey int

const ctxClientIP ctxKey = iota

// WithClientIP records the request's client address (from the one
// clientip function) for lockouts and the audit log.
func WithClientIP(ctx context.Context, ip netip.Addr) context.Context {
	return context.WithValue(ctx, ctxClientIP, ip)
}

func clientIPOf(ctx context.Context) string {
	ip, _ := ctx.Value(ctxClientIP).(netip.Addr)
	if !ip.IsValid() {
		return "unknown"
	}
	return ip.String()
}

// LoginHashConcurrency is how many argon2id hashes run at once in lcm-api:
// 1 up to 4 CPUs, 2 above. Why: each hash needs 64 MiB and already keeps 4
// cores busy (4 lanes), and Go's collector lets the heap reach about twice
// the live size before it returns memory. A burst of 100 concurrent logins
// measured an RSS growth of 645 MiB with 4 at once and 327 MiB with 2 on
// the 2-core reference machine, against a 300 MiB budget
// (docs/benchmarks.md); more parallel hashes only queue on the CPU there.
func LoginHashConcurrency() int {
	if runtime.NumCPU() > 4 {
		return 2
	}
	return 1
}

// NewPasswordHasher returns the production hasher: argon2id 64 MiB, 4
// threads, LoginHashConcurrency at once.
func NewPasswordHasher() (*password.Hasher, error) {
	return password.NewHasher(password.Params{}, LoginHashConcurrency())
}
