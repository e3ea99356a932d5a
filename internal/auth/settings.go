package auth

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/auth/clientip"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
)

// Setting keys in the settings table (the spec's configuration keys).
const (
	KeyRequire2FARoles  = "require_2fa_roles"
	KeyAllowedIPs       = "allowed_ips"
	KeyTrustProxyHeader = "trust_proxy_header"
	KeyAPIKeyRateLimit  = "api_key_rate_limit_per_minute"
	KeyAccessTokenTTL   = "access_token_ttl_minutes"
	KeyPublicBaseURL    = "public_base_url"
)

// settingsTTL is how long a replica trusts its cached copy. Why 1 s: a
// change (an allowlist entry removed) acts on every replica within a second,
// and the hot path (every request reads it) costs one small query per
// second instead of one per request.
const settingsTTL = time.Second

// SecuritySettings are the runtime security settings. After the first
// start the database is authoritative; config.json only seeds them.
type SecuritySettings struct {
	Require2FARoles          []string `json:"require_2fa_roles"`
	AllowedIPs               []string `json:"allowed_ips"`
	TrustProxyHeader         bool     `json:"trust_proxy_header"`
	APIKeyRateLimitPerMinute int      `json:"api_key_rate_limit_per_minute"`
	AccessTokenTTLMinutes    int      `json:"access_token_ttl_minutes"`
	PublicBaseURL            string   `json:"public_base_url"`
}

// SecuritySettingsPatch changes the fields that are set.
type SecuritySettingsPatch struct {
	Require2FARoles          *[]string `json:"require_2fa_roles"`
	AllowedIPs               *[]string `json:"allowed_ips"`
	TrustProxyHeader         *bool     `json:"trust_proxy_header"`
	APIKeyRateLimitPerMinute *int      `json:"api_key_rate_limit_per_minute"`
	AccessTokenTTLMinutes    *int      `json:"access_token_ttl_minutes"`
	PublicBaseURL            *string   `json:"public_base_url"`
}

type cachedSettings struct {
	v     SecuritySettings
	allow clientip.Allowlist
	at    time.Time
}

type settingsCache struct {
	svc *Service
	cur atomic.Pointer[cachedSettings]
	mu  sync.Mutex // one reload at a time
	// reloading is set while a background reload of a stale copy runs.
	reloading atomic.Bool
}

// SeedSettings stores each security setting from config.json unless the
// database has it already (first start). require_2fa_roles defaults to
// ["admin"] on a fresh database.
func (s *Service) SeedSettings(ctx context.Context, seed SecuritySettings) error {
	if seed.Require2FARoles == nil {
		seed.Require2FARoles = []string{domain.RoleAdmin}
	}
	if seed.AllowedIPs == nil {
		seed.AllowedIPs = []string{}
	}
	if seed.AccessTokenTTLMinutes == 0 {
		seed.AccessTokenTTLMinutes = 60
	}
	for k, v := range map[string]any{
		KeyRequire2FARoles: seed.Require2FARoles, KeyAllowedIPs: seed.AllowedIPs,
		KeyTrustProxyHeader: seed.TrustProxyHeader, KeyAPIKeyRateLimit: seed.APIKeyRateLimitPerMinute,
		KeyAccessTokenTTL: seed.AccessTokenTTLMinutes, KeyPublicBaseURL: seed.PublicBaseURL,
	} {
		if _, err := s.st.InitSetting(ctx, k, v); err != nil {
			return err
		}
	}
	s.settings.cur.Store(nil)
	_, err := s.settings.get(ctx)
	return err
}

// settingsLoadTimeout bounds one reload of the settings: every request
// reads them (client address, allowlist), so a database that accepts
// connections but answers nothing must not hold requests (health checks
// among them) for longer than this.
const settingsLoadTimeout = 2 * time.Second

