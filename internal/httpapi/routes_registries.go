package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/registrysvc"
)

// routesRegistries is issue 15's registry settings: the container
// registries LCM holds credentials for in the newer-image check
// (docs/registries.md). Passwords are write-only.
func (s *Server) routesRegistries() {
	s.handle(http.MethodGet, "/api/v1/settings/registries", Need(domain.PermSettingsManage), s.listRegistries)
	s.handle(http.MethodPost, "/api/v1/settings/registries", Need(domain.PermSettingsManage), s.createRegistry)
	s.handle(http.MethodPut, "/api/v1/settings/registries/:id", Need(domain.PermSettingsManage), s.updateRegistry)
	s.handle(http.MethodDelete, "/api/v1/settings/registries/:id", Need(domain.PermSettingsManage), s.deleteRegistry)
	s.handle(http.MethodPost, "/api/v1/settings/registries/:id/test", Need(domain.PermSettingsManage), s.testRegistry)
}

// registryRequest is the body of POST and PUT /settings/registries.
// Absent fields keep the stored value; a password sent as "" is removed.
type registryRequest struct {
	Host      *string `json:"host"`
	Username  *string `json:"username"`
	Password  *string `json:"password"`
	PlainHTTP *bool   `json:"plain_http"`
}

func (r registryRequest) input() registrysvc.Input {
	return registrysvc.Input{Host: r.Host, Username: r.Username, Password: r.Password, PlainHTTP: r.PlainHTTP}
}

// auditDetails names what changed; the password only as set/removed.
func (r registryRequest) auditDetails() map[string]any {
	d := changedFields(map[string]any{"host": r.Host, "username": r.Username, "plain_http": r.PlainHTTP})
	if r.Password != nil {
		d["password"] = map[bool]string{true: "removed", false: "set"}[*r.Password == ""]
	}
	return d
}

// registries answers 503 when the service is not wired (a router built
// for another area's tests).
func (s *Server) registries(c *gin.Context) *registrysvc.Service {
	if s.deps.Services.Registries == nil {
		writeError(c, http.StatusServiceUnavailable, "not_configured", "registry settings are not available")
	}
	return s.deps.Services.Registries
}

func (s *Server) listRegistries(c *gin.Context) {
	svc := s.registries(c)
	if svc == nil {
		return
	}
	list, err := svc.List(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"registries": list})
}

func (s *Server) createRegistry(c *gin.Context) {
	var req registryRequest
	if !bindJSON(c, &req) {
		return
	}
	svc := s.registries(c)
	if svc == nil {
		return
	}
	r, err := svc.Create(c.Request.Context(), req.input())
	s.note(c, "registry.create", audit.Target("registry", r.ID), req.auditDetails())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, r)
}

func (s *Server) updateRegistry(c *gin.Context) {
	var req registryRequest
	if !bindJSON(c, &req) {
		return
	}
	svc := s.registries(c)
	if svc == nil {
		return
	}
	r, err := svc.Update(c.Request.Context(), c.Param("id"), req.input())
	s.note(c, "registry.update", audit.Target("registry", c.Param("id")), req.auditDetails())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

func (s *Server) deleteRegistry(c *gin.Context) {
	svc := s.registries(c)
	if svc == nil {
		return
	}
	r, err := svc.Delete(c.Request.Context(), c.Param("id"))
	s.note(c, "registry.delete", audit.Target("registry", c.Param("id")), map[string]any{"host": r.Host})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) testRegistry(c *gin.Context) {
	svc := s.registries(c)
	if svc == nil {
		return
	}
	res, err := svc.Test(c.Request.Context(), c.Param("id"))
	s.note(c, "registry.test", audit.Target("registry", c.Param("id")), map[string]any{"ok": res.OK, "reason": res.Reason})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}
