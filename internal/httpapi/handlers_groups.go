package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

func (s *Server) respondGroup(c *gin.Context, g domain.Group, err error) {
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toGroupDTO(g))
}

func (s *Server) listGroups(c *gin.Context) {
	list, err := s.deps.Services.Fleet.ListGroups(c.Request.Context(), principal(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]groupDTO, len(list))
	for i, g := range list {
		out[i] = toGroupDTO(g)
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) createGroup(c *gin.Context) {
	var req groupRequest
	if !bindJSON(c, &req) {
		return
	}
	g := domain.Group{}
	if req.Name != nil {
		g.Name = *req.Name
	}
	if req.Description != nil {
		g.Description = *req.Description
	}
	if req.Segment != nil {
		g.Segment = *req.Segment
	}
	g, err := s.deps.Services.Fleet.CreateGroup(c.Request.Context(), g)
	s.respondGroup(c, g, err)
}

func (s *Server) getGroup(c *gin.Context) {
	g, err := s.deps.Services.Fleet.GetGroup(c.Request.Context(), principal(c), c.Param("id"))
	s.respondGroup(c, g, err)
}

func (s *Server) updateGroup(c *gin.Context) {
	var req groupRequest
	if !bindJSON(c, &req) {
		return
	}
	g, err := s.deps.Services.Fleet.UpdateGroup(c.Request.Context(), c.Param("id"),
		store.GroupSettings{Name: req.Name, Description: req.Description, Segment: req.Segment})
	s.respondGroup(c, g, err)
}

func (s *Server) assignGroupServer(c *gin.Context) {
	var req groupServerRequest
	if !bindJSON(c, &req) {
		return
	}
	g, err := s.deps.Services.Fleet.AssignServer(c.Request.Context(), c.Param("id"), req.ServerID)
	s.respondGroup(c, g, err)
}

func (s *Server) removeGroupServer(c *gin.Context) {
	var req groupServerRequest
	if !bindJSON(c, &req) {
		return
	}
	g, err := s.deps.Services.Fleet.RemoveServer(c.Request.Context(), c.Param("id"), req.ServerID)
	s.respondGroup(c, g, err)
}

func (s *Server) assignGroupManager(c *gin.Context) {
	var req groupManagerRequest
	if !bindJSON(c, &req) {
		return
	}
	g, err := s.deps.Services.Fleet.AssignManager(c.Request.Context(), c.Param("id"), req.UserID)
	s.respondGroup(c, g, err)
}

func (s *Server) removeGroupManager(c *gin.Context) {
	var req groupManagerRequest
	if !bindJSON(c, &req) {
		return
	}
	g, err := s.deps.Services.Fleet.RemoveManager(c.Request.Context(), c.Param("id"), req.UserID)
	s.respondGroup(c, g, err)
}

func (s *Server) disbandGroup(c *gin.Context) {
	if err := s.deps.Services.Fleet.DisbandGroup(c.Request.Context(), c.Param("id")); err != nil {
		s.respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
