package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/portal"
	"github.com/lcmproject/lcm/internal/store"
)

// routesPortal is issue 8's portal messages (announcements, spec part 2):
// administrators manage them, every signed-in user reads the visible ones.
func (s *Server) routesPortal() {
	const p = "/api/v1"
	manage := Need(domain.PermAnnouncementsManage)
	s.handle(http.MethodGet, p+"/admin/announcements", manage, s.listAnnouncements)
	s.handle(http.MethodPost, p+"/admin/announcements/create", manage, s.createAnnouncement)
	s.handle(http.MethodGet, p+"/admin/announcements/:announcementId", manage, s.getAnnouncement)
	s.handle(http.MethodPost, p+"/admin/announcements/:announcementId/update", manage, s.updateAnnouncement)
	s.handle(http.MethodPost, p+"/admin/announcements/:announcementId/delete", manage, s.deleteAnnouncement)
	s.handle(http.MethodGet, p+"/announcements/visible", Login(), s.listVisibleAnnouncements)
}

// announcementRequest is the body of create and update. Pointers tell an
// absent member from a zero value: title is required, active defaults to
// true, and startsAt/endsAt accept a date-time, "" or null (unbounded).
type announcementRequest struct {
	Title    *string `json:"title"`
	Body     string  `json:"body"`
	Severity string  `json:"severity"`
	Active   *bool   `json:"active"`
	StartsAt *string `json:"startsAt"`
	EndsAt   *string `json:"endsAt"`
}

// announcementDTO is the spec's portal message; an unbounded side of the
// window is null.
type announcementDTO struct {
	ID        string     `json:"id"`
	Title     string     `json:"title"`
	Body      string     `json:"body"`
	Severity  string     `json:"severity"`
	Active    bool       `json:"active"`
	StartsAt  *time.Time `json:"startsAt"`
	EndsAt    *time.Time `json:"endsAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

func toAnnouncementDTO(a store.Announcement) announcementDTO {
	return announcementDTO{ID: a.ID, Title: a.Title, Body: a.Body, Severity: a.Severity, Active: a.Active,
		StartsAt: a.StartsAt, EndsAt: a.EndsAt, UpdatedAt: a.UpdatedAt}
}

func toAnnouncementDTOs(list []store.Announcement) []announcementDTO {
	out := make([]announcementDTO, len(list))
	for i, a := range list {
		out[i] = toAnnouncementDTO(a)
	}
	return out
}

// input converts the request to the service's input.
func (r announcementRequest) input() (portal.Input, error) {
	in := portal.Input{Body: r.Body, Severity: r.Severity, Active: r.Active == nil || *r.Active}
	if r.Title == nil {
		return in, domain.Invalid(portal.CodeInvalidTitle, "title is required")
	}
	in.Title = *r.Title
	var err error
	if in.StartsAt, err = parseOptionalTime("startsAt", r.StartsAt); err != nil {
		return in, err
	}
	if in.EndsAt, err = parseOptionalTime("endsAt", r.EndsAt); err != nil {
		return in, err
	}
	return in, nil
}

// parseOptionalTime reads an RFC 3339 date-time; nil or "" is no bound.
func parseOptionalTime(field string, v *string) (*time.Time, error) {
	if v == nil || strings.TrimSpace(*v) == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(*v))
	if err != nil {
		return nil, domain.Invalid(portal.CodeInvalidWindow, field+" must be an RFC 3339 date-time such as 2030-01-02T15:04:05Z, or empty")
	}
	return &t, nil
}

func (s *Server) listAnnouncements(c *gin.Context) {
	list, err := s.deps.Services.Portal.List(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toAnnouncementDTOs(list))
}

func (s *Server) createAnnouncement(c *gin.Context) {
	var req announcementRequest
	if !bindJSON(c, &req) {
		return
	}
	in, err := req.input()
	if err != nil {
		s.respondError(c, err)
		return
	}
	a, err := s.deps.Services.Portal.Create(c.Request.Context(), in)
	s.note(c, "announcement.create", audit.Target("announcement", a.ID), map[string]any{"title": in.Title, "severity": a.Severity, "active": in.Active})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, toAnnouncementDTO(a))
}

func (s *Server) getAnnouncement(c *gin.Context) {
	a, err := s.deps.Services.Portal.Get(c.Request.Context(), c.Param("announcementId"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toAnnouncementDTO(a))
}

func (s *Server) updateAnnouncement(c *gin.Context) {
	var req announcementRequest
	if !bindJSON(c, &req) {
		return
	}
	in, err := req.input()
	if err != nil {
		s.respondError(c, err)
		return
	}
	a, err := s.deps.Services.Portal.Update(c.Request.Context(), c.Param("announcementId"), in)
	s.note(c, "announcement.update", audit.Target("announcement", c.Param("announcementId")), map[string]any{"title": in.Title, "severity": a.Severity, "active": in.Active})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toAnnouncementDTO(a))
}

func (s *Server) deleteAnnouncement(c *gin.Context) {
	s.note(c, "announcement.delete", audit.Target("announcement", c.Param("announcementId")), nil)
	if err := s.deps.Services.Portal.Delete(c.Request.Context(), c.Param("announcementId")); err != nil {
		s.respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) listVisibleAnnouncements(c *gin.Context) {
	list, err := s.deps.Services.Portal.Visible(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toAnnouncementDTOs(list))
}
