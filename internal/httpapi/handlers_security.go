package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/sbom"
	"github.com/lcmproject/lcm/internal/store"
)

// vulnDTO is one finding.
type vulnDTO struct {
	ID             uint64     `json:"id"`
	ServerID       string     `json:"server_id"`
	ServerName     string     `json:"server_name"`
	Advisory       string     `json:"advisory"`
	CVEs           []string   `json:"cves"`
	Package        string     `json:"package"`
	Container      string     `json:"container,omitempty"` // "docker/web": in that container, not on the host
	Source         string     `json:"source,omitempty"`
	Installed      string     `json:"installed"`
	Fixed          string     `json:"fixed"`
	Severity       string     `json:"severity"`
	CVSS           float64    `json:"cvss,omitempty"`
	Summary        string     `json:"summary"`
	Ecosystem      string     `json:"ecosystem"`
	State          string     `json:"state"`
	FirstSeenAt    time.Time  `json:"first_seen_at"`
	LastSeenAt     time.Time  `json:"last_seen_at"`
	AcknowledgedAt *time.Time `json:"acknowledged_at,omitempty"`
	AcknowledgedBy string     `json:"acknowledged_by,omitempty"`
	FixedAt        *time.Time `json:"fixed_at,omitempty"`
}

type vulnPageDTO struct {
	Items []vulnDTO `json:"items"`
	Total int64     `json:"total"`
}

type vulnerablePackageDTO struct {
	Package    string   `json:"package"`
	Container  string   `json:"container,omitempty"` // in containers of that name, not on the hosts
	Installed  string   `json:"installed"`
	Fixed      string   `json:"fixed"`
	Severity   string   `json:"severity"`
	Advisories []string `json:"advisories"`
	CVEs       []string `json:"cves"`
	Servers    int      `json:"servers"`
	ServerIDs  []string `json:"server_ids"`
}

func toVulnDTO(v store.VulnFinding) vulnDTO {
	cves := v.CVEs
	if cves == nil {
		cves = []string{}
	}
	return vulnDTO{ID: v.ID, ServerID: v.ServerID, ServerName: v.ServerName, Advisory: v.Advisory, CVEs: cves, Package: v.Package,
		Container: v.Container, Source: v.Source, Installed: v.Installed, Fixed: v.Fixed, Severity: v.Severity, CVSS: v.CVSS, Summary: v.Summary,
		Ecosystem: v.Ecosystem, State: v.State, FirstSeenAt: v.FirstSeenAt, LastSeenAt: v.LastSeenAt,
		AcknowledgedAt: v.AcknowledgedAt, AcknowledgedBy: v.AcknowledgedBy, FixedAt: v.FixedAt}
}

var severityRanks = map[string]int{"": 0, "unknown": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}

// vulnFilter reads severity, package, cve, fix_available, state, limit and
// offset; ok is false after a 400 was sent.
func (s *Server) vulnFilter(c *gin.Context) (store.VulnFilter, bool) {
	var f store.VulnFilter
	rank, ok := severityRanks[strings.ToLower(c.Query("severity"))]
	if !ok {
		s.respondError(c, domain.Invalid("invalid_severity", "severity must be low, medium, high or critical (the minimum shown)"))
		return f, false
	}
	f.MinSeverity, f.Package, f.CVE = rank, c.Query("package"), c.Query("cve")
	if len(f.Package) > 255 || len(f.CVE) > 128 {
		s.respondError(c, domain.Invalid("invalid_filter", "package or cve filter too long"))
		return f, false
	}
	switch c.Query("fix_available") {
	case "", "false":
	case "true":
		f.FixOnly = true
	default:
		s.respondError(c, domain.Invalid("invalid_fix_available", "fix_available must be true or false"))
		return f, false
	}
	switch st := c.Query("state"); st {
	case "", "open":
		f.States = []string{store.VulnNew, store.VulnAcknowledged}
	case "all":
	case store.VulnNew, store.VulnAcknowledged, store.VulnFixed:
		f.States = []string{st}
	default:
		s.respondError(c, domain.Invalid("invalid_state", "state must be open, all, new, acknowledged or fixed"))
		return f, false
	}
	if f.Limit, ok = s.queryInt(c, "limit"); !ok {
		return f, false
	}
	if f.Offset, ok = s.queryInt(c, "offset"); !ok {
		return f, false
	}
	if f.Limit == 0 || f.Limit > 1000 {
		f.Limit = min(max(f.Limit, 200), 1000)
	}
	return f, true
}

