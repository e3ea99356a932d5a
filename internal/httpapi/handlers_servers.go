package httpapi

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/fleet"
	"github.com/lcmproject/lcm/internal/jobs"
	"github.com/lcmproject/lcm/internal/store"
)

// respondJob answers an endpoint that starts a job: 202 with
// {status: "started", job_id, job_name}, 409 {status: "blocked", …} for a
// busy server, otherwise the usual error mapping.
func (s *Server) respondJob(c *gin.Context, job domain.Job, err error) {
	s.respondJobWith(c, job, err, nil)
}

// respondJobWith is respondJob with extra audit details (package names).
func (s *Server) respondJobWith(c *gin.Context, job domain.Job, err error, extra map[string]any) {
	s.noteJob(c, job, extra)
	if err != nil {
		s.respondJobError(c, err)
		return
	}
	c.JSON(http.StatusAccepted, toJobStarted(job))
}

// noteJob audits a job submission: job.submit on the server with the job
// id and kind (plus extra details such as package names).
func (s *Server) noteJob(c *gin.Context, job domain.Job, extra map[string]any) {
	d := map[string]any{"job_id": job.ID, "kind": string(job.Kind)}
	for k, v := range extra {
		d[k] = v
	}
	s.note(c, "job.submit", audit.Target("server", job.ServerID), d)
}

func (s *Server) respondJobError(c *gin.Context, err error) {
	var busy *jobs.BusyError
	if errors.As(err, &busy) {
		c.AbortWithStatusJSON(http.StatusConflict, blockedDTO{Status: string(domain.JobBlocked), Error: busy.Error(),
			Code: "server_busy", JobID: busy.JobID})
		return
	}
	var de *domain.Error
	if errors.As(err, &de) && de.Code == "restricted_mode" {
		// Like a busy server, a blocked submit: nothing was started.
		c.AbortWithStatusJSON(http.StatusConflict, blockedDTO{Status: string(domain.JobBlocked), Error: de.Message, Code: de.Code})
		return
	}
	s.respondError(c, err)
}

func (s *Server) listServers(c *gin.Context) {
	f := store.ServerFilter{Q: c.Query("q"), GroupID: c.Query("group_id"), Status: domain.ServerStatus(c.Query("status"))}
	if f == (store.ServerFilter{}) && fleet.SeesWholeFleet(principal(c)) {
		s.listWholeFleet(c)
		return
	}
	list, err := s.deps.Services.Fleet.List(c.Request.Context(), principal(c), f)
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := make([]serverDTO, len(list))
	for i, srv := range list {
		out[i] = toServerDTO(srv)
	}
	if !s.addStatus(c, out) {
		return
	}
	c.JSON(http.StatusOK, out)
}

// addStatus fills the traffic light and its insights from package status
// (one batched read for the whole page); false after an error response.
func (s *Server) addStatus(c *gin.Context, out []serverDTO) bool {
	if err := s.fillStatus(c, out); err != nil {
		s.respondError(c, err)
		return false
	}
	return true
}

func (s *Server) fillStatus(c *gin.Context, out []serverDTO) error {
	if s.deps.Services.Status == nil || len(out) == 0 {
		return nil
	}
	ids := make([]string, len(out))
	for i := range out {
		ids[i] = out[i].ID
	}
	st, err := s.deps.Services.Status.Of(c.Request.Context(), principal(c), ids)
	if err != nil {
		return err
	}
	for i := range out {
		r, ok := st[out[i].ID]
		if !ok {
			continue
		}
		out[i].Status = string(r.Status)
		for _, in := range r.Insights {
			out[i].Insights = append(out[i].Insights, insightDTO{Level: string(in.Level), Code: in.Code, Text: in.Text})
		}
	}
	return nil
}

func (s *Server) probeServer(c *gin.Context) {
	var req probeRequest
	if !bindJSON(c, &req) {
		return
	}
	res, err := s.deps.Services.Fleet.Probe(c.Request.Context(), req.Host, req.Port)
	s.note(c, "server.probe", audit.Target("host", req.Host), map[string]any{"port": req.Port})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toProbeDTO(res))
}

func (s *Server) joinServer(c *gin.Context) {
	var req joinRequest
	if !bindJSON(c, &req) {
		return
	}
	srv, job, err := s.deps.Services.Fleet.Join(c.Request.Context(), principal(c), fleet.JoinRequest{
		Name: req.Name, Host: req.Host, Port: req.Port, Username: req.Username, Auth: req.Auth,
		PrivateKey: req.PrivateKey, Password: req.Password, HostKey: req.HostKey, GroupIDs: req.GroupIDs, Segment: req.Segment})
	s.note(c, "server.join", audit.Target("server", srv.ID), map[string]any{"job_id": job.ID, "kind": string(job.Kind),
		"name": srv.Name, "host": srv.Host, "port": srv.Port, "auth": req.Auth, "group_ids": req.GroupIDs})
	if err != nil {
		s.respondJobError(c, err)
		return
	}
	c.JSON(http.StatusAccepted, joinDTO{jobStartedDTO: toJobStarted(job), Server: toServerDTO(srv)})
}

func (s *Server) getServer(c *gin.Context) {
	srv, err := s.deps.Services.Fleet.Get(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := []serverDTO{toServerDTO(srv)}
	if !s.addStatus(c, out) {
		return
	}
	c.JSON(http.StatusOK, out[0])
}

func (s *Server) updateServerSettings(c *gin.Context) {
	var req serverSettingsRequest
	if !bindJSON(c, &req) {
		return
	}
	srv, err := s.deps.Services.Fleet.UpdateSettings(c.Request.Context(), principal(c), c.Param("id"),
		store.ServerSettings{Name: req.Name, Port: req.Port, Segment: req.Segment})
	s.note(c, "server.settings", audit.Target("server", c.Param("id")), changedFields(map[string]any{
		"name": req.Name, "port": req.Port, "segment": req.Segment}))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toServerDTO(srv))
}

func (s *Server) reconnectServer(c *gin.Context) {
	job, err := s.deps.Services.Fleet.Reconnect(c.Request.Context(), principal(c), c.Param("id"))
	s.respondJob(c, job, err)
}

func (s *Server) checkServerConnectivity(c *gin.Context) {
	job, err := s.deps.Services.Fleet.CheckConnectivity(c.Request.Context(), principal(c), c.Param("id"))
	s.respondJob(c, job, err)
}

func (s *Server) rotateServerKey(c *gin.Context) {
	job, err := s.deps.Services.Fleet.RotateKey(c.Request.Context(), principal(c), c.Param("id"))
	s.respondJob(c, job, err)
}

func (s *Server) upgradeSecurityPackages(c *gin.Context) {
	job, err := s.deps.Services.Fleet.UpgradeSecurity(c.Request.Context(), principal(c), c.Param("id"))
	s.respondJob(c, job, err)
}

// decommissionServer: a joined server is cleaned up by a job (202 with
// the job, as every server-changing endpoint answers); one that never
// joined is deleted at once (204).
func (s *Server) decommissionServer(c *gin.Context) {
	job, err := s.deps.Services.Fleet.Decommission(c.Request.Context(), principal(c), c.Param("id"))
	if err == nil && job.ID == "" {
		s.note(c, "server.decommission", audit.Target("server", c.Param("id")), nil)
		c.Status(http.StatusNoContent)
		return
	}
	s.respondJob(c, job, err)
}

func (s *Server) getServerActiveJob(c *gin.Context) {
	job, err := s.deps.Services.Jobs.ActiveJob(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, toJobDTO(job))
}
