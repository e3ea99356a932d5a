package auth

import (
	"context"

	"github.com/lcmproject/lcm/internal/auth/totp"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// TwoFASetup is what an authenticator app needs.
type TwoFASetup struct {
	Secret     string
	OTPAuthURI string
	QRPNG      []byte
}

// Setup2FA draws a new secret for the caller and stores it (encrypted)
// as pending: 2FA is on only after Enable2FA proves the app has it.
func (s *Service) Setup2FA(ctx context.Context, actor *domain.Principal) (TwoFASetup, error) {
	u, err := s.st.GetUser(ctx, actor.UserID)
	if err != nil {
		return TwoFASetup{}, err
	}
	if u.TOTPEnabled {
		return TwoFASetup{}, domain.Conflict("2fa_already_enabled", "two-factor authentication is already enabled; disable it first")
	}
	k, err := totp.Generate(Issuer, u.Username)
	if err != nil {
		return TwoFASetup{}, err
	}
	if err := s.st.UpdateUser(ctx, u.ID, store.UserUpdate{TOTPSecret: &k.Secret}); err != nil {
		return TwoFASetup{}, err
	}
	s.audit(ctx, actor, "auth.2fa_setup", u.Username, nil)
	return TwoFASetup{Secret: k.Secret, OTPAuthURI: k.URI, QRPNG: k.QRPNG}, nil
}

// Enable2FA turns 2FA on after a valid code for the pending secret and
// issues the first set of recovery codes, returned here once.
func (s *Service) Enable2FA(ctx context.Context, actor *domain.Principal, code string) (store.User, []string, error) {
	u, err := s.st.GetUser(ctx, actor.UserID)
	if err != nil {
		return store.User{}, nil, err
	}
	if u.TOTPEnabled {
		return store.User{}, nil, domain.Conflict("2fa_already_enabled", "two-factor authentication is already enabled")
	}
	if u.TOTPSecret == "" {
		return store.User{}, nil, domain.Invalid("2fa_not_set_up", "call /auth/2fa/setup first")
	}
	if code == "" {
		return store.User{}, nil, domain.Invalid("missing_field", "code is required")
	}
	if err := s.checkTOTP(ctx, u, code, "enable"); err != nil {
		return store.User{}, nil, err
	}
	var codes []string
	err = s.st.InTx(ctx, func(tx *store.Store) error {
		on := true
		if err := tx.UpdateUser(ctx, u.ID, store.UserUpdate{TOTPEnabled: &on}); err != nil {
			return err
		}
		plain, hashes, err := newRecoverySet()
		if err != nil {
			return err
		}
		codes = plain
		return tx.ReplaceRecoveryCodes(ctx, u.ID, hashes, s.now())
	})
	if err != nil {
		return store.User{}, nil, err
	}
	s.audit(ctx, actor, "auth.2fa_enabled", u.Username, map[string]any{"recovery_codes": len(codes)})
	u, err = s.st.GetUser(ctx, u.ID)
	return u, codes, err
}

// Disable2FA turns 2FA off after a valid TOTP code or recovery code
// (shared failure counter) and deletes the secret and the recovery codes.
// A role in require_2fa_roles puts the account back into forced setup.
func (s *Service) Disable2FA(ctx context.Context, actor *domain.Principal, f SecondFactor) (store.User, error) {
	u, err := s.st.GetUser(ctx, actor.UserID)
	if err != nil {
		return store.User{}, err
	}
	if !u.TOTPEnabled {
		return store.User{}, domain.Conflict("2fa_not_enabled", "two-factor authentication is not enabled")
	}
	method := "totp"
	if f.RecoveryCode != "" {
		method = "recovery_code"
	}
	if _, err := s.checkSecondFactor(ctx, u, f, "disable"); err != nil {
		return store.User{}, err
	}
	if err := s.turnOff2FA(ctx, u.ID, false); err != nil {
		return store.User{}, err
	}
	s.audit(ctx, actor, "auth.2fa_disabled", u.Username, map[string]any{"method": method})
	return s.st.GetUser(ctx, u.ID)
}

// Must2FASetup reports whether u must set up 2FA before anything else.
func (s *Service) Must2FASetup(ctx context.Context, u store.User) bool {
	if s.no2FA || u.TOTPEnabled {
		return false
	}
	set, err := s.Settings(ctx)
	if err != nil {
		return true
	}
	for _, r := range u.Roles {
		for _, need := range set.Require2FARoles {
			if r == need {
				return true
			}
		}
	}
	return false
}
