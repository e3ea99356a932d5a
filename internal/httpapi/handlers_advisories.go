package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/advisories"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// earlyWarningDTO is one early-warning finding.
type earlyWarningDTO struct {
	ID               uint64     `json:"id"`
	ServerID         string     `json:"server_id"`
	ServerName       string     `json:"server_name"`
	Advisory         string     `json:"advisory"`
	CVEs             []string   `json:"cves"`
	Package          string     `json:"package"`
	Source           string     `json:"source,omitempty"`
	Installed        string     `json:"installed"`
	Fixed            string     `json:"fixed"`
	Severity         string     `json:"severity"`
	CVSS             float64    `json:"cvss,omitempty"`
	Summary          string     `json:"summary"`
	Ecosystem        string     `json:"ecosystem"`
	AdvisoryModified time.Time  `json:"advisory_modified"`
	CreatedAt        time.Time  `json:"created_at"`
	AcknowledgedAt   *time.Time `json:"acknowledged_at,omitempty"`
	AcknowledgedBy   string     `json:"acknowledged_by,omitempty"`
}

type earlyWarningPageDTO struct {
	Items []earlyWarningDTO `json:"items"`
	Total int64             `json:"total"`
}

func toEarlyWarningDTO(w store.EarlyWarning) earlyWarningDTO {
	cves := w.CVEs
	if cves == nil {
		cves = []string{}
	}
	return earlyWarningDTO{ID: w.ID, ServerID: w.ServerID, ServerName: w.ServerName, Advisory: w.Advisory, CVEs: cves,
		Package: w.Package, Source: w.Source, Installed: w.Installed, Fixed: w.Fixed, Severity: w.Severity, CVSS: w.CVSS,
		Summary: w.Summary, Ecosystem: w.Ecosystem, AdvisoryModified: w.AdvisoryModified, CreatedAt: w.CreatedAt,
		AcknowledgedAt: w.AcknowledgedAt, AcknowledgedBy: w.AcknowledgedBy}
}

// advisoriesSvc answers 503 when the early warning is not wired.
func (s *Server) advisoriesSvc(c *gin.Context) (*advisories.Service, bool) {
	if s.deps.Services.Advisories == nil {
		s.respondError(c, domain.Unavailable("early_warning_unavailable", "the early warning is not available on this server"))
		return nil, false
	}
	return s.deps.Services.Advisories, true
}

func (s *Server) listEarlyWarnings(c *gin.Context) {
	svc, ok := s.advisoriesSvc(c)
	if !ok {
		return
	}
	var f store.EarlyWarningFilter
	rank, known := severityRanks[strings.ToLower(c.Query("severity"))]
	if !known {
		s.respondError(c, domain.Invalid("invalid_severity", "severity must be low, medium, high or critical (the minimum shown)"))
		return
	}
	f.MinSeverity = rank
	switch st := c.Query("state"); st {
	case "", "open", "acknowledged", "all":
		f.State = st
	default:
		s.respondError(c, domain.Invalid("invalid_state", "state must be open, acknowledged or all"))
		return
	}
	f.ServerID = c.Query("server_id")
	if len(f.ServerID) > 64 {
		s.respondError(c, domain.Invalid("invalid_server_id", "server_id too long"))
		return
	}
	if f.Limit, ok = s.queryInt(c, "limit"); !ok {
		return
	}
	if f.Offset, ok = s.queryInt(c, "offset"); !ok {
		return
	}
	if f.Limit == 0 || f.Limit > 1000 {
		f.Limit = min(max(f.Limit, 200), 1000)
	}
	list, total, err := svc.Findings(c.Request.Context(), principal(c), f)
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := earlyWarningPageDTO{Items: make([]earlyWarningDTO, len(list)), Total: total}
	for i, w := range list {
		out.Items[i] = toEarlyWarningDTO(w)
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) getAdvisoryStatus(c *gin.Context) {
	svc, ok := s.advisoriesSvc(c)
	if !ok {
		return
	}
	st, err := svc.Status(c.Request.Context(), principal(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, st)
}

func (s *Server) getVulnCaches(c *gin.Context) {
	svc, ok := s.advisoriesSvc(c)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, gin.H{"caches": svc.Caches(c.Request.Context())})
}

func (s *Server) pollAdvisories(c *gin.Context) {
	svc, ok := s.advisoriesSvc(c)
	if !ok {
		return
	}
	// The poll runs to its end even if the caller goes away.
	sum, err := svc.Poll(context.WithoutCancel(c.Request.Context()), false)
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "advisories.poll", "advisories:poll", map[string]any{"findings_created": sum.Findings, "servers": sum.Servers})
	c.JSON(http.StatusOK, sum)
}

func (s *Server) mirrorAdvisories(c *gin.Context) {
	svc, ok := s.advisoriesSvc(c)
	if !ok {
		return
	}
	if err := svc.StartMirror(c.Request.Context()); err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "advisories.mirror", "advisories:mirror", nil)
	c.JSON(http.StatusAccepted, gin.H{"status": "started"})
}

func (s *Server) acknowledgeEarlyWarning(c *gin.Context) {
	svc, ok := s.advisoriesSvc(c)
	if !ok {
		return
	}
	id, err := strconv.ParseUint(c.Param("id"), 10, 64)
	if err != nil {
		s.respondError(c, domain.NotFound("early-warning finding"))
		return
	}
	w, err := svc.Acknowledge(c.Request.Context(), principal(c), id)
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "advisories.acknowledge", fmt.Sprintf("early_warning:%d", w.ID),
		map[string]any{"server_id": w.ServerID, "advisory": w.Advisory, "package": w.Package})
	c.JSON(http.StatusOK, toEarlyWarningDTO(w))
}

func (s *Server) getAdvisorySettings(c *gin.Context) {
	svc, ok := s.advisoriesSvc(c)
	if !ok {
		return
	}
	set, err := svc.Settings(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, set)
}

func (s *Server) putAdvisorySettings(c *gin.Context) {
	svc, ok := s.advisoriesSvc(c)
	if !ok {
		return
	}
	var in advisories.SettingsInput
	if !bindJSON(c, &in) {
		return
	}
	set, err := svc.UpdateSettings(c.Request.Context(), principal(c), in)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, set)
}
