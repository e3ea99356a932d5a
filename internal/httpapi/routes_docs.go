package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/helpdocs"
)

// routesDocs: the operator docs embedded from docs/ (issue 21), public so
// the help reaches also who cannot sign in yet.
func (s *Server) routesDocs() {
	s.handle(http.MethodGet, "/api/v1/docs", Public(), s.listDocs)
	s.handle(http.MethodGet, "/api/v1/docs/:slug", Public(), s.getDoc)
}

func (s *Server) listDocs(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"items": helpdocs.Embedded.List()})
}

func (s *Server) getDoc(c *gin.Context) {
	p, err := helpdocs.Embedded.Get(c.Param("slug"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}
