package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// APIKeyPrefix starts every API key, so leaked keys are recognisable
// (secret scanners) and keys are told apart from JWTs at a glance.
const APIKeyPrefix = "lcm_"

// apiKeyShownPrefix is how many leading characters are stored in clear to
// recognise a key in lists: "lcm_" plus 8 of 43 random characters.
const apiKeyShownPrefix = 12

// maxAPIKeyDays bounds expires_in_days (10 years).
const maxAPIKeyDays = 3650

// NewAPIKey is the input of CreateAPIKey.
type NewAPIKey struct {
	Name          string
	Scope         string
	ExpiresInDays *int
}

// CreatedAPIKey is a new key with its plaintext, returned once.
type CreatedAPIKey struct {
	store.APIKey
	Plaintext string
}

// CreateAPIKey creates a key acting with the caller's rights.
func (s *Service) CreateAPIKey(ctx context.Context, actor *domain.Principal, in NewAPIKey) (CreatedAPIKey, error) {
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || utf8.RuneCountInString(in.Name) > 128 || hasControl(in.Name) {
		return CreatedAPIKey{}, domain.Invalid("invalid_name", "name is required (at most 128 characters)")
	}
	if in.Scope == "" {
		in.Scope = domain.ScopeReadWrite
	}
	switch in.Scope {
	case domain.ScopeRead, domain.ScopeReadWrite, domain.ScopeMCP:
	default:
		return CreatedAPIKey{}, domain.Invalid("invalid_scope", "scope must be read, readwrite or mcp")
	}
	k := store.APIKey{UserID: actor.UserID, Name: in.Name, Scope: in.Scope}
	if in.ExpiresInDays != nil {
		d := *in.ExpiresInDays
		if d < 1 || d > maxAPIKeyDays {
			return CreatedAPIKey{}, domain.Invalid("invalid_expiry", "expires_in_days must be between 1 and 3650")
		}
		exp := s.now().UTC().Add(time.Duration(d) * 24 * time.Hour)
		k.ExpiresAt = &exp
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return CreatedAPIKey{}, err
	}
	plain := APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	k.Prefix = plain[:apiKeyShownPrefix]
	saved, err := s.st.CreateAPIKey(ctx, k, HashAPIKey(plain))
	if err != nil {
		return CreatedAPIKey{}, err
	}
	s.audit(ctx, actor, "apikey.created", saved.ID, map[string]any{"name": saved.Name, "scope": saved.Scope, "prefix": saved.Prefix})
	return CreatedAPIKey{APIKey: saved, Plaintext: plain}, nil
}

// ListAPIKeys lists the caller's keys (no secrets).
func (s *Service) ListAPIKeys(ctx context.Context, actor *domain.Principal) ([]store.APIKey, error) {
	return s.st.ListAPIKeys(ctx, actor.UserID)
}

// DeleteAPIKey revokes a key on the first call and deletes it on the
// second. Callers manage their own keys; holders of users:write any key.
func (s *Service) DeleteAPIKey(ctx context.Context, actor *domain.Principal, id string) error {
	k, err := s.st.GetAPIKey(ctx, id)
	if err != nil {
		return err
	}
	if k.UserID != actor.UserID && !actor.Can(domain.PermUsersWrite) {
		return domain.NotFound("api key")
	}
	if k.RevokedAt == nil {
		if err := s.st.RevokeAPIKey(ctx, id); err != nil {
			return err
		}
		s.audit(ctx, actor, "apikey.revoked", id, map[string]any{"name": k.Name, "prefix": k.Prefix})
		return nil
	}
	if err := s.st.DeleteAPIKey(ctx, id); err != nil {
		return err
	}
	s.audit(ctx, actor, "apikey.deleted", id, map[string]any{"name": k.Name, "prefix": k.Prefix})
	return nil
}

func hasControl(v string) bool {
	for _, r := range v {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}
