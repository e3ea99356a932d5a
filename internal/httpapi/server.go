// Package httpapi is LCM's REST transport: the gin router, the middleware
// chain, the route table with its permissions, error mapping and the OpenAPI
// document. Handlers are thin: bind → service (or store for plain reads) →
// convert → respond. Nothing outside this package imports gin.
package httpapi

import (
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/bus"
	"github.com/lcmproject/lcm/internal/health"
	"github.com/lcmproject/lcm/internal/store"
	"github.com/lcmproject/lcm/internal/version"
)

// Deps are the collaborators the HTTP layer calls.
type Deps struct {
	Store  *store.Store
	Bus    *bus.Bus
	Health *health.Monitor
	Log    *slog.Logger
	// AccessLog switches the per-request log; Debug adds query and agent.
	AccessLog bool
	Debug     bool
	// Dev allows plain HTTP (cookies without Secure).
	Dev bool
	// RequestTimeout is the deadline of a request (request_timeout_seconds;
	// DefaultRequestTimeout when zero); deadline.go names the exceptions.
	RequestTimeout time.Duration
	// ClientAddr is the one function deriving the client address (honours
	// trust_proxy_header); Allowed is the allowlist (allowed_ips).
	ClientAddr func(r *http.Request) netip.Addr
	Allowed    func(netip.Addr) bool
	// Web is the built single-page app (may be nil).
	Web fs.FS
	// Services of the areas; each area's routes file uses its own.
	Services Services
}

// Server is the HTTP API: a gin engine plus the route table it was built from.
type Server struct {
	deps   Deps
	engine *gin.Engine
	routes []Route
	// public holds the "METHOD path" of the routes that need no login.
	public map[string]bool
	info   version.Info
	// serverList caches the rendered whole-fleet listing (serverlist.go).
	serverList serverListCache
}

// New builds the router with the middleware chain in the documented order:
// recover → deadline → client address + allowlist → access log → security headers →
// plain text (no NUL or invalid UTF-8 in path and query) → API-key rate limit → authenticate → (per route) 2FA gate → permission.
func New(d Deps) *Server {
	gin.SetMode(gin.ReleaseMode)
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.ClientAddr == nil {
		d.ClientAddr = remoteAddr
	}
	s := &Server{deps: d, engine: gin.New(), info: version.Get()}
	e := s.engine
	e.HandleMethodNotAllowed = true
	e.RemoveExtraSlash = false
	e.Use(s.recoverPanics(), observe(), s.requestDeadline(), s.clientAddress(), s.accessLog(), securityHeaders(), plainText(), s.rateLimitAPIKeys(), s.authenticate())
	s.registerRoutes()
	if testRoutes != nil {
		testRoutes(s)
	}
	e.NoRoute(s.noRoute)
	e.NoMethod(func(c *gin.Context) {
		writeError(c, http.StatusMethodNotAllowed, "method_not_allowed", "method not allowed")
	})
	return s
}

// Handler returns the http.Handler to serve.
func (s *Server) Handler() http.Handler { return s.engine }

// Routes returns the route table (for the OpenAPI check and docs).
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

func remoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
