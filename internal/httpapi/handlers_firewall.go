package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/firewall"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/store"
)

type firewallRuleRequest struct {
	Port        int    `json:"port"`
	PortEnd     int    `json:"port_end"`
	Proto       string `json:"proto"`
	Source      string `json:"source"`
	AllowlistID string `json:"allowlist_id"`
	Comment     string `json:"comment"`
}

type firewallRequest struct {
	Op    string                `json:"op"`
	Rules []firewallRuleRequest `json:"rules"`
}

func (s *Server) firewallOp(c *gin.Context) {
	var req firewallRequest
	if !bindJSON(c, &req) {
		return
	}
	in := make([]fleet.FirewallRuleInput, 0, len(req.Rules))
	for _, r := range req.Rules {
		in = append(in, fleet.FirewallRuleInput{Rule: firewall.Rule{Port: r.Port, PortEnd: r.PortEnd, Proto: r.Proto, Source: r.Source, Comment: r.Comment},
			AllowlistID: r.AllowlistID})
	}
	job, err := s.deps.Services.Fleet.Firewall(c.Request.Context(), principal(c), c.Param("id"), req.Op, in)
	s.respondJobWith(c, job, err, map[string]any{"op": req.Op, "rules": len(req.Rules)})
}

func (s *Server) scanListeningPorts(c *gin.Context) {
	job, err := s.deps.Services.Fleet.ScanListeningPorts(c.Request.Context(), principal(c), c.Param("id"))
	s.respondJob(c, job, err)
}

// firewallDTO is GET /servers/{id}/firewall: the firewall and listening
// ports as LCM last read them back.
type firewallDTO struct {
	Tool      string            `json:"tool"`
	Active    bool              `json:"active"`
	Rules     json.RawMessage   `json:"rules"`
	CheckedAt *time.Time        `json:"checked_at"`
	Ports     []firewall.Socket `json:"ports"`
	ScannedAt *time.Time        `json:"scanned_at"`
}

func (s *Server) getFirewall(c *gin.Context) {
	st, err := s.deps.Services.Fleet.GetFirewall(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	var ports []firewall.Socket
	_ = json.Unmarshal(st.PortsJSON, &ports)
	var rules []firewall.Rule
	_ = json.Unmarshal(st.RulesJSON, &rules)
	if ports == nil {
		ports = []firewall.Socket{}
	}
	if rules == nil {
		rules = []firewall.Rule{}
	}
	// Exposure follows the rules as they are now, not as they were at scan
	// time.
	var fw *firewall.State
	if st.CheckedAt != nil {
		fw = &firewall.State{Active: st.Active, Rules: rules}
	}
	firewall.Exposure(ports, fw)
	rb, _ := json.Marshal(rules)
	c.JSON(http.StatusOK, firewallDTO{Tool: st.Tool, Active: st.Active, Rules: rb, CheckedAt: st.CheckedAt, Ports: ports, ScannedAt: st.ScannedAt})
}

type ipAllowlistDTO struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Entries     []string  `json:"entries"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func toIPAllowlistDTO(a domain.IPAllowlist) ipAllowlistDTO {
	e := a.Entries
	if e == nil {
		e = []string{}
	}
	return ipAllowlistDTO{ID: a.ID, Name: a.Name, Description: a.Description, Entries: e, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

func (s *Server) listIPAllowlists(c *gin.Context) {
	list, err := s.deps.Services.Fleet.ListIPAllowlists(c.Request.Context())
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]ipAllowlistDTO, 0, len(list))
	for _, a := range list {
		out = append(out, toIPAllowlistDTO(a))
	}
	c.JSON(http.StatusOK, gin.H{"items": out})
}

type ipAllowlistRequest struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Entries     []string `json:"entries"`
}

func (s *Server) createIPAllowlist(c *gin.Context) {
	var req ipAllowlistRequest
	if !bindJSON(c, &req) {
		return
	}
	a, err := s.deps.Services.Fleet.CreateIPAllowlist(c.Request.Context(), domain.IPAllowlist{Name: req.Name, Description: req.Description, Entries: req.Entries})
	s.note(c, "ip_allowlist.create", audit.Target("ip_allowlist", a.ID), map[string]any{"name": a.Name, "entries": len(a.Entries)})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, toIPAllowlistDTO(a))
}

func (s *Server) deleteIPAllowlist(c *gin.Context) {
	a, err := s.deps.Services.Fleet.DeleteIPAllowlist(c.Request.Context(), c.Param("id"))
	s.note(c, "ip_allowlist.delete", audit.Target("ip_allowlist", c.Param("id")), map[string]any{"name": a.Name})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

type hardeningOverviewDTO struct {
	store.HardeningCounts
	Groups []store.HardeningGroup `json:"groups"`
}

func (s *Server) hardeningOverview(c *gin.Context) {
	total, groups, err := s.deps.Services.Fleet.HardeningOverview(c.Request.Context(), principal(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	if groups == nil {
		groups = []store.HardeningGroup{}
	}
	c.JSON(http.StatusOK, hardeningOverviewDTO{HardeningCounts: total, Groups: groups})
}
