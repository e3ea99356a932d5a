package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// apiKeyTouchInterval limits last_used_at writes to one per key and
// minute: the request path must not write on every call.
const apiKeyTouchInterval = time.Minute

// Credentials are what a request presented. At most one of Bearer, APIKey
// and Cookie is used, in that order of precedence: X-API-Key, then the
// Authorization header, then the session cookie.
type Credentials struct {
	Bearer     string
	APIKey     string
	Cookie     string
	CSRFHeader string
	Method     string
}

// Authenticate resolves credentials to a principal, loading the user with
// roles and permissions fresh (role changes and deactivation act at once).
// It returns (nil, nil) when no credentials were presented. Errors:
// ErrUnauthenticated for bad credentials; ErrForbidden with code
// read_only_key, mcp_key_rejected or csrf_failed.
func (s *Service) Authenticate(ctx context.Context, c Credentials) (*domain.Principal, error) {
	switch {
	case c.APIKey != "":
		return s.authAPIKey(ctx, c.APIKey, c.Method)
	case c.Bearer != "":
		return s.authSession(ctx, c.Bearer, domain.AuthJWT)
	case c.Cookie != "":
		p, err := s.authSession(ctx, c.Cookie, domain.AuthSession)
		if err != nil {
			return nil, err
		}
		if !safeMethod(c.Method) {
			if err := s.checkCSRF(c.Cookie, c.CSRFHeader); err != nil {
				return nil, err
			}
		}
		return p, nil
	}
	return nil, nil
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func (s *Service) authSession(ctx context.Context, tok, method string) (*domain.Principal, error) {
	c, err := s.parseSession(tok)
	if err != nil {
		return nil, err
	}
	u, err := s.st.LoadAuthUser(ctx, c.Subject)
	if store.ErrNoRows(err) {
		return nil, errInvalidToken()
	}
	if err != nil {
		return nil, err
	}
	if !u.Active || u.IsSystem || c.issuedMS() < u.SessionsValidAfter {
		return nil, errInvalidToken()
	}
	return s.principal(ctx, u, method)
}

func (s *Service) principal(ctx context.Context, u store.AuthUser, method string) (*domain.Principal, error) {
	p := &domain.Principal{UserID: u.ID, Username: u.Username, Roles: u.Roles, Permissions: u.Permissions, Method: method}
	if !s.no2FA && !u.TOTPEnabled && len(u.Roles) > 0 {
		set, err := s.settings.get(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range u.Roles {
			if slices.Contains(set.v.Require2FARoles, r) {
				p.Must2FASetup = true
				break
			}
		}
	}
	return p, nil
}

// HashAPIKey is the stored form of a key: hex SHA-256 of the plaintext.
func HashAPIKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

func errInvalidAPIKey() error {
	return &domain.Error{Kind: domain.ErrUnauthenticated, Code: "invalid_api_key", Message: "the API key is invalid, expired or revoked"}
}

func (s *Service) authAPIKey(ctx context.Context, key, method string) (*domain.Principal, error) {
	if !strings.HasPrefix(key, APIKeyPrefix) || len(key) > 256 {
		return nil, errInvalidAPIKey()
	}
	k, err := s.st.APIKeyByHash(ctx, HashAPIKey(key))
	if store.ErrNoRows(err) {
		return nil, errInvalidAPIKey()
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	if k.RevokedAt != nil || (k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)) {
		return nil, errInvalidAPIKey()
	}
	switch k.Scope {
	case domain.ScopeMCP:
		return nil, &domain.Error{Kind: domain.ErrForbidden, Code: "mcp_key_rejected", Message: "an mcp-scoped API key works only on the MCP listener"}
	case domain.ScopeRead:
		if !safeMethod(method) {
			return nil, &domain.Error{Kind: domain.ErrForbidden, Code: "read_only_key", Message: "a read-scoped API key allows only GET, HEAD and OPTIONS"}
		}
	case domain.ScopeReadWrite:
	default:
		return nil, errInvalidAPIKey()
	}
	u, err := s.st.LoadAuthUser(ctx, k.UserID)
	if store.ErrNoRows(err) {
		return nil, errInvalidAPIKey()
	}
	if err != nil {
		return nil, err
	}
	if !u.Active || u.IsSystem {
		return nil, errInvalidAPIKey()
	}
	p, err := s.principal(ctx, u, domain.AuthAPIKey)
	if err != nil {
		return nil, err
	}
	p.APIKeyID, p.APIKeyScope = k.ID, k.Scope
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= apiKeyTouchInterval {
		if err := s.st.TouchAPIKey(ctx, k.ID, now.UTC(), apiKeyTouchInterval); err != nil {
			s.log.Warn("api key last_used_at not recorded", "err", err)
		}
	}
	return p, nil
}

// AuthenticateMCP resolves an API key of scope mcp for the MCP listener
// (read-only tools). Any other scope is refused there.
func (s *Service) AuthenticateMCP(ctx context.Context, key string) (*domain.Principal, error) {
	if !strings.HasPrefix(key, APIKeyPrefix) || len(key) > 256 {
		return nil, errInvalidAPIKey()
	}
	k, err := s.st.APIKeyByHash(ctx, HashAPIKey(key))
	if err != nil {
		return nil, errInvalidAPIKey()
	}
	if k.Scope != domain.ScopeMCP || k.RevokedAt != nil || (k.ExpiresAt != nil && !s.now().Before(*k.ExpiresAt)) {
		return nil, errInvalidAPIKey()
	}
	u, err := s.st.LoadAuthUser(ctx, k.UserID)
	if err != nil || !u.Active || u.IsSystem {
		return nil, errInvalidAPIKey()
	}
	p, err := s.principal(ctx, u, domain.AuthAPIKey)
	if err != nil {
		return nil, err
	}
	p.APIKeyID, p.APIKeyScope = k.ID, k.Scope
	return p, nil
}
