package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/domain"
)

type hardenSSHRequest struct {
	// FixMainConfig allows LCM's marked, reversible edit of the main
	// sshd_config (missing Include, lines that beat the drop-in).
	FixMainConfig bool `json:"fix_main_config"`
}

type rootLoginRequest struct {
	Enabled *bool `json:"enabled"`
}

func (s *Server) hardenSSH(c *gin.Context) {
	var req hardenSSHRequest
	if c.Request.ContentLength != 0 && !bindJSON(c, &req) {
		return
	}
	job, err := s.deps.Services.Fleet.HardenSSH(c.Request.Context(), principal(c), c.Param("id"), req.FixMainConfig)
	s.respondJobWith(c, job, err, map[string]any{"fix_main_config": req.FixMainConfig})
}

func (s *Server) unhardenSSH(c *gin.Context) {
	job, err := s.deps.Services.Fleet.UnhardenSSH(c.Request.Context(), principal(c), c.Param("id"))
	s.respondJob(c, job, err)
}

func (s *Server) setSSHRootLogin(c *gin.Context) {
	var req rootLoginRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Enabled == nil {
		s.respondError(c, domain.Invalid("enabled_required", "enabled (true or false) is required"))
		return
	}
	job, err := s.deps.Services.Fleet.SetSSHRootLogin(c.Request.Context(), principal(c), c.Param("id"), *req.Enabled)
	s.respondJobWith(c, job, err, map[string]any{"enabled": *req.Enabled})
}

type restrictSudoRequest struct {
	Mode string `json:"mode"`
}

func (s *Server) restrictSudo(c *gin.Context) {
	var req restrictSudoRequest
	if !bindJSON(c, &req) {
		return
	}
	job, err := s.deps.Services.Fleet.RestrictSudo(c.Request.Context(), principal(c), c.Param("id"), req.Mode)
	s.respondJobWith(c, job, err, map[string]any{"mode": req.Mode})
}

type sshPortRequest struct {
	Port int `json:"port"`
}

func (s *Server) setSSHPort(c *gin.Context) {
	var req sshPortRequest
	if !bindJSON(c, &req) {
		return
	}
	job, err := s.deps.Services.Fleet.SetSSHPort(c.Request.Context(), principal(c), c.Param("id"), req.Port)
	s.respondJobWith(c, job, err, map[string]any{"port": req.Port})
}
