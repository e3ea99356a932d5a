package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/lcmproject/lcm/internal/auth/password"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// Recovery codes: one-time codes that stand in for a TOTP code when the
// authenticator is lost. A set of RecoveryCodeCount is made when 2FA is
// enabled and on regeneration; the plaintext is returned once and only
// a salted argon2id hash of each code is stored.
const (
	// RecoveryCodeCount is the size of a set: enough for years of a lost
	// phone now and then, few enough to print on one line each.
	RecoveryCodeCount = 10
	// RecoveryCodesLow is the remaining count from which the UI warns.
	RecoveryCodesLow = 3
	// recoveryCodeLen is the number of characters of a code (shown as two
	// groups of five): 10 draws from 31 symbols ≈ 49.5 bits, too many to
	// guess online under the shared TOTP lockout (15 failures per account).
	recoveryCodeLen = 10
	// recoveryAlphabet leaves out 0/o, 1/l/i so a printed code is read back
	// without ambiguity.
	recoveryAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"
)

// Argon2id cost of one recovery-code hash. Why so much cheaper than the
// password hash (64 MiB): a code carries ~49.5 random bits (a password
// carries far less), and a check hashes every unused code of the account
// (up to 10) to keep a constant-time comparison with per-code salts. At
// 4 MiB and one pass one hash took ~11 ms on the 2-core reference machine
// (BenchmarkRecoveryCodeHash), so a check of a full set costs ~0.1 s and
// 4 MiB at a time, while an offline search of one code from a stolen
// database still needs ~2^48 argon2id runs.
const (
	recoveryArgonTime    = 1
	recoveryArgonMemory  = 4 * 1024 // KiB
	recoveryArgonThreads = 1
	recoveryKeyLen       = 32
	recoverySaltLen      = 16
)

// RecoveryStatus is what the UI shows about a user's recovery codes.
type RecoveryStatus struct {
	Remaining   int
	Total       int
	GeneratedAt *time.Time
	// Low is true when 2FA is on and Remaining < RecoveryCodesLow.
	Low bool
}

// SecondFactor is a TOTP code or a recovery code (exactly one is set).
type SecondFactor struct {
	Code         string
	RecoveryCode string
}

// Reauth proves the caller is the account holder again: the password or
// a current TOTP code (exactly one is set).
type Reauth struct {
	Password string
	Code     string
}

func errInvalidRecoveryCode() error {
	return &domain.Error{Kind: domain.ErrUnauthenticated, Code: "invalid_recovery_code", Message: "invalid or already used recovery code"}
}

