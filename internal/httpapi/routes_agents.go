package httpapi

import (
	"net/http"

	"github.com/lcmproject/lcm/internal/domain"
)

// agentDownloadPrefix is the public, allowlist-exempt download path.
const agentDownloadPrefix = "/api/v1/agent/download/"

// routesAgents: agent servers, their enrollment tokens and the agent
// download (issue 18).
func (s *Server) routesAgents() {
	s.handle(http.MethodGet, agentDownloadPrefix+":arch", Public(), s.downloadAgent)
	s.handle(http.MethodPost, "/api/v1/servers/agent", Need(domain.PermServersWrite), s.createAgentServer)
	s.handle(http.MethodPost, "/api/v1/servers/:id/agent-token", Need(domain.PermServersWrite), s.issueAgentToken)
}