func (s *Server) listVulns(c *gin.Context, serverID string) {
	f, ok := s.vulnFilter(c)
	if !ok {
		return
	}
	f.ServerID = serverID
	list, total, err := s.deps.Services.Vulns.Findings(c.Request.Context(), principal(c), f)
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := vulnPageDTO{Items: make([]vulnDTO, len(list)), Total: total}
	for i, v := range list {
		out.Items[i] = toVulnDTO(v)
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) listServerVulns(c *gin.Context) { s.listVulns(c, c.Param("id")) }

func (s *Server) listFleetVulns(c *gin.Context) { s.listVulns(c, "") }

func (s *Server) scanServerVulns(c *gin.Context) {
	sum, err := s.deps.Services.Vulns.ScanServer(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "vulnerabilities.scan", "server:"+c.Param("id"), map[string]any{"findings": sum.Findings})
	c.JSON(http.StatusOK, sum)
}

func (s *Server) scanFleetVulns(c *gin.Context) {
	if err := s.deps.Services.Vulns.StartFleetScan(c.Request.Context(), principal(c)); err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "vulnerabilities.scan_fleet", "fleet", nil)
	c.JSON(http.StatusAccepted, gin.H{"status": "started"})
}

func (s *Server) acknowledgeVuln(c *gin.Context) {
	id, err := strconv.ParseUint(c.Param("fid"), 10, 64)
	if err != nil {
		s.respondError(c, domain.NotFound("vulnerability finding"))
		return
	}
	v, err := s.deps.Services.Vulns.Acknowledge(c.Request.Context(), principal(c), id)
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "vulnerabilities.acknowledge", fmt.Sprintf("vulnerability:%d", v.ID), map[string]any{"server_id": v.ServerID, "advisory": v.Advisory, "package": v.Package})
	c.JSON(http.StatusOK, toVulnDTO(v))
}

func (s *Server) getServerSBOM(c *gin.Context) {
	bom, err := s.deps.Services.Vulns.SBOM(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	b, err := sbom.Marshal(bom)
	if err != nil {
		s.respondError(c, err)
		return
	}
	name := "sbom.cdx.json"
	if bom.Metadata != nil && bom.Metadata.Component != nil {
		name = safeFileName(bom.Metadata.Component.Name) + ".cdx.json"
	}
	c.Header("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	c.Data(http.StatusOK, "application/vnd.cyclonedx+json; version=1.6", b)
}

func (s *Server) getGroupSBOM(c *gin.Context) {
	bom, err := s.deps.Services.Vulns.GroupSBOM(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	b, err := sbom.Marshal(bom)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Header("Content-Disposition", fmt.Sprintf("attachment; filename=%q", safeFileName(bom.Metadata.Component.Name)+".cdx.json"))
	c.Data(http.StatusOK, "application/vnd.cyclonedx+json; version=1.6", b)
}

// safeFileName keeps letters, digits, dot, dash and underscore.
func safeFileName(s string) string {
	out := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
	if out == "" {
		return "server"
	}
	return out
}

func (s *Server) getScanner(c *gin.Context) {
	v, err := s.deps.Services.Vulns.Status(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// maxVulnDB bounds an uploaded export (Debian's all.zip is ~100 MB).
const maxVulnDB = 1 << 30

func (s *Server) updateVulnDB(c *gin.Context) {
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxVulnDB)
	fh, err := c.FormFile("file")
	if err != nil {
		s.respondError(c, domain.Invalid("invalid_upload", "send multipart/form-data with the OSV export in \"file\" (all.zip) and its \"ecosystem\" (Debian, Ubuntu, Alpine, …)"))
		return
	}
	f, err := fh.Open()
	if err != nil {
		s.respondError(c, domain.Invalid("invalid_upload", "the upload could not be read"))
		return
	}
	defer f.Close()
	eco := c.PostForm("ecosystem")
	n, err := s.deps.Services.Vulns.UploadDB(c.Request.Context(), eco, f, fh.Size)
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "vulnerabilities.update_db", "vulndb:"+eco, map[string]any{"records": n, "bytes": fh.Size})
	c.JSON(http.StatusOK, gin.H{"status": "imported", "ecosystem": eco, "records": n})
}

func (s *Server) listVulnerablePackages(c *gin.Context) {
	f, ok := s.vulnFilter(c)
	if !ok {
		return
	}
	list, err := s.deps.Services.Vulns.VulnerablePackages(c.Request.Context(), principal(c), f)
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]vulnerablePackageDTO, len(list))
	for i, p := range list {
		out[i] = vulnerablePackageDTO{Package: p.Package, Container: p.Container, Installed: p.Installed, Fixed: p.Fixed, Severity: p.Severity,
			Advisories: p.Advisories, CVEs: p.CVEs, Servers: len(p.ServerIDs), ServerIDs: p.ServerIDs}
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) getUpdateAffected(c *gin.Context) {
	r, err := s.deps.Services.Vulns.UpdateAllStatus(c.Request.Context(), principal(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	if r == nil {
		c.JSON(http.StatusOK, gin.H{"running": false, "items": []any{}})
		return
	}
	c.JSON(http.StatusOK, r)
}

func (s *Server) postUpdateAffected(c *gin.Context) {
	r, err := s.deps.Services.Vulns.UpdateAll(c.Request.Context(), principal(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	jobs := 0
	for _, it := range r.Items {
		if it.JobID != "" {
			jobs++
		}
	}
	s.note(c, "vulnerabilities.update_all", "security:update-affected", map[string]any{"servers": len(r.Items), "jobs": jobs})
	c.JSON(http.StatusAccepted, r)
}
