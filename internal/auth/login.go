package auth

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/lcmproject/lcm/internal/auth/password"
	"github.com/lcmproject/lcm/internal/auth/totp"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/metrics"
	"github.com/lcmproject/lcm/internal/store"
)

// maxLoginField bounds username and password before any work: longer
// input cannot be valid (username 64, password 200 characters).
const maxLoginField = 1024

// LoginResult is a completed login (Token set) or a 2FA challenge.
type LoginResult struct {
	Token     string
	ExpiresAt time.Time
	User      store.User
	// Challenge is set instead of Token for an account with 2FA.
	Challenge string
	// RecoveryCodesRemaining is set when a recovery code completed the
	// login: the codes the account has left.
	RecoveryCodesRemaining *int
}

// ErrInvalidCredentials is the one answer for unknown user, wrong
// password, inactive account and the system user.
func errInvalidCredentials() error {
	return &domain.Error{Kind: domain.ErrUnauthenticated, Code: "invalid_credentials", Message: "invalid username or password"}
}

func errInvalidCode() error {
	return &domain.Error{Kind: domain.ErrUnauthenticated, Code: "invalid_code", Message: "invalid two-factor code"}
}

// RetryAfter extracts the wait of a lockout or rate-limit error.
func RetryAfter(err error) (time.Duration, bool) {
	var de *domain.Error
	if !errors.As(err, &de) || !errors.Is(err, domain.ErrRateLimited) {
		return 0, false
	}
	if m, ok := de.Details.(map[string]int); ok {
		return time.Duration(m["retry_after_seconds"]) * time.Second, true
	}
	return time.Second, true
}

// Login checks a username and password. Unknown users, users without a
// password, inactive users and the system user run the same argon2id work
// against a dummy hash and get the same error as a wrong password. The
// attempt is counted per client IP and per account name atomically.
func (s *Service) Login(ctx context.Context, username, pw string) (LoginResult, error) {
	if username == "" || pw == "" {
		return LoginResult{}, domain.Invalid("missing_field", "username and password are required")
	}
	if len(username) > maxLoginField || len(pw) > maxLoginField {
		return LoginResult{}, domain.Invalid("too_long", "username or password too long")
	}
	// An account whose TOTP checks are locked out is locked for the
	// password step too, before any password is checked.
	if u, err := s.st.GetUserByUsername(ctx, username); err == nil && u.TOTPEnabled {
		if retry, err := s.limiter.TOTPLocked(ctx, u.ID); retry > 0 {
			metrics.LoginFailures.WithLabelValues("password", "locked").Inc()
			s.audit(ctx, nil, "auth.login_locked", username, map[string]any{"retry_after_seconds": int(math.Ceil(retry.Seconds())), "reason": "totp"})
			return LoginResult{}, err
		} else if err != nil {
			return LoginResult{}, err
		}
	}
	var user store.User
	ok, retry, err := s.limiter.Attempt(ctx, clientIPOf(ctx), username, func() (bool, error) {
		u, err := s.st.GetUserByUsername(ctx, username)
		if err != nil && !store.ErrNoRows(err) {
			return false, err
		}
		if err != nil || u.IsSystem || !u.Active || u.PasswordHash == "" {
			return false, s.hasher.VerifyDummy(ctx, pw)
		}
		match, err := s.hasher.Verify(ctx, u.PasswordHash, pw)
		if errors.Is(err, password.ErrMalformedHash) {
			s.log.Error("stored password hash is malformed", "user", u.Username)
			return false, nil
		}
		if err != nil || !match {
			return false, err
		}
		user = u
		return true, nil
	})
	if retry > 0 {
		metrics.LoginFailures.WithLabelValues("password", "locked").Inc()
		s.audit(ctx, nil, "auth.login_locked", username, map[string]any{"retry_after_seconds": int(math.Ceil(retry.Seconds()))})
		return LoginResult{}, err
	}
	if err != nil {
		return LoginResult{}, err
	}
	if !ok {
		metrics.LoginFailures.WithLabelValues("password", "invalid").Inc()
		s.audit(ctx, nil, "auth.login_failed", username, nil)
		return LoginResult{}, errInvalidCredentials()
	}
	if s.hasher.NeedsRehash(user.PasswordHash) {
		if h, err := s.hasher.Hash(ctx, pw); err == nil {
			_ = s.st.UpdateUser(ctx, user.ID, store.UserUpdate{PasswordHash: &h})
		}
	}
	if user.TOTPEnabled {
		ch, exp, err := s.issueChallenge(user.ID)
		if err != nil {
			return LoginResult{}, err
		}
		s.auditAs(ctx, user.ID, user.Username, "auth.login_2fa_challenge", user.Username, nil)
		return LoginResult{Challenge: ch, ExpiresAt: exp, User: user}, nil
	}
	return s.completeLogin(ctx, user, "password")
}

