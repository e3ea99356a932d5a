package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/store"
)

// respondGroup answers a group; action (when set) is the audit action of
// the write, with details such as the server or manager concerned.
func (s *Server) respondGroup(c *gin.Context, g domain.Group, err error) {
	s.respondGroupWrite(c, "", g, err, nil)
}

func (s *Server) respondGroupWrite(c *gin.Context, action string, g domain.Group, err error, details map[string]any) {
	if action != "" {
		id := g.ID
		if id == "" {
			id = c.Param("id")
		}
		s.note(c, action, audit.Target("group", id), details)
	}
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
	s.respondGroupWrite(c, "group.create", g, err, changedFields(map[string]any{"name": req.Name, "description": req.Description, "segment": req.Segment}))
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
	s.respondGroupWrite(c, "group.update", g, err, changedFields(map[string]any{"name": req.Name, "description": req.Description, "segment": req.Segment}))
}

func (s *Server) assignGroupServer(c *gin.Context) {
	var req groupServerRequest
	if !bindJSON(c, &req) {
		return
	}
	g, err := s.deps.Services.Fleet.AssignServer(c.Request.Context(), c.Param("id"), req.ServerID)
	s.respondGroupWrite(c, "group.assign_server", g, err, map[string]any{"server_id": req.ServerID})
}

func (s *Server) removeGroupServer(c *gin.Context) {
	var req groupServerRequest
	if !bindJSON(c, &req) {
		return
	}
	g, err := s.deps.Services.Fleet.RemoveServer(c.Request.Context(), c.Param("id"), req.ServerID)
	s.respondGroupWrite(c, "group.remove_server", g, err, map[string]any{"server_id": req.ServerID})
}

func (s *Server) assignGroupManager(c *gin.Context) {
	var req groupManagerRequest
	if !bindJSON(c, &req) {
		return
	}
	g, err := s.deps.Services.Fleet.AssignManager(c.Request.Context(), c.Param("id"), req.UserID)
	s.respondGroupWrite(c, "group.assign_manager", g, err, map[string]any{"user_id": req.UserID})
}

func (s *Server) removeGroupManager(c *gin.Context) {
	var req groupManagerRequest
	if !bindJSON(c, &req) {
		return
	}
	g, err := s.deps.Services.Fleet.RemoveManager(c.Request.Context(), c.Param("id"), req.UserID)
	s.respondGroupWrite(c, "group.remove_manager", g, err, map[string]any{"user_id": req.UserID})
}

func (s *Server) disbandGroup(c *gin.Context) {
	s.note(c, "group.disband", audit.Target("group", c.Param("id")), nil)
	if err := s.deps.Services.Fleet.DisbandGroup(c.Request.Context(), c.Param("id")); err != nil {
		s.respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
