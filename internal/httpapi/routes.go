package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// Access is the rule a route enforces. Build it with Public, Login or Need;
// a route cannot be registered without one.
type Access struct {
	kind       accessKind
	permission string
	// remediation marks routes reachable by an account that must set up 2FA
	// first (fail-closed allowlist: everything else is refused).
	remediation bool
}

type accessKind int

const (
	accessPublic accessKind = iota + 1
	accessLogin
	accessPermission
)

// Public routes need no authentication.
func Public() Access { return Access{kind: accessPublic} }

// Login routes need a signed-in caller, no permission.
func Login() Access { return Access{kind: accessLogin} }

// Need routes need a signed-in caller holding the permission.
func Need(permission string) Access { return Access{kind: accessPermission, permission: permission} }

// Remediation returns a copy reachable during the forced 2FA setup.
func (a Access) Remediation() Access { a.remediation = true; return a }

// String is the value of the route's x-permission in the OpenAPI document.
func (a Access) String() string {
	switch a.kind {
	case accessPublic:
		return "public"
	case accessLogin:
		return "login"
	default:
		return a.permission
	}
}

// Route is one line of the route table.
type Route struct {
	Method string
	Path   string // gin syntax, e.g. /api/v1/servers/:id
	Access Access
}

// OpenAPIPath converts gin's :param to OpenAPI's {param}.
func (r Route) OpenAPIPath() string {
	parts := strings.Split(r.Path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
			parts[i] = "{" + p[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// handle registers a route with its access rule. Every route goes through
// here, so the route table is complete by construction, and every write
// route is audited (auditWrite, audit.go).
func (s *Server) handle(method, path string, a Access, h ...gin.HandlerFunc) {
	if a.kind == 0 {
		panic("httpapi: route " + method + " " + path + " registered without an access rule")
	}
	s.routes = append(s.routes, Route{Method: method, Path: path, Access: a})
	if a.kind == accessPublic {
		if s.public == nil {
			s.public = map[string]bool{}
		}
		s.public[method+" "+path] = true
	}
	chain := []gin.HandlerFunc{s.enforce(a)}
	if isWrite(method) {
		chain = []gin.HandlerFunc{s.auditWrite(method, path), s.enforce(a)}
	}
	chain = append(chain, h...)
	s.engine.Handle(method, path, chain...)
}

// registerRoutes is the table of contents: one call per area.
func (s *Server) registerRoutes() {
	s.routesPlatform()
	s.routesAreas()
}

func (s *Server) routesPlatform() {
	s.handle(http.MethodGet, "/api/v1/health", Public(), s.getHealth)
	// The same check where load balancers and orchestrators look for it
	// by default; without these routes the web UI's fallback would answer
	// them with the app's page and 200 even with the database down.
	s.handle(http.MethodGet, "/health", Public(), s.getHealth)
	s.handle(http.MethodGet, "/healthz", Public(), s.getHealth)
	s.handle(http.MethodGet, "/api/v1/system/info", Public(), s.getSystemInfo)
	s.handle(http.MethodGet, "/api/v1/openapi.json", Public(), s.getOpenAPI)
}
