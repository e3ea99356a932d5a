package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// routesJobs: job history, console output (polling and live) and abort
// (issue 4).
func (s *Server) routesJobs() {
	s.handle(http.MethodGet, "/api/v1/jobs/history", Need(domain.PermJobsRead), s.listJobHistory)
	s.handle(http.MethodGet, "/api/v1/jobs/filter-options", Need(domain.PermJobsRead), s.getJobFilterOptions)
	s.handle(http.MethodGet, "/api/v1/jobs/:id", Need(domain.PermJobsRead), s.getJob)
	s.handle(http.MethodGet, "/api/v1/jobs/:id/ssh-output", Need(domain.PermJobsRead), s.getJobSSHOutput)
	s.handle(http.MethodGet, "/api/v1/jobs/:id/stream", Need(domain.PermJobsRead), s.streamJob)
	s.handle(http.MethodPost, "/api/v1/jobs/:id/abort", Need(domain.PermServersWrite), s.abortJob)
}
