package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/auth"
)

// ctxer gives converters the request context without tying them to gin.
type ctxer interface{ ctx() context.Context }

type ginCtx struct{ c *gin.Context }

func (g ginCtx) ctx() context.Context { return g.c.Request.Context() }

type loginRequest struct {
	Username *string `json:"username"`
	Password *string `json:"password"`
}

type loginResponse struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	User      userDTO   `json:"user"`
	// RecoveryCodesRemaining is present only when a recovery code
	// completed the login.
	RecoveryCodesRemaining *int `json:"recovery_codes_remaining,omitempty"`
}

type challengeResponse struct {
	TwoFactorRequired bool      `json:"two_factor_required"`
	Challenge         string    `json:"challenge"`
	ExpiresAt         time.Time `json:"expires_at"`
}

func (s *Server) login(c *gin.Context) {
	var req loginRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Username == nil || req.Password == nil {
		writeError(c, http.StatusBadRequest, "invalid_request", "username and password are required")
		return
	}
	res, err := s.deps.Services.Auth.Login(c.Request.Context(), *req.Username, *req.Password)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.loginDone(c, res)
}

// login2FARequest carries either the TOTP code or a recovery code.
type login2FARequest struct {
	Challenge    *string `json:"challenge"`
	Code         *string `json:"code"`
	RecoveryCode *string `json:"recovery_code"`
}

func (s *Server) login2FA(c *gin.Context) {
	var req login2FARequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Challenge == nil || (req.Code == nil) == (req.RecoveryCode == nil) {
		writeError(c, http.StatusBadRequest, "invalid_request", "challenge and either code or recovery_code are required")
		return
	}
	res, err := s.deps.Services.Auth.Login2FA(c.Request.Context(), *req.Challenge, auth.SecondFactor{Code: deref(req.Code), RecoveryCode: deref(req.RecoveryCode)})
	if err != nil {
		s.fail(c, err)
		return
	}
	s.loginDone(c, res)
}

func (s *Server) loginDone(c *gin.Context, res auth.LoginResult) {
	if res.Challenge != "" {
		c.JSON(http.StatusOK, challengeResponse{TwoFactorRequired: true, Challenge: res.Challenge, ExpiresAt: res.ExpiresAt.UTC()})
		return
	}
	s.setSessionCookies(c, res.Token, res.ExpiresAt)
	c.JSON(http.StatusOK, loginResponse{Token: res.Token, ExpiresAt: res.ExpiresAt.UTC(), User: s.toUserDTO(ginCtx{c}, res.User),
		RecoveryCodesRemaining: res.RecoveryCodesRemaining})
}

// setSessionCookies sets lcm_session (HttpOnly, the JWT) and lcm_csrf
// (readable by the UI's JavaScript, echoed in X-CSRF-Token). Both are
// SameSite=Strict and Secure unless --dev (plain HTTP).
func (s *Server) setSessionCookies(c *gin.Context, token string, exp time.Time) {
	maxAge := int(time.Until(exp).Seconds())
	secure := !s.deps.Dev
	http.SetCookie(c.Writer, &http.Cookie{Name: cookieSession, Value: token, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
	http.SetCookie(c.Writer, &http.Cookie{Name: cookieCSRF, Value: s.deps.Services.Auth.CSRFToken(token), Path: "/", MaxAge: maxAge,
		HttpOnly: false, Secure: secure, SameSite: http.SameSiteStrictMode})
}

func (s *Server) clearSessionCookies(c *gin.Context) {
	secure := !s.deps.Dev
	for _, name := range []string{cookieSession, cookieCSRF} {
		http.SetCookie(c.Writer, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1,
			HttpOnly: name == cookieSession, Secure: secure, SameSite: http.SameSiteStrictMode})
	}
}

func (s *Server) logout(c *gin.Context) {
	if err := s.deps.Services.Auth.Logout(c.Request.Context(), principal(c)); err != nil {
		s.fail(c, err)
		return
	}
	s.clearSessionCookies(c)
	c.Status(http.StatusNoContent)
}

func (s *Server) getMe(c *gin.Context) {
	u, err := s.deps.Services.Auth.GetUser(c.Request.Context(), principal(c).UserID)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.toUserDTO(ginCtx{c}, u))
}

type setup2FAResponse struct {
	Secret     string `json:"secret"`
	OTPAuthURI string `json:"otpauth_uri"`
	QRPNG      string `json:"qr_png"`
}