// Login2FA completes a challenged login with a TOTP code or, for a lost
// authenticator, a one-time recovery code. Both count on the same
// per-account TOTP failure key.
func (s *Service) Login2FA(ctx context.Context, challenge string, f SecondFactor) (LoginResult, error) {
	if challenge == "" || (f.Code == "" && f.RecoveryCode == "") {
		return LoginResult{}, domain.Invalid("missing_field", "challenge and code (or recovery_code) are required")
	}
	if f.Code != "" && f.RecoveryCode != "" {
		return LoginResult{}, domain.Invalid("invalid_request", "send either code or recovery_code, not both")
	}
	userID, err := s.parseChallenge(challenge)
	if err != nil {
		return LoginResult{}, err
	}
	u, err := s.st.GetUser(ctx, userID)
	if err != nil || !u.Active || u.IsSystem || !u.TOTPEnabled {
		return LoginResult{}, errInvalidCredentials()
	}
	left, err := s.checkSecondFactor(ctx, u, f, "login")
	if err != nil {
		return LoginResult{}, err
	}
	if f.RecoveryCode == "" {
		return s.completeLogin(ctx, u, "totp")
	}
	res, err := s.completeLogin(ctx, u, "recovery_code")
	res.RecoveryCodesRemaining = &left
	return res, err
}

func (s *Service) completeLogin(ctx context.Context, u store.User, method string) (LoginResult, error) {
	set, err := s.Settings(ctx)
	if err != nil {
		return LoginResult{}, err
	}
	tok, exp, err := s.issueSession(u.ID, u.Username, time.Duration(set.AccessTokenTTLMinutes)*time.Minute)
	if err != nil {
		return LoginResult{}, err
	}
	now := s.now().UTC()
	_ = s.st.UpdateUser(ctx, u.ID, store.UserUpdate{LastLoginAt: &now})
	u.LastLoginAt = &now
	s.auditAs(ctx, u.ID, u.Username, "auth.login", u.Username, map[string]any{"method": method})
	return LoginResult{Token: tok, ExpiresAt: exp, User: u}, nil
}

// checkTOTP verifies a code for u through the shared per-account TOTP
// counter (login, disabling 2FA and changing one's password all use it)
// and the per-IP counter, with replay protection across replicas.
func (s *Service) checkTOTP(ctx context.Context, u store.User, code, purpose string) error {
	if len(code) > 16 {
		return errInvalidCode()
	}
	ok, retry, err := s.limiter.AttemptTOTP(ctx, clientIPOf(ctx), u.ID, func() (bool, error) {
		cur, err := s.st.GetUser(ctx, u.ID)
		if err != nil {
			return false, err
		}
		if cur.TOTPSecret == "" {
			return false, nil
		}
		step, err := totp.Validate(cur.TOTPSecret, code, s.now(), cur.TOTPLastStep)
		if errors.Is(err, totp.ErrInvalidCode) || errors.Is(err, totp.ErrReplayed) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return s.st.AdvanceTOTPStep(ctx, u.ID, step)
	})
	if retry > 0 {
		metrics.LoginFailures.WithLabelValues("totp", "locked").Inc()
		s.auditAs(ctx, u.ID, u.Username, "auth.totp_locked", u.Username, map[string]any{"purpose": purpose})
		return err
	}
	if err != nil {
		return err
	}
	if !ok {
		metrics.LoginFailures.WithLabelValues("totp", "invalid").Inc()
		s.auditAs(ctx, u.ID, u.Username, "auth.totp_failed", u.Username, map[string]any{"purpose": purpose})
		return errInvalidCode()
	}
	return nil
}

// Logout ends every session of the caller (tokens issued before now stop
// working on every replica).
func (s *Service) Logout(ctx context.Context, p *domain.Principal) error {
	if p == nil || p.Method == domain.AuthAPIKey {
		return nil
	}
	after := s.now().UnixMilli() + 1
	if err := s.st.UpdateUser(ctx, p.UserID, store.UserUpdate{SessionsValidAfter: &after}); err != nil {
		return err
	}
	s.audit(ctx, p, "auth.logout", p.Username, nil)
	return nil
}
