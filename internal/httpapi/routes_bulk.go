package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesBulk: one request runs an action on a selection, a group or the
// whole fleet (issue 22), and the security page's "update all".
func (s *Server) routesBulk() {
	s.handle(http.MethodPost, "/api/v1/jobs/bulk", Need(domain.PermServersWrite), s.submitBulk)
	s.handle(http.MethodGet, "/api/v1/jobs/bulk/:id", Need(domain.PermJobsRead), s.getBulk)
	s.handle(http.MethodGet, "/api/v1/security/update-all", Need(domain.PermPackagesRead), s.getUpdateAll)
	s.handle(http.MethodPost, "/api/v1/security/update-all", Need(domain.PermServersWrite), s.startUpdateAll)
}
