package httpapi

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"
)

// Deadlines of requests. Every database call on a request path runs under
// the request's context, so these bound them all: a database that accepts
// connections and answers nothing costs a request its deadline and a 503
// "request_timeout", never a hang.
const (
	// DefaultRequestTimeout is request_timeout_seconds' default.
	DefaultRequestTimeout = 30 * time.Second
	// healthBudget bounds a whole health check, authentication included:
	// a load balancer must see 503 within its probe timeout, not a hang.
	healthBudget = 2 * time.Second
	// longRequestTimeout bounds the requests that move whole files or
	// databases (backups, restores, vulnerability data uploads), which a
	// slow link or a large database may keep busy for minutes.
	longRequestTimeout = 15 * time.Minute
	// authLookupTimeout bounds authentication's database lookups (user,
	// API key) even where the request has no shorter deadline (live
	// streams): a caller that cannot be authenticated in 5 s is answered.
	authLookupTimeout = 5 * time.Second
)

// routeDeadlines are the routes whose deadline is not the configured
// request timeout; 0 means none for the request as a whole.
var routeDeadlines = map[string]time.Duration{
	"GET /api/v1/health": healthBudget,
	"GET /health":        healthBudget,
	"GET /healthz":       healthBudget,
	// A live stream stays open for the job's life; its database reads are
	// bounded one by one (jobs.Follow).
	"GET /api/v1/jobs/:id/stream":                0,
	"GET /api/v1/system/backups/:name/download":  longRequestTimeout,
	"POST /api/v1/system/backups/trigger-now":    longRequestTimeout,
	"POST /api/v1/system/backups/restore-upload": longRequestTimeout,
	"POST /api/v1/system/backups/:name/restore":  longRequestTimeout,
	"POST /api/v1/security/scanner/update-db":    longRequestTimeout,
}

// requestDeadline puts the request's deadline on its context before
// anything reads the database (authentication included).
func (s *Server) requestDeadline() gin.HandlerFunc {
	def := s.deps.RequestTimeout
	if def <= 0 {
		def = DefaultRequestTimeout
	}
	return func(c *gin.Context) {
		d, ok := routeDeadlines[c.Request.Method+" "+c.FullPath()]
		if !ok {
			d = def
		}
		if d > 0 {
			ctx, cancel := context.WithTimeout(c.Request.Context(), d)
			defer cancel()
			c.Request = c.Request.WithContext(ctx)
		}
		c.Next()
	}
}
