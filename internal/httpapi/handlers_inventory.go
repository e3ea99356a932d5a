package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/lcmproject/lcm/internal/actions"
	"github.com/lcmproject/lcm/internal/audit"
	"github.com/lcmproject/lcm/internal/domain"
	"github.com/lcmproject/lcm/internal/facts"
	"github.com/lcmproject/lcm/internal/pkgmgr"
	"github.com/lcmproject/lcm/internal/schedule"
	"github.com/lcmproject/lcm/internal/store"
)

// hardwareDTO is GET /servers/:id/hardware: the facts of the last refresh
// plus its package counts.
type hardwareDTO struct {
	Facts           facts.Facts `json:"facts"`
	PackageManager  string      `json:"package_manager"`
	Packages        int         `json:"packages"`
	Updates         int         `json:"updates"`
	SecurityUpdates int         `json:"security_updates"`
	CollectedAt     time.Time   `json:"collected_at"`
}

type packageVersionDTO struct {
	Version   string   `json:"version"`
	Servers   int      `json:"servers"`
	ServerIDs []string `json:"server_ids"`
}

type packageOverviewDTO struct {
	Name     string              `json:"name"`
	Versions []packageVersionDTO `json:"versions"`
}

type packageOverviewPageDTO struct {
	Items []packageOverviewDTO `json:"items"`
	Total int64                `json:"total"`
}

// queryInt reads an optional integer query parameter; ok is false after a
// 400 was sent.
func (s *Server) queryInt(c *gin.Context, name string) (int, bool) {
	v := c.Query(name)
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		s.respondError(c, domain.Invalid("invalid_"+name, name+" must be a non-negative integer"))
		return 0, false
	}
	return n, true
}

func (s *Server) getServerHardware(c *gin.Context) {
	h, err := s.deps.Services.Inventory.Hardware(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, hardwareDTO{Facts: h.Facts, PackageManager: h.PackageManager, Packages: h.Packages,
		Updates: h.Updates, SecurityUpdates: h.SecurityUpdates, CollectedAt: h.CollectedAt})
}

func (s *Server) listServerPackages(c *gin.Context) {
	list, err := s.deps.Services.Inventory.Packages(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	if list == nil {
		list = []pkgmgr.Package{}
	}
	c.JSON(http.StatusOK, list)
}

func (s *Server) listOutdatedPackages(c *gin.Context) {
	list, err := s.deps.Services.Inventory.Outdated(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	if list == nil {
		list = []pkgmgr.Upgradable{}
	}
	c.JSON(http.StatusOK, list)
}

func (s *Server) getStorageHistory(c *gin.Context) {
	days, ok := s.queryInt(c, "days")
	if !ok {
		return
	}
	h, err := s.deps.Services.Inventory.StorageHistory(c.Request.Context(), principal(c), c.Param("id"), c.Query("mount"), days)
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, h)
}

func (s *Server) getPackageOverview(c *gin.Context) {
	limit, ok := s.queryInt(c, "limit")
	if !ok {
		return
	}
	offset, ok := s.queryInt(c, "offset")
	if !ok {
		return
	}
	list, total, err := s.deps.Services.Inventory.Overview(c.Request.Context(), principal(c),
		store.OverviewFilter{Name: c.Query("name"), Prefix: c.Query("prefix"), Limit: limit, Offset: offset})
	if err != nil {
		s.respondError(c, err)
		return
	}
	out := packageOverviewPageDTO{Items: make([]packageOverviewDTO, len(list)), Total: total}
	for i, p := range list {
		d := packageOverviewDTO{Name: p.Name, Versions: make([]packageVersionDTO, len(p.Versions))}
		for j, v := range p.Versions {
			d.Versions[j] = packageVersionDTO{Version: v.Version, Servers: len(v.ServerIDs), ServerIDs: v.ServerIDs}
		}
		out.Items[i] = d
	}
	c.JSON(http.StatusOK, out)
}

// packageNamesRequest is the body of the package actions that take names.
type packageNamesRequest struct {
	Names []string `json:"names"`
}

// packageAction returns the handler of one package action; actions that
// take names read {names: [...]} (400 names_required when empty), the
// others take no body.
func (s *Server) packageAction(action actions.PkgAction) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req packageNamesRequest
		if action.NeedsNames() && !bindJSON(c, &req) {
			return
		}
		job, err := s.deps.Services.Fleet.PackageAction(c.Request.Context(), principal(c), c.Param("id"), action, req.Names)
		var extra map[string]any
		if action.NeedsNames() {
			extra = map[string]any{"packages": req.Names}
		}
		s.respondJobWith(c, job, err, extra)
	}
}

func (s *Server) refreshServer(c *gin.Context) {
	job, err := s.deps.Services.Fleet.Refresh(c.Request.Context(), principal(c), c.Param("id"))
	s.respondJob(c, job, err)
}

func (s *Server) rebootServer(c *gin.Context) {
	job, err := s.deps.Services.Fleet.Reboot(c.Request.Context(), principal(c), c.Param("id"))
	s.respondJob(c, job, err)
}

type storageVolumesRequest struct {
	Mounts []string `json:"mounts"`
}

func (s *Server) getStorageVolumes(c *gin.Context) {
	v, err := s.deps.Services.Inventory.Volumes(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

func (s *Server) setStorageVolumes(c *gin.Context) {
	var req storageVolumesRequest
	if !bindJSON(c, &req) {
		return
	}
	if req.Mounts == nil {
		s.respondError(c, domain.Invalid("invalid_mounts", "mounts is required (an empty list monitors / only)"))
		return
	}
	v, err := s.deps.Services.Inventory.SetVolumes(c.Request.Context(), principal(c), c.Param("id"), req.Mounts)
	s.note(c, "server.storage_volumes", audit.Target("server", c.Param("id")), map[string]any{"mounts": req.Mounts})
	if err != nil {
		s.respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// schedulesDTO is the answer of the schedules routes.
type schedulesDTO struct {
	Tasks []schedule.TaskView `json:"tasks"`
}

func (s *Server) schedules() (*schedule.Scheduler, error) {
	if sch := s.deps.Services.Schedules; sch != nil {
		return sch, nil
	}
	return nil, domain.Unavailable("schedules_unavailable", "the scheduler is not running in this process")
}

func (s *Server) getSchedules(c *gin.Context) {
	sch, err := s.schedules()
	if err == nil {
		var tasks []schedule.TaskView
		if tasks, err = sch.Tasks(c.Request.Context()); err == nil {
			c.JSON(http.StatusOK, schedulesDTO{Tasks: tasks})
			return
		}
	}
	s.respondError(c, err)
}

// setSchedules replaces the overrides: {"refresh_all": {"spec": "0 3 * * *",
// "enabled": true}, …}; a task left out runs on its defaults.
func (s *Server) setSchedules(c *gin.Context) {
	var req map[string]schedule.Override
	if !bindJSON(c, &req) {
		return
	}
	if req == nil {
		s.respondError(c, domain.Invalid("invalid_schedules", `the body must be an object of task overrides, e.g. {"refresh_all": {"spec": "0 3 * * *"}}; {} restores the defaults`))
		return
	}
	sch, err := s.schedules()
	if err == nil {
		var tasks []schedule.TaskView
		if tasks, err = sch.SetOverrides(c.Request.Context(), principal(c), req); err == nil {
			c.JSON(http.StatusOK, schedulesDTO{Tasks: tasks})
			return
		}
	}
	s.respondError(c, err)
}