// get returns the settings. A fresh copy is returned at once. A stale copy
// is returned at once too, while one background reload (bounded by
// settingsLoadTimeout) brings it up to date: requests never wait for the
// database once the settings were read. Only the very first read waits,
// bounded the same way, and fails (callers fail closed) if it cannot.
func (c *settingsCache) get(ctx context.Context) (*cachedSettings, error) {
	now := c.svc.now()
	cur := c.cur.Load()
	if cur != nil && now.Sub(cur.at) < settingsTTL {
		return cur, nil
	}
	if cur != nil {
		if c.reloading.CompareAndSwap(false, true) {
			go func() {
				defer c.reloading.Store(false)
				defer safe.Recover("auth settings reload")
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settingsLoadTimeout)
				defer cancel()
				_, _ = c.reload(rctx)
			}()
		}
		return cur, nil
	}
	rctx, cancel := context.WithTimeout(ctx, settingsLoadTimeout)
	defer cancel()
	return c.reload(rctx)
}

// reload reads the settings from the database, one reload at a time.
func (c *settingsCache) reload(ctx context.Context) (*cachedSettings, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.svc.now()
	if cur := c.cur.Load(); cur != nil && now.Sub(cur.at) < settingsTTL {
		return cur, nil
	}
	v, err := c.svc.loadSettings(ctx)
	if err != nil {
		if cur := c.cur.Load(); cur != nil {
			// Keep the last known settings when the DB hiccups.
			return cur, nil
		}
		return nil, err
	}
	allow, err := clientip.Parse(v.AllowedIPs)
	if err != nil {
		// A hand-edited bad value must not open the door: allow loopback only.
		c.svc.log.Error("stored allowed_ips is invalid; allowing localhost only", "err", err)
		allow, _ = clientip.Parse([]string{"localhost"})
	}
	cs := &cachedSettings{v: v, allow: allow, at: now}
	c.cur.Store(cs)
	return cs, nil
}

func (s *Service) loadSettings(ctx context.Context) (SecuritySettings, error) {
	v := SecuritySettings{Require2FARoles: []string{}, AllowedIPs: []string{}, APIKeyRateLimitPerMinute: 120, AccessTokenTTLMinutes: 60}
	for k, dst := range map[string]any{
		KeyRequire2FARoles: &v.Require2FARoles, KeyAllowedIPs: &v.AllowedIPs, KeyTrustProxyHeader: &v.TrustProxyHeader,
		KeyAPIKeyRateLimit: &v.APIKeyRateLimitPerMinute, KeyAccessTokenTTL: &v.AccessTokenTTLMinutes, KeyPublicBaseURL: &v.PublicBaseURL,
	} {
		if _, err := s.st.GetSetting(ctx, k, dst); err != nil {
			return v, err
		}
	}
	if v.Require2FARoles == nil {
		v.Require2FARoles = []string{}
	}
	if v.AllowedIPs == nil {
		v.AllowedIPs = []string{}
	}
	return v, nil
}

// Settings returns the current security settings.
func (s *Service) Settings(ctx context.Context) (SecuritySettings, error) {
	c, err := s.settings.get(ctx)
	if err != nil {
		return SecuritySettings{}, err
	}
	return c.v, nil
}

// ClientAddr is the one client-address function: the TCP peer, or the
// right-most X-Forwarded-For entry when trust_proxy_header is set.
func (s *Service) ClientAddr(ctx context.Context, remoteAddr string, xff []string) netip.Addr {
	trust := false
	if c, err := s.settings.get(ctx); err == nil {
		trust = c.v.TrustProxyHeader
	}
	return clientip.ClientIP(remoteAddr, strings.Join(xff, ","), trust)
}

// Allowed reports whether allowed_ips admits ip. If the settings cannot be
// read at all it fails closed.
func (s *Service) Allowed(ctx context.Context, ip netip.Addr) bool {
	c, err := s.settings.get(ctx)
	if err != nil {
		return false
	}
	return c.allow.Allows(ip)
}

