package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/updates"
)

// routesUpdates: is a newer LCM released on the configured channel
// (issue 21, docs/updates.md)? update-info is the stored result (any
// signed-in user, as the reference product; the UI shows the notice to
// admins), update-check asks the release feed now (settings:manage,
// audited as system.update_checked).
func (s *Server) routesUpdates() {
	s.handle(http.MethodGet, "/api/v1/system/update-info", Login(), s.getUpdateInfo)
	s.handle(http.MethodPost, "/api/v1/system/update-check", Need(domain.PermSettingsManage), s.postUpdateCheck)
	// The reference product's self-update: LCM installs nothing itself;
	// GET says so and how to install the update, POST answers 409
	// self_update_unsupported (docs/updates.md).
	s.handle(http.MethodGet, "/api/v1/system/self-update", Need(domain.PermSettingsManage), s.getSelfUpdate)
	s.handle(http.MethodPost, "/api/v1/system/self-update", Need(domain.PermSettingsManage), s.postSelfUpdate)
}

func (s *Server) getSelfUpdate(c *gin.Context) {
	u, err := s.updates()
	if err == nil {
		var su updates.SelfUpdate
		if su, err = u.SelfUpdate(c.Request.Context()); err == nil {
			c.JSON(http.StatusOK, su)
			return
		}
	}
	s.respondError(c, err)
}

func (s *Server) postSelfUpdate(c *gin.Context) {
	u, err := s.updates()
	if err == nil {
		err = u.StartSelfUpdate(c.Request.Context())
	}
	s.respondError(c, err)
}

func (s *Server) updates() (*updates.Service, error) {
	if u := s.deps.Services.Updates; u != nil {
		return u, nil
	}
	return nil, domain.Unavailable("updates_unavailable", "update checks are not available in this process")
}

func (s *Server) getUpdateInfo(c *gin.Context) {
	u, err := s.updates()
	if err == nil {
		var in updates.Info
		if in, err = u.Info(c.Request.Context()); err == nil {
			c.JSON(http.StatusOK, in)
			return
		}
	}
	s.respondError(c, err)
}

func (s *Server) postUpdateCheck(c *gin.Context) {
	u, err := s.updates()
	if err == nil {
		var r updates.Result
		r, err = u.Check(c.Request.Context())
		if err == nil {
			latest := ""
			if r.Latest != nil {
				latest = r.Latest.Version
			}
			s.note(c, "system.update_checked", "system:update", map[string]any{
				"channel": r.Channel, "current": r.Current, "latest": latest, "update_available": r.UpdateAvailable})
			in, ierr := u.Info(c.Request.Context())
			if ierr == nil {
				c.JSON(http.StatusOK, in)
				return
			}
			err = ierr
		}
	}
	s.respondError(c, err)
}