// NormalizeRecoveryCode lowercases a code and drops spaces and dashes, so
// "ABCDE-FGHJK", "abcde fghjk" and "abcdefghjk" are the same code.
func NormalizeRecoveryCode(code string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(code) {
		if r == '-' || r == ' ' || r == '\t' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func validRecoveryShape(code string) bool {
	if len(code) != recoveryCodeLen {
		return false
	}
	for _, r := range code {
		if !strings.ContainsRune(recoveryAlphabet, r) {
			return false
		}
	}
	return true
}

func newRecoveryCode() (string, error) {
	max := big.NewInt(int64(len(recoveryAlphabet)))
	var b strings.Builder
	for i := 0; i < recoveryCodeLen; i++ {
		if i == recoveryCodeLen/2 {
			b.WriteByte('-')
		}
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b.WriteByte(recoveryAlphabet[n.Int64()])
	}
	return b.String(), nil
}

func hashRecoveryCode(normalized string, salt []byte) []byte {
	return argon2.IDKey([]byte(normalized), salt, recoveryArgonTime, recoveryArgonMemory, recoveryArgonThreads, recoveryKeyLen)
}

// newRecoverySet draws a set of codes and their stored form.
func newRecoverySet() ([]string, []store.RecoveryCodeHash, error) {
	plain := make([]string, 0, RecoveryCodeCount)
	hashes := make([]store.RecoveryCodeHash, 0, RecoveryCodeCount)
	seen := map[string]bool{}
	for len(plain) < RecoveryCodeCount {
		c, err := newRecoveryCode()
		if err != nil {
			return nil, nil, err
		}
		n := NormalizeRecoveryCode(c)
		if seen[n] {
			continue
		}
		seen[n] = true
		salt := make([]byte, recoverySaltLen)
		if _, err := rand.Read(salt); err != nil {
			return nil, nil, err
		}
		plain = append(plain, c)
		hashes = append(hashes, store.RecoveryCodeHash{Salt: hex.EncodeToString(salt), Hash: hex.EncodeToString(hashRecoveryCode(n, salt))})
	}
	return plain, hashes, nil
}

// issueRecoveryCodes replaces u's set with a new one and returns the
// plaintext codes (the only time they exist outside the user's hands).
func (s *Service) issueRecoveryCodes(ctx context.Context, userID string) ([]string, error) {
	plain, hashes, err := newRecoverySet()
	if err != nil {
		return nil, err
	}
	if err := s.st.ReplaceRecoveryCodes(ctx, userID, hashes, s.now()); err != nil {
		return nil, err
	}
	return plain, nil
}

// matchRecoveryCode finds the unused code of userID equal to normalized.
// Every unused code is hashed and compared in constant time, whether or
// not an earlier one matched, so the time does not tell which one did.
func (s *Service) matchRecoveryCode(ctx context.Context, userID, normalized string) (string, error) {
	codes, err := s.st.UnusedRecoveryCodes(ctx, userID)
	if err != nil {
		return "", err
	}
	match := ""
	for _, c := range codes {
		salt, err1 := hex.DecodeString(c.Salt)
		want, err2 := hex.DecodeString(c.Hash)
		if err1 != nil || err2 != nil {
			s.log.Error("stored recovery code is malformed", "user_id", userID)
			continue
		}
		if subtle.ConstantTimeCompare(hashRecoveryCode(normalized, salt), want) == 1 && match == "" {
			match = c.ID
		}
	}
	return match, nil
}

// checkRecoveryCode spends one recovery code of u. The attempt counts on
// the same per-account TOTP key and per-IP key as a TOTP code, so codes
// and recovery codes share one failure budget. It returns the number of
// codes left.
func (s *Service) checkRecoveryCode(ctx context.Context, u store.User, code, purpose string) (int, error) {
	n := NormalizeRecoveryCode(code)
	ok, retry, err := s.limiter.AttemptTOTP(ctx, clientIPOf(ctx), u.ID, func() (bool, error) {
		if !validRecoveryShape(n) {
			return false, nil
		}
		id, err := s.matchRecoveryCode(ctx, u.ID, n)
		if err != nil || id == "" {
			return false, err
		}
		return s.st.UseRecoveryCode(ctx, u.ID, id, s.now())
	})
	if retry > 0 {
		s.auditAs(ctx, u.ID, u.Username, "auth.totp_locked", u.Username, map[string]any{"purpose": purpose, "method": "recovery_code"})
		return 0, err
	}
	if err != nil {
		return 0, err
	}
	if !ok {
		s.auditAs(ctx, u.ID, u.Username, "auth.recovery_code_failed", u.Username, map[string]any{"purpose": purpose})
		return 0, errInvalidRecoveryCode()
	}
	st, err := s.st.RecoveryCodes(ctx, u.ID)
	if err != nil {
		return 0, err
	}
	s.auditAs(ctx, u.ID, u.Username, "auth.recovery_code_used", u.Username, map[string]any{"purpose": purpose, "remaining": st.Remaining})
	return st.Remaining, nil
}

// checkSecondFactor verifies a TOTP code or a recovery code for u. remaining
// is the number of recovery codes left when one was spent, else -1.
func (s *Service) checkSecondFactor(ctx context.Context, u store.User, f SecondFactor, purpose string) (remaining int, err error) {
	switch {
	case f.Code != "" && f.RecoveryCode != "":
		return -1, domain.Invalid("invalid_request", "send either code or recovery_code, not both")
	case f.RecoveryCode != "":
		if len(f.RecoveryCode) > 64 {
			return -1, errInvalidRecoveryCode()
		}
		return s.checkRecoveryCode(ctx, u, f.RecoveryCode, purpose)
	case f.Code != "":
		return -1, s.checkTOTP(ctx, u, f.Code, purpose)
	}
	return -1, domain.Invalid("missing_field", "code or recovery_code is required")
}

// RecoveryCodeStatus reports the caller's remaining recovery codes.
func (s *Service) RecoveryCodeStatus(ctx context.Context, actor *domain.Principal) (RecoveryStatus, error) {
	u, err := s.st.GetUser(ctx, actor.UserID)
	if err != nil {
		return RecoveryStatus{}, err
	}
	return s.recoveryStatus(ctx, u)
}

func (s *Service) recoveryStatus(ctx context.Context, u store.User) (RecoveryStatus, error) {
	if !u.TOTPEnabled {
		return RecoveryStatus{}, nil
	}
	st, err := s.st.RecoveryCodes(ctx, u.ID)
	if err != nil {
		return RecoveryStatus{}, err
	}
	return RecoveryStatus{Remaining: st.Remaining, Total: st.Total, GeneratedAt: st.GeneratedAt, Low: st.Remaining < RecoveryCodesLow}, nil
}

// RegenerateRecoveryCodes replaces the caller's recovery codes with a new
// set after proving it is the account holder: the password (counted like
// a login) or a current TOTP code (shared TOTP counter). The old set stops
// working at once; the new codes are returned once.
func (s *Service) RegenerateRecoveryCodes(ctx context.Context, actor *domain.Principal, in Reauth) ([]string, error) {
	if actor == nil || actor.Method == domain.AuthAPIKey {
		return nil, domain.Forbidden("recovery codes can be regenerated only in a signed-in session")
	}
	u, err := s.st.GetUser(ctx, actor.UserID)
	if err != nil {
		return nil, err
	}
	if !u.TOTPEnabled {
		return nil, domain.Conflict("2fa_not_enabled", "two-factor authentication is not enabled")
	}
	method := "totp"
	switch {
	case in.Password != "" && in.Code != "":
		return nil, domain.Invalid("invalid_request", "send either password or code, not both")
	case in.Code != "":
		if err := s.checkTOTP(ctx, u, in.Code, "recovery_codes"); err != nil {
			return nil, err
		}
	case in.Password != "":
		method = "password"
		if err := s.reauthPassword(ctx, actor, u, in.Password); err != nil {
			return nil, err
		}
	default:
		return nil, domain.Invalid("missing_field", "password or code is required")
	}
	codes, err := s.issueRecoveryCodes(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	s.audit(ctx, actor, "auth.recovery_codes_regenerated", u.Username, map[string]any{"method": method, "count": len(codes)})
	return codes, nil
}

// reauthPassword checks the caller's own password, counted like a login
// (per IP and per account name).
func (s *Service) reauthPassword(ctx context.Context, actor *domain.Principal, u store.User, pw string) error {
	if len(pw) > maxLoginField {
		return &domain.Error{Kind: domain.ErrForbidden, Code: "wrong_password", Message: "the password is wrong"}
	}
	ok, retry, err := s.limiter.Attempt(ctx, clientIPOf(ctx), u.Username, func() (bool, error) {
		if u.PasswordHash == "" {
			return false, s.hasher.VerifyDummy(ctx, pw)
		}
		match, err := s.hasher.Verify(ctx, u.PasswordHash, pw)
		if errors.Is(err, password.ErrMalformedHash) {
			return false, nil
		}
		return match, err
	})
	if retry > 0 {
		s.audit(ctx, actor, "auth.login_locked", u.Username, map[string]any{"retry_after_seconds": int(math.Ceil(retry.Seconds()))})
		return err
	}
	if err != nil {
		return err
	}
	if !ok {
		s.audit(ctx, actor, "auth.reauth_failed", u.Username, nil)
		return &domain.Error{Kind: domain.ErrForbidden, Code: "wrong_password", Message: "the password is wrong"}
	}
	return nil
}

// Reset2FA is the admin's way out for a user who lost both the
// authenticator and the recovery codes: 2FA is switched off, the secret
// and the recovery codes are deleted and every session of the account
// ends. A role in require_2fa_roles puts the account into forced setup at
// the next sign-in. One's own 2FA is turned off with Disable2FA instead
// (it needs a code), so a stolen admin session cannot strip its own 2FA.
func (s *Service) Reset2FA(ctx context.Context, actor *domain.Principal, id string) (store.User, error) {
	if !actor.Can(domain.PermUsersWrite) {
		return store.User{}, domain.Forbidden("resetting another user's 2FA needs users:write")
	}
	u, err := s.st.GetUser(ctx, id)
	if err != nil {
		return store.User{}, err
	}
	if u.IsSystem {
		return store.User{}, domain.Forbidden("the system user cannot be changed")
	}
	if id == actor.UserID {
		return store.User{}, domain.Conflict("cannot_reset_own_2fa", "turn off your own 2FA in your profile with a code or a recovery code")
	}
	if !u.TOTPEnabled && u.TOTPSecret == "" {
		return store.User{}, domain.Conflict("2fa_not_enabled", "two-factor authentication is not enabled for this user")
	}
	if err := s.turnOff2FA(ctx, u.ID, true); err != nil {
		return store.User{}, err
	}
	s.audit(ctx, actor, "user.2fa_reset", u.Username, map[string]any{"user_id": id})
	return s.st.GetUser(ctx, u.ID)
}

// turnOff2FA switches 2FA off and deletes the secret and recovery codes;
// endSessions also ends every session of the account.
func (s *Service) turnOff2FA(ctx context.Context, userID string, endSessions bool) error {
	return s.st.InTx(ctx, func(tx *store.Store) error {
		off, empty := false, ""
		upd := store.UserUpdate{TOTPEnabled: &off, TOTPSecret: &empty}
		if endSessions {
			after := s.now().UnixMilli() + 1
			upd.SessionsValidAfter = &after
		}
		if err := tx.UpdateUser(ctx, userID, upd); err != nil {
			return err
		}
		return tx.DeleteRecoveryCodes(ctx, userID)
	})
}