// UpdateSettings validates and saves a partial change. The caller's own
// address must stay allowed, so an admin cannot lock themselves out.
func (s *Service) UpdateSettings(ctx context.Context, actor *domain.Principal, p SecuritySettingsPatch) (SecuritySettings, error) {
	cur, err := s.loadSettings(ctx)
	if err != nil {
		return SecuritySettings{}, err
	}
	next := cur
	changed := map[string]any{}
	if p.Require2FARoles != nil {
		roles := dedupe(*p.Require2FARoles)
		unknown, err := s.st.UnknownRoles(ctx, roles)
		if err != nil {
			return cur, err
		}
		if len(unknown) > 0 {
			return cur, &domain.Error{Kind: domain.ErrInvalid, Code: "unknown_role",
				Message: "require_2fa_roles: unknown role " + strings.Join(quoteAll(unknown), ", "), Details: unknown}
		}
		next.Require2FARoles = roles
		changed[KeyRequire2FARoles] = roles
	}
	if p.AllowedIPs != nil {
		list := dedupe(*p.AllowedIPs)
		allow, err := clientip.Parse(list)
		if err != nil {
			return cur, err
		}
		ip, _ := netip.ParseAddr(clientIPOf(ctx))
		if !allow.Allows(ip) {
			return cur, &domain.Error{Kind: domain.ErrInvalid, Code: "would_lock_out",
				Message: fmt.Sprintf("allowed_ips must include your own address %s, or you would lock yourself out", clientIPOf(ctx))}
		}
		next.AllowedIPs = list
		changed[KeyAllowedIPs] = list
	}
	if p.TrustProxyHeader != nil {
		next.TrustProxyHeader = *p.TrustProxyHeader
		changed[KeyTrustProxyHeader] = *p.TrustProxyHeader
	}
	if p.APIKeyRateLimitPerMinute != nil {
		n := *p.APIKeyRateLimitPerMinute
		if n < 0 || n > 1_000_000 {
			return cur, domain.Invalid("invalid_rate_limit", "api_key_rate_limit_per_minute must be between 0 (off) and 1000000")
		}
		next.APIKeyRateLimitPerMinute = n
		changed[KeyAPIKeyRateLimit] = n
	}
	if p.AccessTokenTTLMinutes != nil {
		n := *p.AccessTokenTTLMinutes
		if n < 1 || n > 7*24*60 {
			return cur, domain.Invalid("invalid_ttl", "access_token_ttl_minutes must be between 1 and 10080")
		}
		next.AccessTokenTTLMinutes = n
		changed[KeyAccessTokenTTL] = n
	}
	if p.PublicBaseURL != nil {
		u := strings.TrimRight(strings.TrimSpace(*p.PublicBaseURL), "/")
		if err := validBaseURL(u); err != nil {
			return cur, err
		}
		next.PublicBaseURL = u
		changed[KeyPublicBaseURL] = u
	}
	for k, v := range changed {
		if err := s.st.PutSetting(ctx, k, v); err != nil {
			return cur, err
		}
	}
	s.settings.cur.Store(nil)
	if len(changed) > 0 {
		keys := make([]string, 0, len(changed))
		for k := range changed {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		s.audit(ctx, actor, "settings.changed", audit.Target("settings", "security"), map[string]any{"keys": keys})
	}
	return next, nil
}

func validBaseURL(u string) error {
	if u == "" {
		return nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.RawQuery != "" || p.Fragment != "" || p.User != nil {
		return domain.Invalid("invalid_public_base_url", "public_base_url must be an absolute http(s) URL without query, fragment or credentials")
	}
	return nil
}

func dedupe(in []string) []string {
	out := []string{}
	for _, v := range in {
		v = strings.TrimSpace(v)
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func quoteAll(in []string) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// linkBase is the base of e-mail links: public_base_url, else the
// listener's scheme, host and port. Never a request's Host header.
func (s *Service) linkBase(ctx context.Context) string {
	if v, err := s.Settings(ctx); err == nil && v.PublicBaseURL != "" {
		return v.PublicBaseURL
	}
	return strings.TrimRight(s.listener, "/")
}
