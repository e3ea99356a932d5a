package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesServers: servers, their onboarding and server jobs (issue 4).
func (s *Server) routesServers() {
	s.handle(http.MethodGet, "/api/v1/servers", Need(domain.PermServersRead), s.listServers)
	s.handle(http.MethodPost, "/api/v1/servers/probe", Need(domain.PermServersWrite), s.probeServer)
	s.handle(http.MethodPost, "/api/v1/servers/join", Need(domain.PermServersWrite), s.joinServer)
	s.handle(http.MethodGet, "/api/v1/servers/:id", Need(domain.PermServersRead), s.getServer)
	s.handle(http.MethodPatch, "/api/v1/servers/:id/settings", Need(domain.PermServersWrite), s.updateServerSettings)
	s.handle(http.MethodPost, "/api/v1/servers/:id/reconnect", Need(domain.PermServersWrite), s.reconnectServer)
	s.handle(http.MethodPost, "/api/v1/servers/:id/connectivity-check", Need(domain.PermServersWrite), s.checkServerConnectivity)
	s.handle(http.MethodPost, "/api/v1/servers/:id/rotate-key", Need(domain.PermServersWrite), s.rotateServerKey)
	s.handle(http.MethodPost, "/api/v1/servers/:id/decommission", Need(domain.PermServersWrite), s.decommissionServer)
	s.handle(http.MethodPost, "/api/v1/servers/:id/packages/upgrade-security", Need(domain.PermServersWrite), s.upgradeSecurityPackages)
	s.handle(http.MethodGet, "/api/v1/servers/:id/active-job", Need(domain.PermServersRead), s.getServerActiveJob)
}
