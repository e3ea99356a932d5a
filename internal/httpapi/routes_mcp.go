package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/mcp"
	"github.com/lcmproject/lcm/internal/store"
)

// routesMCP: the MCP listener's runtime switch (issue 19). The listener
// itself is not served here: it has its own port (mcp_host:mcp_port).
func (s *Server) routesMCP() {
	s.handle(http.MethodGet, "/api/v1/settings/mcp", Need(domain.PermSettingsManage), s.getMCPSettings)
	s.handle(http.MethodPut, "/api/v1/settings/mcp", Need(domain.PermSettingsManage), s.putMCPSettings)
}

func (s *Server) mcpListener() (*mcp.Listener, error) {
	if l := s.deps.Services.MCP; l != nil {
		return l, nil
	}
	return nil, domain.Unavailable("mcp_unavailable", "the MCP listener is not part of this process")
}

func (s *Server) getMCPSettings(c *gin.Context) {
	l, err := s.mcpListener()
	if err == nil {
		var st mcp.State
		if st, err = l.State(c.Request.Context()); err == nil {
			c.JSON(http.StatusOK, st)
			return
		}
	}
	s.respondError(c, err)
}

type mcpSettingsRequest struct {
	Enabled *bool `json:"enabled"`
}

func (s *Server) putMCPSettings(c *gin.Context) {
	var req mcpSettingsRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Enabled == nil {
		s.respondError(c, domain.Invalid("invalid_mcp_settings", `send {"enabled": true} or {"enabled": false}`))
		return
	}
	l, err := s.mcpListener()
	if err == nil {
		var (
			was bool
			st  mcp.State
		)
		was, st, err = l.Set(c.Request.Context(), *req.Enabled)
		details := map[string]any{"enabled": *req.Enabled, "was_enabled": was}
		switch {
		case err == nil:
			s.note(c, "settings.mcp_updated", "settings:mcp", details)
			c.JSON(http.StatusOK, st)
			return
		case st.URL != "" && s.deps.Store != nil:
			// Saved although this replica cannot bind (503): the change is
			// real, so its entry is written now (a note would be dropped
			// with the error status).
			details["error"] = st.Error
			audit.Append(c.Request.Context(), s.deps.Store, s.deps.Log, principal(c),
				store.AuditEntry{Action: "settings.mcp_updated", Target: "settings:mcp", Details: details})
		}
	}
	s.respondError(c, err)
}
