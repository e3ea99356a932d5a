package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// routesSettings is issue 24's operator settings the UI needed an API for:
// the DNS listener's status. (Outgoing mail is the system mail channel,
// /settings/mail-channel, in routes_alerts.go.)
func (s *Server) routesSettings() {
	s.handle(http.MethodGet, "/api/v1/dns/status", Login(), s.dnsStatus)
}

// dnsStatusDTO is GET /api/v1/dns/status: where to dig and what is served.
type dnsStatusDTO struct {
	Enabled   bool     `json:"enabled"`
	Addr      string   `json:"addr"`
	Zones     []string `json:"zones"`
	AXFRAllow []string `json:"axfrAllow"`
}

func (s *Server) dnsStatus(c *gin.Context) {
	if s.deps.Services.Records == nil {
		c.JSON(http.StatusOK, dnsStatusDTO{Zones: []string{}, AXFRAllow: []string{}})
		return
	}
	st := s.deps.Services.Records.ListenerStatus(c.Request.Context())
	c.JSON(http.StatusOK, dnsStatusDTO{Enabled: st.Enabled, Addr: st.Addr, Zones: st.Zones, AXFRAllow: st.AXFRAllow})
}
