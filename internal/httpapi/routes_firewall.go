package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesFirewall: the host firewall, listening ports, named IP allowlists
// and the fleet hardening overview (issue 13, section 3). The server
// writes submit jobs that prove their result on the server (read-back, a
// fresh login after enabling) or roll it back.
func (s *Server) routesFirewall() {
	w, r := Need(domain.PermServersWrite), Need(domain.PermServersRead)
	s.handle(http.MethodPost, "/api/v1/servers/:id/firewall", w, s.firewallOp)
	s.handle(http.MethodGet, "/api/v1/servers/:id/firewall", r, s.getFirewall)
	s.handle(http.MethodPost, "/api/v1/servers/:id/listening-ports/scan", w, s.scanListeningPorts)
	m := Need(domain.PermSettingsManage)
	s.handle(http.MethodGet, "/api/v1/settings/ip-allowlists", m, s.listIPAllowlists)
	s.handle(http.MethodPost, "/api/v1/settings/ip-allowlists", m, s.createIPAllowlist)
	s.handle(http.MethodDelete, "/api/v1/settings/ip-allowlists/:id", m, s.deleteIPAllowlist)
	s.handle(http.MethodGet, "/api/v1/ip-allowlists", r, s.listIPAllowlists)
	s.handle(http.MethodGet, "/api/v1/fleet/hardening", r, s.hardeningOverview)
}
