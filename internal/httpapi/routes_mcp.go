package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/mcp"
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
		// Saved even when this replica cannot bind (503): audit it then too.
		if err == nil || st.URL != "" {
			s.note(c, "settings.mcp_updated", "settings:mcp", map[string]any{"enabled": *req.Enabled, "was_enabled": was})
		}
		if err == nil {
			c.JSON(http.StatusOK, st)
			return
		}
	}
	s.respondError(c, err)
}
