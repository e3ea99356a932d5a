package httpapi

import (
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/metrics"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/safe"
)

const (
	ctxClientIP  = "lcm.client_ip"
	ctxPrincipal = "lcm.principal"
	ctxAuthErr   = "lcm.auth_err"
	// ctxErrCode is the code of the error answer (for access.denied).
	ctxErrCode = "lcm.err_code"
)

// recoverPanics turns a panic into a generic 500, logs the stack (never the
// request body) and counts it for the health monitor (safe.Report: the
// process's one panic recorder).
func (s *Server) recoverPanics() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				safe.Report("http", v, "method", c.Request.Method, "path", logPath(c.Request.URL.Path))
				if !c.Writer.Written() {
					writeError(c, http.StatusInternalServerError, "internal", "internal server error")
				}
			}
		}()
		c.Next()
	}
}

// clientAddress derives the client address once (the same function feeds
// the allowlist and the lockouts) and refuses clients outside allowed_ips
// before authentication and before logging.
func (s *Server) clientAddress() gin.HandlerFunc {
	return func(c *gin.Context) {
		ip := s.deps.ClientAddr(c.Request)
		c.Set(ctxClientIP, ip)
		// The agent download is exempt: servers fetch it before they are
		// managed, often from addresses outside the operators' allowlist.
		exempt := c.Request.Method == http.MethodGet && strings.HasPrefix(c.Request.URL.Path, agentDownloadPrefix)
		if s.deps.Allowed != nil && !exempt && !s.deps.Allowed(ip) {
			writeError(c, http.StatusForbidden, "ip_not_allowed", "client address not allowed")
			return
		}
		c.Next()
	}
}

// clientIP returns the address derived by clientAddress.
func clientIP(c *gin.Context) netip.Addr {
	v, _ := c.Get(ctxClientIP)
	ip, _ := v.(netip.Addr)
	return ip
}

// accessLog writes one line per request: method, path, status, duration,
// IP, username; 4xx at WARN, 5xx at ERROR; query string and user agent at
// debug. Never bodies, passwords or tokens (the path carries none: tokens
// travel in headers). What the client chose is capped (accesslog.go), and
// lines of unauthenticated requests are rate-limited, so a flood cannot
// grow the log without bound.
func (s *Server) accessLog() gin.HandlerFunc {
	anon := newLineLimiter(anonLinesPerSecond, anonLineBurst)
	return func(c *gin.Context) {
		if !s.deps.AccessLog {
			c.Next()
			return
		}
		start := time.Now()
		c.Next()
		status := c.Writer.Status()
		if principal(c) == nil {
			ok, left := anon.allow()
			if !ok {
				metrics.AccessLogSuppressed.Inc()
				return
			}
			if left > 0 {
				s.deps.Log.Warn("access log: lines of unauthenticated requests were left out (rate limit)", "suppressed", left)
			}
		}
		attrs := []any{
			"method", c.Request.Method, "path", logPath(c.Request.URL.Path), "status", status,
			"duration_ms", float64(time.Since(start).Microseconds()) / 1000, "ip", clientIP(c).String(),
			"user", principalOf(c).usernameOrDash(),
		}
		if s.deps.Debug {
			attrs = append(attrs, "query", capField(redactQuery(c.Request.URL.Query()), maxLoggedField),
				"user_agent", capField(c.Request.UserAgent(), maxLoggedField))
		}
		level := slog.LevelInfo
		switch {
		case status >= 500:
			level = slog.LevelError
		case status >= 400:
			level = slog.LevelWarn
		}
		s.deps.Log.Log(c.Request.Context(), level, "http request", attrs...)
	}
}

// redactQuery hides values of parameters that could carry secrets.
func redactQuery(q map[string][]string) string {
	out := make([]byte, 0, 64)
	for k, vs := range q {
		for _, v := range vs {
			switch k {
			case "token", "key", "api_key", "password", "code", "secret":
				v = "***"
			}
			if len(out) > 0 {
				out = append(out, '&')
			}
			out = append(out, k...)
			out = append(out, '=')
			out = append(out, v...)
		}
	}
	return string(out)
}

// plainText refuses a request whose path or query holds a NUL byte or
// invalid UTF-8 (a percent-encoded %00 or %ff): no identifier or filter
// contains them, and PostgreSQL would reject such text deep in a query.
// JSON bodies are checked the same way when they are bound (bindJSON).
func plainText() gin.HandlerFunc {
	bad := func(s string) bool { return strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) }
	return func(c *gin.Context) {
		q, err := url.QueryUnescape(c.Request.URL.RawQuery)
		if bad(c.Request.URL.Path) || (err == nil && bad(q)) {
			writeError(c, http.StatusBadRequest, "invalid_text", "the path or query contains a NUL byte or invalid UTF-8")
			c.Abort()
			return
		}
		c.Next()
	}
}

// securityHeaders sets the spec's headers on every response.
func securityHeaders() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Permissions-Policy", "camera=(), geolocation=(), payment=(), usb=(), microphone=(self)")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if c.Request.TLS != nil {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		c.Next()
	}
}

type principalRef struct{ p *domain.Principal }

func (r principalRef) usernameOrDash() string {
	if r.p == nil {
		return "-"
	}
	return r.p.Username
}

func principalOf(c *gin.Context) principalRef {
	v, _ := c.Get(ctxPrincipal)
	p, _ := v.(*domain.Principal)
	return principalRef{p}
}

// principal returns the authenticated caller, nil for anonymous requests.
func principal(c *gin.Context) *domain.Principal { return principalOf(c).p }

// enforce applies a route's access rule: 401 without login, 403 during a
// forced 2FA setup outside the allowlist, 403 without the permission.
func (s *Server) enforce(a Access) gin.HandlerFunc {
	return func(c *gin.Context) {
		if a.kind == accessPublic {
			c.Next()
			return
		}
		p := principal(c)
		if p == nil {
			if v, ok := c.Get(ctxAuthErr); ok {
				s.respondError(c, v.(error))
				return
			}
			writeError(c, http.StatusUnauthorized, "unauthenticated", "authentication required")
			return
		}
		if p.Must2FASetup && !a.remediation {
			writeError(c, http.StatusForbidden, "2fa_setup_required", "two-factor authentication must be set up before using this endpoint")
			return
		}
		if a.kind == accessPermission && !p.Can(a.permission) {
			writeError(c, http.StatusForbidden, "forbidden", "missing permission "+a.permission)
			return
		}
		c.Next()
	}
}

// observe records every answered request in the metrics: count by method,
// route template (gin's registered path, so ids do not explode the label
// set; "unmatched" for the web UI and unknown paths) and status, and the
// latency.
func observe() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		metrics.HTTPRequests.WithLabelValues(c.Request.Method, route, strconv.Itoa(c.Writer.Status())).Inc()
		metrics.HTTPDuration.WithLabelValues(c.Request.Method, route).Observe(time.Since(start).Seconds())
	}
}
