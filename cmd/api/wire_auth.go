package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/auth/mail"
	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/safe"
	"github.com/lcmproject/lcm/internal/store"
)

// wireAuth builds the identity service: argon2id hasher with bounded
// concurrency, lockouts and API-key windows in NATS KV, the auth epoch
// (fresh on every start with the embedded NATS, a shared cluster epoch with
// an external one), the SMTP mailer (the system mail channel, wireAlerts), and the security settings seeded from
// config.json on the first start (the database is authoritative after
// that). It also verifies the audit chain and reports a break loudly.
func (a *app) wireAuth(ctx context.Context, listenerURL string, mailer *mail.Sender) (*auth.Service, error) {
	hasher, err := auth.NewPasswordHasher()
	if err != nil {
		return nil, err
	}
	lock, err := a.bus.NewCAS(ctx, bus.BucketLockout)
	if err != nil {
		return nil, err
	}
	rate, err := a.bus.NewCAS(ctx, bus.BucketRateLimit)
	if err != nil {
		return nil, err
	}
	authKV, err := a.bus.NewCAS(ctx, bus.BucketAuth)
	if err != nil {
		return nil, err
	}
	epoch, err := auth.NewEpoch(ctx, a.cfg.JWTSecret, authKV, a.bus.Embedded() || a.restored, a.log)
	if err != nil {
		return nil, fmt.Errorf("auth epoch: %w", err)
	}
	go safe.Supervise(ctx, "auth epoch", func(ctx context.Context) error { epoch.Run(ctx); return nil })
	svc := auth.New(auth.Options{
		Store: a.store, Hasher: hasher, Lockout: lock, RateLimit: rate, Epoch: epoch,
		Mail: mailer,
		Log:  a.log, No2FA: a.cfg.Dev || a.cfg.Demo, ListenerURL: listenerURL,
	})
	if err := svc.SeedSettings(ctx, auth.SecuritySettings{
		Require2FARoles: a.cfg.Require2FARoles, AllowedIPs: a.cfg.AllowedIPs, TrustProxyHeader: a.cfg.TrustProxyHeader,
		APIKeyRateLimitPerMinute: a.cfg.APIKeyRateLimitPerMinute, AccessTokenTTLMinutes: a.cfg.AccessTokenTTLMinutes,
		PublicBaseURL: a.cfg.PublicBaseURL,
	}); err != nil {
		return nil, err
	}
	n, err := svc.VerifyAudit(ctx)
	var chainErr *store.AuditChainError
	switch {
	case errors.As(err, &chainErr):
		a.log.Error("AUDIT LOG TAMPERED: "+chainErr.Error()+"; entries before it are intact, this one and later ones cannot be trusted",
			"entry", chainErr.Seq, "verified", n)
	case err != nil:
		return nil, err
	default:
		a.log.Info("audit log chain verified", "entries", n)
	}
	if a.cfg.Dev || a.cfg.Demo {
		a.log.Warn("2FA requirement (require_2fa_roles) is off in --dev/--demo mode")
	}
	a.auth = svc
	return svc, nil
}

// clientAddrFunc and allowedFunc adapt the auth service's client-address
// function and allowlist to the HTTP layer.
func clientAddrFunc(svc *auth.Service) func(*http.Request) netip.Addr {
	return func(r *http.Request) netip.Addr {
		return svc.ClientAddr(r.Context(), r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
	}
}

func allowedFunc(svc *auth.Service) func(netip.Addr) bool {
	return func(ip netip.Addr) bool { return svc.Allowed(context.Background(), ip) }
}
