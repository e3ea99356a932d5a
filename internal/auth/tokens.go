package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/lcmproject/lcm/internal/domain"
)

// ChallengeTTL is how long a 2FA login challenge is valid. Why 5 minutes:
// enough to open an authenticator app; short enough that a stolen
// challenge is of little use (it still needs a code).
const ChallengeTTL = 5 * time.Minute

// hs256 is the only algorithm the validators accept (spec: pinned).
var hs256 = []string{jwt.SigningMethodHS256.Alg()}

// sessionClaims are the spec's claims: sub, username, iat, exp.
// iat and exp are whole seconds, as every JWT library expects; iat_ms,
// a private claim, carries the issue time in milliseconds, so "sessions
// valid after" (logout, password change) can end a token issued earlier
// in the same second while a sign-in right after it stays valid.
type sessionClaims struct {
	Username string `json:"username"`
	IssuedMS int64  `json:"iat_ms,omitempty"`
	jwt.RegisteredClaims
}

// issuedMS is the token's issue time in milliseconds (tokens from before
// iat_ms: their iat).
func (c *sessionClaims) issuedMS() int64 {
	if c.IssuedMS > 0 {
		return c.IssuedMS
	}
	return c.IssuedAt.Time.UnixMilli()
}

// challengeClaims identify a pending 2FA login; Typ keeps them apart from
// session tokens even though the keys differ already.
type challengeClaims struct {
	Typ string `json:"typ"`
	jwt.RegisteredClaims
}

func errInvalidToken() error {
	return &domain.Error{Kind: domain.ErrUnauthenticated, Code: "invalid_token", Message: "the session token is invalid or expired"}
}

// issueSession signs a session token for a user.
func (s *Service) issueSession(userID, username string, ttl time.Duration) (string, time.Time, error) {
	now := s.now()
	exp := now.Add(ttl)
	c := sessionClaims{Username: username, IssuedMS: now.UnixMilli(), RegisteredClaims: jwt.RegisteredClaims{
		Subject: userID, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp)}}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.epoch.keys().session)
	return tok, exp, err
}

// parseSession verifies a session token: HS256 only, signature with the
// current epoch's key, exp required and not passed, iat present.
func (s *Service) parseSession(tok string) (*sessionClaims, error) {
	var c sessionClaims
	k := s.epoch.keys().session
	_, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return k, nil },
		jwt.WithValidMethods(hs256), jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithTimeFunc(s.now))
	if err != nil || c.Subject == "" || c.IssuedAt == nil {
		return nil, errInvalidToken()
	}
	return &c, nil
}

func (s *Service) issueChallenge(userID string) (string, time.Time, error) {
	now := s.now()
	exp := now.Add(ChallengeTTL)
	c := challengeClaims{Typ: "2fa", RegisteredClaims: jwt.RegisteredClaims{
		Subject: userID, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(exp)}}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(s.epoch.keys().twoFA)
	return tok, exp, err
}

func (s *Service) parseChallenge(tok string) (string, error) {
	var c challengeClaims
	k := s.epoch.keys().twoFA
	_, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return k, nil },
		jwt.WithValidMethods(hs256), jwt.WithExpirationRequired(), jwt.WithTimeFunc(s.now))
	if err != nil || c.Typ != "2fa" || c.Subject == "" {
		return "", &domain.Error{Kind: domain.ErrUnauthenticated, Code: "invalid_challenge", Message: "the login challenge is invalid or expired; sign in again"}
	}
	return c.Subject, nil
}

// CSRFToken returns the CSRF token bound to a session token: the value of
// the lcm_csrf cookie that unsafe cookie-authenticated requests must echo
// in X-CSRF-Token. Binding it to the session (instead of a free random
// value) means a planted cookie cannot forge it.
func (s *Service) CSRFToken(sessionToken string) string {
	m := hmac.New(sha256.New, s.epoch.keys().csrf)
	m.Write([]byte(sessionToken))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Service) checkCSRF(sessionToken, header string) error {
	want := s.CSRFToken(sessionToken)
	if header == "" || subtle.ConstantTimeCompare([]byte(want), []byte(header)) != 1 {
		return &domain.Error{Kind: domain.ErrForbidden, Code: "csrf_failed", Message: "missing or wrong X-CSRF-Token header"}
	}
	return nil
}
