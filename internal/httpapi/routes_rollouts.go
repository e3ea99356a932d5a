package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesRollouts: staged rollouts (issue 20) and the four-eyes approvals
// inbox. Starting and controlling a rollout needs servers:write (the same
// as a bulk run); reading needs jobs:read. Deciding an approval needs the
// permission its kind names (servers:write for rollouts), checked by the
// approvals service on top of the route's.
func (s *Server) routesRollouts() {
	w := Need(domain.PermServersWrite)
	s.handle(http.MethodPost, "/api/v1/rollouts", w, s.createRollout)
	s.handle(http.MethodGet, "/api/v1/rollouts", Need(domain.PermJobsRead), s.listRollouts)
	s.handle(http.MethodGet, "/api/v1/rollouts/actions", Need(domain.PermJobsRead), s.listRolloutActions)
	s.handle(http.MethodGet, "/api/v1/rollouts/:id", Need(domain.PermJobsRead), s.getRollout)
	s.handle(http.MethodPost, "/api/v1/rollouts/:id/pause", w, s.pauseRollout)
	s.handle(http.MethodPost, "/api/v1/rollouts/:id/resume", w, s.resumeRollout)
	s.handle(http.MethodPost, "/api/v1/rollouts/:id/abort", w, s.abortRollout)
	s.handle(http.MethodGet, "/api/v1/approvals", Need(domain.PermJobsRead), s.listApprovals)
	s.handle(http.MethodPost, "/api/v1/approvals/:id/approve", w, s.approveApproval)
	s.handle(http.MethodPost, "/api/v1/approvals/:id/reject", w, s.rejectApproval)
	// The approval policy: settings:manage (administrators), audited.
	s.handle(http.MethodGet, "/api/v1/settings/rollouts", Need(domain.PermSettingsManage), s.getRolloutSettings)
	s.handle(http.MethodPut, "/api/v1/settings/rollouts", Need(domain.PermSettingsManage), s.putRolloutSettings)
}
