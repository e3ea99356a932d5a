package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// healthPingTimeout bounds the DB ping of /health so a hung DB answers 503
// quickly instead of hanging the probe; the request as a whole has
// healthBudget (deadline.go), so whatever authentication took is deducted.
const healthPingTimeout = 2 * time.Second

// healthReserve is kept back from the budget to write the 503.
const healthReserve = 50 * time.Millisecond

func (s *Server) getHealth(c *gin.Context) {
	ctx := c.Request.Context()
	wait := healthPingTimeout
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-healthReserve)
	}
	ctx, cancel := context.WithTimeout(ctx, max(wait, 0))
	defer cancel()
	if err := s.deps.Store.Ping(ctx); err != nil {
		c.JSON(http.StatusServiceUnavailable, gin.H{"status": "unhealthy"})
		return
	}
	p := principal(c)
	if p == nil || s.deps.Health == nil {
		c.JSON(http.StatusOK, gin.H{"status": "ok"})
		return
	}
	d := s.deps.Health.Diagnostics()
	body := gin.H{
		"status":          "ok",
		"fail_streak":     d.FailStreak,
		"panics_total":    d.PanicsTotal,
		"panics_recent":   d.PanicsRecent,
		"watchdog_active": d.WatchdogActive,
		"uptime_seconds":  d.UptimeSeconds,
		"database":        string(s.deps.Store.Dialect()),
	}
	if s.deps.Bus != nil {
		body["bus"] = map[bool]string{true: "connected", false: "disconnected"}[s.deps.Bus.Healthy()]
	}
	c.JSON(http.StatusOK, body)
}

func (s *Server) getSystemInfo(c *gin.Context) {
	i := s.info
	body := gin.H{"name": "LCM", "version": i.Version, "build": i.Build, "commit": i.Commit, "dirty": i.Dirty}
	if principal(c) != nil {
		body["build_time"] = i.BuildTime
		body["go_version"] = i.GoVersion
		body["database"] = string(s.deps.Store.Dialect())
		if s.deps.Bus != nil {
			body["bus_embedded"] = s.deps.Bus.Embedded()
		}
	}
	c.JSON(http.StatusOK, body)
}

// noRoute answers unknown API paths with JSON 404 and everything else with
// the single-page app.
func (s *Server) noRoute(c *gin.Context) {
	p := c.Request.URL.Path
	if isAPIPath(p) || s.deps.Web == nil || (c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead) {
		writeError(c, http.StatusNotFound, "not_found", "no such endpoint")
		return
	}
	s.serveWeb(c)
}

// isAPIPath reports whether p belongs to the API or the health checks,
// never to the web UI: an unknown path there answers 404 JSON, not the
// app's page with 200.
func isAPIPath(p string) bool {
	for _, root := range nonUIRoots {
		if p == root || hasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// nonUIRoots are the path roots the web UI never serves.
var nonUIRoots = []string{"/api", "/v1", "/health", "/healthz"}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
