package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/url"
	"time"

	"github.com/lcmproject/lcm/internal/auth/mail"
	"github.com/lcmproject/lcm/internal/auth/password"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// One-time link kinds.
const (
	kindActivation = "activation"
	kindReset      = "reset"
)

// Link lifetimes. Why: an invitation waits for someone to read mail over a
// weekend (72 h); a reset is asked for by the user who waits for it (1 h).
const (
	activationTTL = 72 * time.Hour
	resetTTL      = time.Hour
)

// Reset mail throttle per account. Why: the reset endpoint is public, so
// without it anyone who knows a user name can flood that user's mailbox
// (and the relay's reputation). One mail a minute lets a user who mistyped
// their filter retry soon; five an hour is more than anyone needs.
const (
	resetMinInterval = time.Minute
	resetMaxPerHour  = 5
)

// LinkSent is the result of sending an activation link.
type LinkSent struct{ ExpiresAt time.Time }

func (s *Service) sendLink(ctx context.Context, actor *domain.Principal, u store.User, kind string) (LinkSent, error) {
	if u.Email == "" {
		return LinkSent{}, domain.Invalid("email_required", "the user has no e-mail address")
	}
	if !s.mail.Configured(ctx) {
		return LinkSent{}, domain.Unavailable("smtp_not_configured", "no SMTP server is configured")
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return LinkSent{}, err
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	ttl, path, subject := activationTTL, "/activate", "Your LCM account"
	if kind == kindReset {
		ttl, path, subject = resetTTL, "/reset-password", "Reset your LCM password"
	}
	exp := s.now().UTC().Add(ttl)
	if err := s.st.CreateAuthToken(ctx, kind, u.ID, HashAPIKey(tok), exp); err != nil {
		return LinkSent{}, err
	}
	link := s.linkBase(ctx) + path + "?token=" + url.QueryEscape(tok)
	var body string
	if kind == kindReset {
		body = fmt.Sprintf("Hello %s,\n\nsomeone asked to reset the password of your LCM account. Set a new password here:\n\n%s\n\nThe link works once and expires at %s. If you did not ask for this, ignore this e-mail.\n",
			u.Username, link, exp.Format(time.RFC1123))
	} else {
		body = fmt.Sprintf("Hello %s,\n\nan LCM account was created for you. Choose your password here:\n\n%s\n\nThe link works once and expires at %s.\n",
			u.Username, link, exp.Format(time.RFC1123))
	}
	msg := mail.Message{To: u.Email, Subject: subject, Body: body}
	// Delivered in the background: the response time must not reveal
	// whether a mail was sent (password reset is public), and a slow relay
	// must not hold the request.
	s.mailWG.goFn(func() {
		if err := s.mail.Send(context.WithoutCancel(ctx), msg); err != nil {
			s.log.Error("e-mail not delivered", "kind", kind, "user", u.Username, "err", err)
		}
	})
	s.audit(ctx, actor, "user."+kind+"_link_sent", u.Username, map[string]any{"user_id": u.ID})
	return LinkSent{ExpiresAt: exp}, nil
}

// SendActivationLink mails a new activation link to a user (users:write).
func (s *Service) SendActivationLink(ctx context.Context, actor *domain.Principal, userID string) (LinkSent, error) {
	u, err := s.st.GetUser(ctx, userID)
	if err != nil {
		return LinkSent{}, err
	}
	if u.IsSystem {
		return LinkSent{}, domain.Forbidden("the system user cannot log in")
	}
	return s.sendLink(ctx, actor, u, kindActivation)
}

// RequestPasswordReset mails a reset link when the name or address
// belongs to an active user with an e-mail address. It reports nothing
// either way (no user enumeration).
func (s *Service) RequestPasswordReset(ctx context.Context, login string) {
	if login == "" || len(login) > 254 {
		return
	}
	u, err := s.st.FindUserByLogin(ctx, login)
	if err != nil || u.IsSystem || !u.Active || u.Email == "" {
		s.audit(ctx, nil, "user.reset_requested_unknown", "", nil)
		return
	}
	if s.resetThrottled(ctx, u.ID) {
		s.audit(ctx, nil, "user.reset_throttled", u.Username, map[string]any{"user_id": u.ID})
		return
	}
	if _, err := s.sendLink(ctx, nil, u, kindReset); err != nil {
		s.log.Warn("password reset link not sent", "user", u.Username, "err", err)
	}
}

// resetThrottled reports whether a reset mail went to the user within
// resetMinInterval, or resetMaxPerHour within the last hour. A failed
// count fails closed (no mail).
func (s *Service) resetThrottled(ctx context.Context, userID string) bool {
	now := s.now()
	recent, err := s.st.CountAuthTokensSince(ctx, kindReset, userID, now.Add(-resetMinInterval))
	if err != nil || recent > 0 {
		return true
	}
	hour, err := s.st.CountAuthTokensSince(ctx, kindReset, userID, now.Add(-time.Hour))
	return err != nil || hour >= resetMaxPerHour
}

// ConsumeActivation sets the first password through an activation link.
func (s *Service) ConsumeActivation(ctx context.Context, token, pw string) error {
	return s.consumeLink(ctx, kindActivation, token, pw)
}

// ConfirmPasswordReset sets a new password through a reset link.
func (s *Service) ConfirmPasswordReset(ctx context.Context, token, pw string) error {
	return s.consumeLink(ctx, kindReset, token, pw)
}

func (s *Service) consumeLink(ctx context.Context, kind, token, pw string) error {
	if token == "" || pw == "" {
		return domain.Invalid("missing_field", "token and password are required")
	}
	if len(token) > 256 {
		return domain.Invalid("invalid_token", "the link is invalid, expired or already used")
	}
	h := HashAPIKey(token)
	uid, err := s.st.PeekAuthToken(ctx, kind, h, s.now())
	if err != nil {
		return err
	}
	u, err := s.st.GetUser(ctx, uid)
	if err != nil {
		return err
	}
	// The policy first, so a rejected password does not spend the link.
	if err := password.Validate(pw, identity(u)); err != nil {
		return err
	}
	if _, err := s.st.ConsumeAuthToken(ctx, kind, h, s.now()); err != nil {
		return err
	}
	if err := s.setPassword(ctx, u, pw); err != nil {
		return err
	}
	if kind == kindActivation && !u.Active {
		on := true
		if err := s.st.UpdateUser(ctx, u.ID, store.UserUpdate{Active: &on}); err != nil {
			return err
		}
	}
	s.auditAs(ctx, u.ID, u.Username, "user."+kind+"_completed", u.Username, nil)
	return nil
}