func (s *Server) setup2FA(c *gin.Context) {
	if !emptyBody(c) {
		return
	}
	r, err := s.deps.Services.Auth.Setup2FA(c.Request.Context(), principal(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, setup2FAResponse{Secret: r.Secret, OTPAuthURI: r.OTPAuthURI, QRPNG: base64.StdEncoding.EncodeToString(r.QRPNG)})
}

// emptyBody accepts no body, an empty one or "{}" (the endpoint takes
// nothing); anything else is a 400.
func emptyBody(c *gin.Context) bool {
	if c.Request.ContentLength == 0 {
		return true
	}
	var v struct{}
	return bindJSON(c, &v)
}

type codeRequest struct {
	Code *string `json:"code"`
}

func (s *Server) bindCode(c *gin.Context) (string, bool) {
	var req codeRequest
	if !bindJSON(c, &req) {
		return "", false
	}
	if req.Code == nil || *req.Code == "" {
		writeError(c, http.StatusBadRequest, "invalid_request", "code is required")
		return "", false
	}
	return *req.Code, true
}

// enable2FAResponse is the user plus the first recovery codes, shown once.
type enable2FAResponse struct {
	userDTO
	RecoveryCodes []string `json:"recovery_codes"`
}

func (s *Server) enable2FA(c *gin.Context) {
	code, ok := s.bindCode(c)
	if !ok {
		return
	}
	u, codes, err := s.deps.Services.Auth.Enable2FA(c.Request.Context(), principal(c), code)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, enable2FAResponse{userDTO: s.toUserDTO(ginCtx{c}, u), RecoveryCodes: codes})
}

// secondFactorRequest is a TOTP code or a recovery code.
type secondFactorRequest struct {
	Code         *string `json:"code"`
	RecoveryCode *string `json:"recovery_code"`
}

func (s *Server) disable2FA(c *gin.Context) {
	var req secondFactorRequest
	if !bindJSON(c, &req) {
		return
	}
	if deref(req.Code) == "" && deref(req.RecoveryCode) == "" {
		writeError(c, http.StatusBadRequest, "invalid_request", "code or recovery_code is required")
		return
	}
	u, err := s.deps.Services.Auth.Disable2FA(c.Request.Context(), principal(c),
		auth.SecondFactor{Code: deref(req.Code), RecoveryCode: deref(req.RecoveryCode)})
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.toUserDTO(ginCtx{c}, u))
}

// recoveryStatusDTO is the state of the caller's recovery codes; Codes is
// set only in the answer to a regeneration (shown once).
type recoveryStatusDTO struct {
	Remaining   int        `json:"remaining"`
	Total       int        `json:"total"`
	Low         bool       `json:"low"`
	GeneratedAt *time.Time `json:"generated_at"`
	Codes       []string   `json:"recovery_codes,omitempty"`
}

func toRecoveryStatusDTO(st auth.RecoveryStatus) recoveryStatusDTO {
	return recoveryStatusDTO{Remaining: st.Remaining, Total: st.Total, Low: st.Low, GeneratedAt: st.GeneratedAt}
}

func (s *Server) getRecoveryCodes(c *gin.Context) {
	st, err := s.deps.Services.Auth.RecoveryCodeStatus(c.Request.Context(), principal(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toRecoveryStatusDTO(st))
}

type reauthRequest struct {
	Password *string `json:"password"`
	Code     *string `json:"code"`
}

func (s *Server) regenerateRecoveryCodes(c *gin.Context) {
	var req reauthRequest
	if !bindJSON(c, &req) {
		return
	}
	if deref(req.Password) == "" && deref(req.Code) == "" {
		writeError(c, http.StatusBadRequest, "invalid_request", "password or code is required")
		return
	}
	ctx := c.Request.Context()
	codes, err := s.deps.Services.Auth.RegenerateRecoveryCodes(ctx, principal(c), auth.Reauth{Password: deref(req.Password), Code: deref(req.Code)})
	if err != nil {
		s.fail(c, err)
		return
	}
	st, err := s.deps.Services.Auth.RecoveryCodeStatus(ctx, principal(c))
	if err != nil {
		s.fail(c, err)
		return
	}
	out := toRecoveryStatusDTO(st)
	out.Codes = codes
	c.JSON(http.StatusOK, out)
}

type resetRequest struct {
	UsernameOrEmail *string `json:"username_or_email"`
}

func (s *Server) requestPasswordReset(c *gin.Context) {
	var req resetRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.UsernameOrEmail == nil || *req.UsernameOrEmail == "" {
		writeError(c, http.StatusBadRequest, "invalid_request", "username_or_email is required")
		return
	}
	s.deps.Services.Auth.RequestPasswordReset(c.Request.Context(), *req.UsernameOrEmail)
	c.JSON(http.StatusAccepted, gin.H{"status": "accepted"})
}

type tokenPasswordRequest struct {
	Token    *string `json:"token"`
	Password *string `json:"password"`
}

func (s *Server) bindTokenPassword(c *gin.Context) (string, string, bool) {
	var req tokenPasswordRequest
	if !bindJSON(c, &req) {
		return "", "", false
	}
	if req.Token == nil || req.Password == nil {
		writeError(c, http.StatusBadRequest, "invalid_request", "token and password are required")
		return "", "", false
	}
	return *req.Token, *req.Password, true
}

func (s *Server) confirmPasswordReset(c *gin.Context) {
	tok, pw, ok := s.bindTokenPassword(c)
	if !ok {
		return
	}
	if err := s.deps.Services.Auth.ConfirmPasswordReset(c.Request.Context(), tok, pw); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) consumeActivationLink(c *gin.Context) {
	tok, pw, ok := s.bindTokenPassword(c)
	if !ok {
		return
	}
	if err := s.deps.Services.Auth.ConsumeActivation(c.Request.Context(), tok, pw); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// deref is the string behind p, "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
