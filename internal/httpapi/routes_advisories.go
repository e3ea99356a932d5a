package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesAdvisories: the early warning (docs/early-warning.md). Paths and
// permissions follow the reference inventory; the settings routes are
// ours. Findings and counts cover the caller's servers only.
func (s *Server) routesAdvisories() {
	s.handle(http.MethodGet, "/api/v1/security/advisories", Need(domain.PermPackagesRead), s.listEarlyWarnings)
	s.handle(http.MethodGet, "/api/v1/security/advisories/status", Need(domain.PermPackagesRead), s.getAdvisoryStatus)
	s.handle(http.MethodGet, "/api/v1/security/caches", Need(domain.PermPackagesRead), s.getVulnCaches)
	s.handle(http.MethodPost, "/api/v1/security/advisories/poll", Need(domain.PermServersWrite), s.pollAdvisories)
	s.handle(http.MethodPost, "/api/v1/security/advisories/mirror", Need(domain.PermSettingsManage), s.mirrorAdvisories)
	s.handle(http.MethodPost, "/api/v1/security/advisories/:id/acknowledge", Need(domain.PermServersWrite), s.acknowledgeEarlyWarning)
	s.handle(http.MethodGet, "/api/v1/security/advisories/settings", Need(domain.PermPackagesRead), s.getAdvisorySettings)
	s.handle(http.MethodPut, "/api/v1/security/advisories/settings", Need(domain.PermSettingsManage), s.putAdvisorySettings)
}
