package httpapi

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/auth"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/metrics"
)

// Cookie and header names of the browser session (docs/api-contract.md).
const (
	cookieSession = "lcm_session"
	cookieCSRF    = "lcm_csrf"
	headerCSRF    = "X-CSRF-Token"
	headerAPIKey  = "X-API-Key"
)

// rateLimitAPIKeys throttles X-API-Key requests per key and fixed minute
// window before the key is validated, so invalid keys are throttled too.
// Requests without an API key (sessions) are not affected.
func (s *Server) rateLimitAPIKeys() gin.HandlerFunc {
	return func(c *gin.Context) {
		a := s.deps.Services.Auth
		key := c.GetHeader(headerAPIKey)
		if a == nil || key == "" {
			c.Next()
			return
		}
		ok, retry, err := a.AllowAPIKey(c.Request.Context(), key)
		if err != nil {
			s.respondError(c, err)
			return
		}
		if !ok {
			metrics.RateLimited.Inc()
			setRetryAfter(c, auth.ErrRateLimited(retry))
			s.respondError(c, auth.ErrRateLimited(retry))
			return
		}
		c.Next()
	}
}

// authenticate resolves X-API-Key, Authorization: Bearer or the session
// cookie to a principal. Bad credentials leave the request anonymous with
// the reason recorded, so protected routes answer 401 (enforce) and public
// routes still work. Read-only keys on unsafe methods and mcp keys are
// refused here, before any controller code.
func (s *Server) authenticate() gin.HandlerFunc {
	return func(c *gin.Context) {
		a := s.deps.Services.Auth
		if a == nil {
			c.Next()
			return
		}
		ctx := auth.WithClientIP(c.Request.Context(), clientIP(c))
		c.Request = c.Request.WithContext(ctx)
		cred := auth.Credentials{APIKey: c.GetHeader(headerAPIKey), Method: c.Request.Method, CSRFHeader: c.GetHeader(headerCSRF)}
		if h := c.GetHeader("Authorization"); h != "" {
			scheme, tok, _ := strings.Cut(h, " ")
			tok = strings.TrimSpace(tok)
			if !strings.EqualFold(scheme, "Bearer") || tok == "" {
				c.Set(ctxAuthErr, error(&domain.Error{Kind: domain.ErrUnauthenticated, Code: "invalid_token", Message: "Authorization must be 'Bearer <token>'"}))
				c.Next()
				return
			}
			cred.Bearer = tok
		}
		if ck, err := c.Cookie(cookieSession); err == nil {
			cred.Cookie = ck
		}
		actx, cancel := context.WithTimeout(ctx, authLookupTimeout)
		p, err := a.Authenticate(actx, cred)
		cancel()
		var de *domain.Error
		switch {
		case err == nil && p != nil:
			c.Set(ctxPrincipal, p)
		case err == nil:
		case errors.As(err, &de) && (de.Code == "read_only_key" || de.Code == "mcp_key_rejected"):
			s.respondError(c, err)
			return
		case errors.Is(err, domain.ErrUnauthenticated) || errors.Is(err, domain.ErrForbidden):
			c.Set(ctxAuthErr, err)
		case s.public[c.Request.Method+" "+c.FullPath()] && (errors.Is(err, domain.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)):
			// A public route (health above all) answers for itself when
			// the database cannot say who the caller is.
			c.Set(ctxAuthErr, err)
		default:
			s.respondError(c, err)
			return
		}
		c.Next()
	}
}

// setRetryAfter sets Retry-After (whole seconds, rounded up) for a
// lockout or rate-limit error.
func setRetryAfter(c *gin.Context, err error) {
	if d, ok := auth.RetryAfter(err); ok {
		secs := int(math.Ceil(d.Seconds()))
		if secs < 1 {
			secs = 1
		}
		c.Header("Retry-After", strconv.Itoa(secs))
	}
}

// fail answers an error from the auth service (with Retry-After when it is
// a lockout).
func (s *Server) fail(c *gin.Context, err error) {
	setRetryAfter(c, err)
	s.respondError(c, err)
}
