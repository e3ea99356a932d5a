package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/containers"
	"github.com/lcmproject/lcm/internal/containersvc"
	"github.com/lcmproject/lcm/internal/domain"
)

// ctr returns the containers service, or answers 503 not_configured.
func (s *Server) ctr(c *gin.Context) *containersvc.Service {
	svc := s.deps.Services.Containers
	if svc == nil {
		s.respondError(c, domain.Unavailable("not_configured", "container management is not configured"))
	}
	return svc
}

func (s *Server) getServerDocker(c *gin.Context) {
	svc := s.ctr(c)
	if svc == nil {
		return
	}
	v, err := svc.Server(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// checkDockerUpdates runs the newer-image check for the images the
// server's containers use now (no job: the registries are asked from the
// control plane) and answers the server's view with the new states.
func (s *Server) checkDockerUpdates(c *gin.Context) {
	svc := s.ctr(c)
	if svc == nil {
		return
	}
	ctx, p, id := c.Request.Context(), principal(c), c.Param("id")
	if err := svc.CheckUpdates(ctx, p, id); err != nil {
		s.respondError(c, err)
		return
	}
	v, err := svc.Server(ctx, p, id)
	if err != nil {
		s.respondError(c, err)
		return
	}
	s.note(c, "container.check_updates", audit.Target("server", id), map[string]any{"images": len(v.Inventory.InUseRefs())})
	c.JSON(http.StatusOK, v)
}

// submitContainer submits a container job and answers 202 with the job.
func (s *Server) submitContainer(c *gin.Context, p actions.ContainerParams, extra map[string]any) {
	svc := s.ctr(c)
	if svc == nil {
		return
	}
	j, err := svc.Submit(c.Request.Context(), principal(c), c.Param("id"), p)
	if extra == nil {
		extra = map[string]any{}
	}
	extra["op"] = p.Op
	s.respondJobWith(c, j, err, extra)
}

func (s *Server) refreshServerDocker(c *gin.Context) {
	s.submitContainer(c, actions.ContainerParams{Op: actions.ContainerRefresh}, nil)
}

type engineRequest struct {
	Engine containers.Engine `json:"engine"`
}

func (s *Server) pullAllImages(c *gin.Context) {
	var req engineRequest
	if c.Request.ContentLength != 0 && !bindJSON(c, &req) {
		return
	}
	s.submitContainer(c, actions.ContainerParams{Op: actions.ContainerPullAll, Engine: req.Engine}, nil)
}

type imageRequest struct {
	Image  string            `json:"image"`
	Engine containers.Engine `json:"engine"`
}

func (s *Server) pullImage(c *gin.Context) {
	var req imageRequest
	if !bindJSON(c, &req) {
		return
	}
	s.submitContainer(c, actions.ContainerParams{Op: actions.ContainerPull, Image: req.Image, Engine: req.Engine}, map[string]any{"image": req.Image})
}

func (s *Server) removeImage(c *gin.Context) {
	var req imageRequest
	if !bindJSON(c, &req) {
		return
	}
	s.submitContainer(c, actions.ContainerParams{Op: actions.ContainerRemoveImage, Image: req.Image, Engine: req.Engine}, map[string]any{"image": req.Image})
}

type composeRequest struct {
	Project string            `json:"project"`
	Engine  containers.Engine `json:"engine"`
	Tool    string            `json:"tool"`
}

func (s *Server) composeUpdate(c *gin.Context) {
	var req composeRequest
	if !bindJSON(c, &req) {
		return
	}
	s.submitContainer(c, actions.ContainerParams{Op: actions.ContainerComposeUpdate, Project: req.Project, Engine: req.Engine, Tool: req.Tool},
		map[string]any{"project": req.Project})
}

type pruneRequest struct {
	Engine     containers.Engine `json:"engine"`
	Containers bool              `json:"containers"`
	Images     bool              `json:"images"`
	AllImages  bool              `json:"all_images"`
	BuildCache bool              `json:"build_cache"`
	DryRun     bool              `json:"dry_run"`
}

func (s *Server) pruneDocker(c *gin.Context) {
	var req pruneRequest
	if !bindJSON(c, &req) {
		return
	}
	spec := &actions.PruneSpec{Containers: req.Containers, Images: req.Images, AllImages: req.AllImages, BuildCache: req.BuildCache, DryRun: req.DryRun}
	s.submitContainer(c, actions.ContainerParams{Op: actions.ContainerPrune, Engine: req.Engine, Prune: spec},
		map[string]any{"containers": req.Containers, "images": req.Images, "all_images": req.AllImages, "build_cache": req.BuildCache, "dry_run": req.DryRun})
}

func (s *Server) containerOp(c *gin.Context, op string) {
	var req engineRequest
	if c.Request.ContentLength != 0 && !bindJSON(c, &req) {
		return
	}
	name := c.Param("name")
	s.submitContainer(c, actions.ContainerParams{Op: op, Container: name, Engine: req.Engine}, map[string]any{"container": name})
}

func (s *Server) startContainer(c *gin.Context)   { s.containerOp(c, actions.ContainerStart) }
func (s *Server) stopContainer(c *gin.Context)    { s.containerOp(c, actions.ContainerStop) }
func (s *Server) restartContainer(c *gin.Context) { s.containerOp(c, actions.ContainerRestart) }

type cveRelevanceRequest struct {
	Container string            `json:"container"`
	Engine    containers.Engine `json:"engine"`
	Relevant  *bool             `json:"relevant"`
}

func (s *Server) setCVERelevance(c *gin.Context) {
	var req cveRelevanceRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Relevant == nil {
		s.respondError(c, domain.Invalid("invalid_request", "relevant (true or false) is required"))
		return
	}
	svc := s.ctr(c)
	if svc == nil {
		return
	}
	err := svc.SetCVERelevance(c.Request.Context(), principal(c), c.Param("id"), req.Engine, req.Container, *req.Relevant)
	s.note(c, "container.cve_relevance", audit.Target("server", c.Param("id")), map[string]any{"container": req.Container, "engine": string(req.Engine), "relevant": *req.Relevant})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"container": req.Container, "relevant": *req.Relevant})
}

func fleetFilter(c *gin.Context) containersvc.FleetFilter {
	return containersvc.FleetFilter{State: c.Query("state"), Image: c.Query("image"), Update: c.Query("update")}
}

func (s *Server) dockerOverview(c *gin.Context) {
	svc := s.ctr(c)
	if svc == nil {
		return
	}
	o, err := svc.Overview(c.Request.Context(), principal(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, o)
}

func (s *Server) dockerContainers(c *gin.Context) {
	svc := s.ctr(c)
	if svc == nil {
		return
	}
	list, err := svc.Containers(c.Request.Context(), principal(c), fleetFilter(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"items": list, "total": len(list)})
}

func (s *Server) dockerCompose(c *gin.Context) {
	svc := s.ctr(c)
	if svc == nil {
		return
	}
	list, err := svc.Compose(c.Request.Context(), principal(c), fleetFilter(c))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"items": list, "total": len(list)})
}
