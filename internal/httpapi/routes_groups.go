package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesGroups: server groups and their managers (issue 4).
func (s *Server) routesGroups() {
	s.handle(http.MethodGet, "/api/v1/server-groups", Need(domain.PermGroupsRead), s.listGroups)
	s.handle(http.MethodPost, "/api/v1/server-groups/create", Need(domain.PermGroupsWrite), s.createGroup)
	s.handle(http.MethodGet, "/api/v1/server-groups/:id", Need(domain.PermGroupsRead), s.getGroup)
	s.handle(http.MethodPatch, "/api/v1/server-groups/:id/settings", Need(domain.PermGroupsWrite), s.updateGroup)
	s.handle(http.MethodPost, "/api/v1/server-groups/:id/assign-server", Need(domain.PermGroupsWrite), s.assignGroupServer)
	s.handle(http.MethodPost, "/api/v1/server-groups/:id/remove-server", Need(domain.PermGroupsWrite), s.removeGroupServer)
	s.handle(http.MethodPost, "/api/v1/server-groups/:id/assign-manager", Need(domain.PermGroupsWrite), s.assignGroupManager)
	s.handle(http.MethodPost, "/api/v1/server-groups/:id/remove-manager", Need(domain.PermGroupsWrite), s.removeGroupManager)
	s.handle(http.MethodPost, "/api/v1/server-groups/:id/disband", Need(domain.PermGroupsWrite), s.disbandGroup)
}
