package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesSecurity: vulnerability scanning (issue 16). Per-server routes
// 404 for a server outside the caller's groups; fleet views list only the
// caller's servers. Paths follow the reference inventory.
func (s *Server) routesSecurity() {
	s.handle(http.MethodGet, "/api/v1/servers/:id/vulnerabilities", Need(domain.PermServersRead), s.listServerVulns)
	s.handle(http.MethodPost, "/api/v1/servers/:id/vulnerabilities/scan", Need(domain.PermServersWrite), s.scanServerVulns)
	s.handle(http.MethodGet, "/api/v1/servers/:id/sbom", Need(domain.PermServersRead), s.getServerSBOM)
	s.handle(http.MethodGet, "/api/v1/server-groups/:id/sbom", Need(domain.PermGroupsRead), s.getGroupSBOM)
	s.handle(http.MethodGet, "/api/v1/security/vulnerabilities", Need(domain.PermPackagesRead), s.listFleetVulns)
	s.handle(http.MethodPost, "/api/v1/security/vulnerabilities/scan", Need(domain.PermServersWrite), s.scanFleetVulns)
	s.handle(http.MethodPost, "/api/v1/security/vulnerabilities/:fid/acknowledge", Need(domain.PermServersWrite), s.acknowledgeVuln)
	s.handle(http.MethodGet, "/api/v1/security/scanner", Need(domain.PermPackagesRead), s.getScanner)
	s.handle(http.MethodPost, "/api/v1/security/scanner/update-db", Need(domain.PermSettingsManage), s.updateVulnDB)
	s.handle(http.MethodGet, "/api/v1/security/update-affected", Need(domain.PermPackagesRead), s.getUpdateAffected)
	s.handle(http.MethodPost, "/api/v1/security/update-affected", Need(domain.PermServersWrite), s.postUpdateAffected)
	s.handle(http.MethodGet, "/api/v1/packages/vulnerable", Need(domain.PermPackagesRead), s.listVulnerablePackages)
}
