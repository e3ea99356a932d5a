package httpapi

import (
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
)

// Agents (issue 18): agent servers, enrollment tokens, the agent download.

type createAgentServerRequest struct {
	Name     string   `json:"name"`
	GroupIDs []string `json:"group_ids"`
	Segment  string   `json:"segment"`
}

type agentDTO struct {
	AgentID       string     `json:"agent_id"`
	Connected     bool       `json:"connected"`
	Online        bool       `json:"online"`
	LastSeenAt    *time.Time `json:"last_seen_at"`
	Version       string     `json:"version"`
	Hostname      string     `json:"hostname"`
	Gateway       string     `json:"gateway"`
	Capability    int        `json:"capability"`
	TokenIssuedAt *time.Time `json:"token_issued_at"`
}

func toAgentDTO(a *domain.AgentState) *agentDTO {
	if a == nil {
		return nil
	}
	return &agentDTO{AgentID: a.AgentID, Connected: a.Connected, Online: a.Online(time.Now()), LastSeenAt: a.LastSeenAt,
		Version: a.Version, Hostname: a.Hostname, Gateway: a.Gateway, Capability: a.Capability, TokenIssuedAt: a.TokenIssuedAt}
}

type agentTokenDTO struct {
	ServerID   string            `json:"server_id"`
	AgentID    string            `json:"agent_id"`
	Token      string            `json:"token"`
	GatewayURL string            `json:"gateway_url"`
	Install    map[string]string `json:"install"`
	Checksums  map[string]string `json:"checksums"`
	IssuedAt   time.Time         `json:"issued_at"`
}

func (s *Server) createAgentServer(c *gin.Context) {
	var req createAgentServerRequest
	if !bindJSON(c, &req) {
		return
	}
	srv, err := s.deps.Services.Fleet.CreateAgent(c.Request.Context(), principal(c), fleet.CreateAgentRequest{
		Name: req.Name, GroupIDs: req.GroupIDs, Segment: req.Segment})
	s.note(c, "server.create_agent", audit.Target("server", srv.ID), map[string]any{"name": req.Name,
		"group_ids": req.GroupIDs, "segment": req.Segment})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, toServerDTO(srv))
}

func (s *Server) issueAgentToken(c *gin.Context) {
	host := c.Request.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	scheme := "https"
	if c.Request.TLS == nil {
		scheme = "http"
	}
	tok, err := s.deps.Services.Fleet.IssueAgentToken(c.Request.Context(), principal(c), c.Param("id"), host,
		scheme+"://"+c.Request.Host)
	// The audit entry never holds the token, only the agent ids.
	s.note(c, "server.agent_token", audit.Target("server", c.Param("id")), map[string]any{"agent_id": tok.AgentID,
		"replaced_agent_id": tok.Replaced})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, agentTokenDTO{ServerID: tok.ServerID, AgentID: tok.AgentID, Token: tok.Token,
		GatewayURL: tok.GatewayURL, Install: tok.Install, Checksums: tok.Checksums, IssuedAt: tok.IssuedAt})
}

// downloadAgent serves the lcm-agent binary for an architecture, public
// and outside the IP allowlist (servers download it before they are
// known), with its SHA-256 in X-Checksum-Sha256.
func (s *Server) downloadAgent(c *gin.Context) {
	b, err := s.deps.Services.Fleet.AgentBinary(c.Param("arch"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Header("X-Checksum-Sha256", b.SHA256)
	c.Header("Content-Length", strconv.FormatInt(b.Size, 10))
	c.Header("Content-Disposition", `attachment; filename="lcm-agent"`)
	c.File(b.Path)
}
